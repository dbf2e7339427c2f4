#include "osprey/tune/hyper_cnn.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tune/hyper_mlp.h"

namespace osprey::tune {

namespace {

constexpr int kMaxBlocks = 3;

struct CnnValues {
  bool augment = false;
  std::string flip = "none";
  double translation = 0, zoom = 0;
  std::vector<int64_t> filters;  // one per block
  int64_t convs_per_block = 1;
  bool batch_norm = false;
  double dropout = 0;
  std::string head;
  int64_t dense_units = 0;
  double dense_dropout = 0;
  detail::OptimizerValues optimizer;
};

HyperParameter float_hp(const std::string& name, double max, double default_value) {
  return HyperParameter::Float(name, 0.0, max, 0.05, Sampling::linear, default_value);
}

// Every hyperparameter, in the order a search space summary lists them (the header draws the
// network they shape):
//   augment (Boolean, true) with, when on, flip (none / horizontal, horizontal), translation and
//   zoom (0-0.15 step 0.05, 0): left out when options.augment is false;
//   num_blocks (2-3, 2); filters_0 (16-64 step 16, 32), filters_1 (32-128 step 32, 64),
//   filters_2 (64-128 step 32, 128; with 3 blocks); convs_per_block (1-2, 1); batch_norm
//   (Boolean, false); dropout (0-0.5 step 0.05, 0.1); head (flatten / global_average, flatten);
//   dense_units (64-256 step 64, 128); dense_dropout (0-0.5 step 0.05, 0.2); optimizer and
//   learning_rate (hyper_mlp.h).
CnnValues declare_cnn(HyperParameters& hp, const detail::PrebuiltSpace& space, bool augment) {
  CnnValues v;
  if (augment) {
    v.augment = space.declare(hp, HyperParameter::Boolean("augment", true)).as_bool();
    if (auto scope = space.scope(hp, "augment", {true})) {
      const auto flip = HyperParameter::Choice("flip", {"none", "horizontal"}, {}, "horizontal");
      const std::string f = space.declare(hp, flip).as_string();
      const double t = space.declare(hp, float_hp("translation", 0.15, 0.0), 0.0, 0.5).as_double();
      const double z = space.declare(hp, float_hp("zoom", 0.15, 0.0), 0.0, 0.5).as_double();
      if (v.augment) {
        v.flip = f;
        v.translation = t;
        v.zoom = z;
      }
    }
  }
  const int64_t blocks =
      space.declare(hp, detail::int_hp("num_blocks", 2, kMaxBlocks, {}, 2), 2, kMaxBlocks).as_int();
  const std::array<HyperParameter, kMaxBlocks> filters = {
      detail::int_hp("filters_0", 16, 64, 16, 32), detail::int_hp("filters_1", 32, 128, 32, 64),
      detail::int_hp("filters_2", 64, 128, 32, 128)};
  for (int i = 0; i < kMaxBlocks; ++i) {
    // Blocks 0 and 1 are always there; block 2 only with three.
    auto scope = i < 2 ? std::nullopt : space.scope(hp, "num_blocks", {int64_t{i + 1}});
    if (i >= 2 && !scope) continue;
    const int64_t f = space.declare(hp, filters[static_cast<size_t>(i)], 1, 1024).as_int();
    if (i < blocks) v.filters.push_back(f);
  }
  v.convs_per_block = space.declare(hp, detail::int_hp("convs_per_block", 1, 2, {}, 1)).as_int();
  v.batch_norm = space.declare(hp, HyperParameter::Boolean("batch_norm", false)).as_bool();
  v.dropout = space.declare(hp, float_hp("dropout", 0.5, 0.1), 0.0, 0.95).as_double();
  v.head =
      space
          .declare(hp, HyperParameter::Choice("head", {"flatten", "global_average"}, {}, "flatten"))
          .as_string();
  v.dense_units =
      space.declare(hp, detail::int_hp("dense_units", 64, 256, 64, 128), 1, 1 << 16).as_int();
  v.dense_dropout = space.declare(hp, float_hp("dense_dropout", 0.5, 0.2), 0.0, 0.95).as_double();
  v.optimizer = detail::declare_optimizer(hp, space);
  return v;
}

// The largest value a numeric hyperparameter can take.
int64_t largest(const HyperParameter& h) {
  if (h.type == HpType::Int) return static_cast<int64_t>(h.max_value);
  int64_t m = 0;
  for (const Value& v : h.values) m = std::max(m, v.as_int());
  return m;
}

}  // namespace

HyperCNN::HyperCNN(HyperCNNOptions options) : options_(std::move(options)) {
  OSPREY_CHECK(options_.num_classes >= 2,
               "HyperCNN: num_classes must be at least 2. Received: num_classes={}",
               options_.num_classes);
  const Shape& s = options_.input_shape;
  OSPREY_CHECK(s.ndim() == 2 || s.ndim() == 3,
               "HyperCNN: input_shape must be [height, width] or [height, width, channels]. "
               "Received: input_shape={}",
               s.to_string());
  OSPREY_CHECK(std::all_of(s.begin(), s.end(), [](int64_t d) { return d > 0; }),
               "HyperCNN: input_shape dimensions must be positive. Received: input_shape={}",
               s.to_string());
  const detail::PrebuiltSpace space("HyperCNN", options_.fixed ? &*options_.fixed : nullptr);
  HyperParameters all;
  declare_cnn(all, detail::PrebuiltSpace("HyperCNN", nullptr), options_.augment);
  space.check_names(all);
  HyperParameters probe;
  declare_cnn(probe, space, options_.augment);  // the kind and range of every override
  const int64_t blocks = largest(*probe.find("num_blocks"));
  const int64_t need = int64_t{1} << blocks;  // each block halves the height and the width
  OSPREY_CHECK(s[0] >= need && s[1] >= need,
               "HyperCNN: input_shape is too small for {} blocks of 2x2 pooling (at least "
               "{}x{}). Received: input_shape={}",
               blocks, need, need, s.to_string());
  if (options_.augment) {  // the layers' own check of fill_mode, now rather than in every trial
    (void)layers::RandomTranslation(0.1, 0.1, {.fill_mode = options_.fill_mode});
  }
}

Model HyperCNN::build(HyperParameters& hp) {
  const CnnValues v = declare_cnn(
      hp, detail::PrebuiltSpace("HyperCNN", options_.fixed ? &*options_.fixed : nullptr),
      options_.augment);
  const Shape& s = options_.input_shape;
  std::vector<std::shared_ptr<nn::Layer>> stack;
  if (s.ndim() == 2) stack.push_back(layers::Reshape({s[0], s[1], 1}));
  // Training-only: inference sees the images as they are.
  if (v.flip != "none") stack.push_back(layers::RandomFlip(v.flip));
  if (v.translation > 0) {
    stack.push_back(
        layers::RandomTranslation(v.translation, v.translation, {.fill_mode = options_.fill_mode}));
  }
  if (v.zoom > 0) stack.push_back(layers::RandomZoom(v.zoom, {.fill_mode = options_.fill_mode}));
  for (const int64_t filters : v.filters) {
    for (int64_t c = 0; c < v.convs_per_block; ++c) {
      // With batch normalization the convolution needs no bias (the normalization's beta is one)
      // and the relu comes after the normalization.
      stack.push_back(
          layers::Conv2D(filters, 3,
                         {.padding = "same",
                          .activation = nn::ActivationFn(v.batch_norm ? "linear" : "relu"),
                          .use_bias = !v.batch_norm}));
      if (v.batch_norm) {
        stack.push_back(layers::BatchNormalization());
        stack.push_back(layers::Activation("relu"));
      }
    }
    stack.push_back(layers::MaxPooling2D(2));
    if (v.dropout > 0) stack.push_back(layers::Dropout(v.dropout));
  }
  if (v.head == "global_average") {
    stack.push_back(layers::GlobalAveragePooling2D());
  } else {
    stack.push_back(layers::Flatten());
  }
  stack.push_back(layers::Dense(v.dense_units, "relu"));
  if (v.dense_dropout > 0) stack.push_back(layers::Dropout(v.dense_dropout));
  // The output stays float32 under a mixed precision policy, as Keras advises.
  stack.push_back(layers::Dense(options_.num_classes, "softmax", {.dtype = "float32"}));
  Model model = Sequential(stack, {.input_shape = s});
  detail::compile_classifier(model, v.optimizer);
  return model;
}

}  // namespace osprey::tune
