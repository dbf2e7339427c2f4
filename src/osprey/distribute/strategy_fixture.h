// Test fixture shared by the data-parallel tests (in-process and multi-worker): a small MLP with
// fixed initial weights and one epoch of 160 rows, trained as 20 steps of global batch 8, so any
// two strategies can be compared on the same global batches.
#pragma once

#include <string>
#include <vector>

#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace osprey::distribute::testing {

inline Model make_mlp() {
  nn::clear_session();
  return Sequential({layers::Dense(16, "relu"), layers::Dense(8, "tanh"), layers::Dense(3)},
                    {.input_shape = {5}});
}

// Fixed once: a new model draws new initial values.
inline const std::vector<Tensor>& initial_weights() {
  static const std::vector<Tensor> w = make_mlp().get_weights();
  return w;
}

inline const Tensor& data_x() {
  static const Tensor x = random_normal({160, 5}, {.seed = 11});
  return x;
}
inline const Tensor& data_y() {
  static const Tensor y = random_normal({160, 3}, {.seed = 12});
  return y;
}

// 20 steps of global batch 8 (one epoch of 160 rows, in order) from the same initial weights.
inline Model train_20_steps(const std::shared_ptr<const train::Strategy>& strategy,
                            const std::string& optimizer, const Tensor& x = data_x(),
                            std::vector<double>* losses = nullptr,
                            std::vector<train::CallbackPtr> callbacks = {}) {
  Model m = make_mlp();
  m.set_weights(initial_weights());
  m.compile(optimizer, "mse", {}, {.strategy = strategy});
  auto h =
      m.fit(x, data_y(),
            {.batch_size = 8, .epochs = 1, .verbose = 0, .callbacks = callbacks, .shuffle = false});
  if (losses) *losses = h.history.at("loss");
  return m;
}

// `steps` steps of global batch 8 on the first 8 * steps rows, in order, from the same initial
// weights: the model- and pipeline-parallel tests' 10-step comparisons.
inline Model train_steps(const std::shared_ptr<const train::Strategy>& strategy,
                         const std::string& optimizer, int steps = 10) {
  Model m = make_mlp();
  m.set_weights(initial_weights());
  m.compile(optimizer, "mse", {}, {.strategy = strategy});
  m.fit(data_x().narrow(0, 0, 8 * steps), data_y().narrow(0, 0, 8 * steps),
        {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  return m;
}

// A small CNN whose convolutions can be split on filters and input channels: sequential/conv2d
// (2 -> 4 channels, relu), conv2d_1 (4 -> 4, relu), flatten, dense (-> 3), on 6 x 6 x 2 images.
inline Model make_cnn() {
  nn::clear_session();
  return Sequential(
      {layers::Conv2D(4, {3, 3}, {.activation = "relu"}),
       layers::Conv2D(4, {3, 3}, {.activation = "relu"}), layers::Flatten(), layers::Dense(3)},
      {.input_shape = {6, 6, 2}});
}

}  // namespace osprey::distribute::testing
