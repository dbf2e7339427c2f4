// HyperCNN: a prebuilt hypermodel for small images, KerasTuner's HyperResNet / HyperXception
// idea sized for a CPU. The network, each part under hyperparameters:
//   [Reshape to add the channel axis]  [RandomFlip, RandomTranslation, RandomZoom: training only]
//   num_blocks x { Conv2D(filters_i, 3, same) [x2] [-> BatchNormalization] -> relu
//                  -> MaxPooling2D(2) -> Dropout(dropout) }
//   -> Flatten or GlobalAveragePooling2D -> Dense(dense_units, relu) -> Dropout(dense_dropout)
//   -> Dense(num_classes, softmax), compiled with sparse_categorical_crossentropy and accuracy.
// The defaults (the values of a build with no trial values) are a good Fashion-MNIST CNN for a
// short budget: horizontal flips, two blocks of one convolution (32 then 64 filters) with
// dropout 0.1, Dense 128 with dropout 0.2, adam at 1e-3: about 4.2 M multiply-adds per 28x28
// image; an epoch of 50k images plus 10k validated takes 15 s on two idle cores, and reaches
// 90.8% validation accuracy after 5 epochs, 92.5% after 11. Translation and zoom start at 0: 10%
// translations cost about 3 points after 5 epochs. batch_norm starts off: BatchNormalization
// makes the epoch about 3.8x slower today, and after a short budget its moving statistics still
// lag (poor validation scores). The costliest corner of the space (three blocks of two
// convolutions at the widest filters) is about 20x the default; fix convs_per_block or narrow the
// filters (`fixed`) when the budget is tight.
//   tune::Hyperband tuner(std::make_shared<tune::HyperCNN>(tune::HyperCNNOptions{
//                             .input_shape = {28, 28}, .num_classes = 10}),
//                         {.objective = "val_accuracy", .max_epochs = 9});
// `fixed` fixes or narrows hyperparameters as HyperMLP's does (hyper_mlp.h):
//   tune::HyperParameters fixed;
//   fixed.set("convs_per_block", int64_t{1});            // a value fixes
//   fixed.Int("filters_1", 32, 64, {.step = 32});         // a declaration narrows
#pragma once

#include <optional>
#include <string>

#include "osprey/tune/hypermodel.h"

namespace osprey::tune {

struct HyperCNNOptions {
  Shape input_shape{};  // one image: {height, width} (a channel axis is added) or {h, w, c}
  int num_classes = 0;  // at least 2
  // false: no augmentation layers and no augmentation hyperparameters in the space.
  bool augment = true;
  std::string fill_mode = "reflect";  // of RandomTranslation and RandomZoom
  std::optional<HyperParameters> fixed{};
};

class HyperCNN : public HyperModel {
 public:
  // ValueError for num_classes < 2, an input_shape that is not [h, w] or [h, w, c] with
  // positive sizes, one smaller than the poolings need, or a `fixed` entry the model cannot use.
  explicit HyperCNN(HyperCNNOptions options);
  Model build(HyperParameters& hp) override;
  const HyperCNNOptions& options() const { return options_; }

 private:
  HyperCNNOptions options_;
};

}  // namespace osprey::tune
