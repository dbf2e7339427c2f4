// Limits on what building a layer may allocate, for models described by files osprey did not
// write. load_model opens a scope holding the weights file's header, so every weight a layer
// creates is checked against the file (present, same shape, same dtype) before it is allocated:
// a config.json asking for units = 5000000 beside a file of 128 units fails at once, naming the
// weight and both shapes, instead of building and initializing a 20 GB model first. Fuzzers and
// servers that build models from outside bytes set element budgets instead.
//   nn::BuildLimits limits;
//   limits.source = "fmnist_best/model.safetensors";
//   limits.expected = {{"sequential/dense/kernel", {DType::f32, {784, 128}}}, ...};
//   nn::BuildLimitsScope scope(std::move(limits));   // this thread's builds obey it
//   auto model = nn::layer_from_config(...);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "osprey/core/dtype.h"
#include "osprey/core/shape.h"

namespace osprey::nn {

struct ExpectedWeight {
  DType dtype;
  Shape shape;
};

struct BuildLimits {
  std::string source;  // what the expectations come from, named in errors
  // When set, every weight must be listed here under its path (or a path ending in "/" + its
  // path: a layer built before it joins its model has no prefix yet), with this dtype and shape;
  // together the weights may not hold more elements than these.
  std::optional<std::map<std::string, ExpectedWeight>> expected;
  // All weights together, in elements; -1 = no bound.
  int64_t max_weight_elements = -1;
  // Any one tensor made to infer shapes (a layer run on zeros of its input shape); -1 = no bound.
  int64_t max_activation_elements = -1;
};

// Makes `limits` this thread's limits while it lives (the previous ones come back after).
class BuildLimitsScope {
 public:
  explicit BuildLimitsScope(BuildLimits limits);
  ~BuildLimitsScope();
  BuildLimitsScope(const BuildLimitsScope&) = delete;
  BuildLimitsScope& operator=(const BuildLimitsScope&) = delete;

 private:
  friend void check_new_weight(const std::string&, const Shape&, DType);
  friend void check_shape_inference(const std::string&, const Shape&);
  BuildLimits limits_;
  int64_t expected_elements_ = 0;       // all the expected weights together
  int64_t expected_elements_used_ = 0;  // by the weights made so far
  int64_t weight_elements_ = 0;
  BuildLimitsScope* outer_;
};

// Called before a weight at `path` is allocated: IoError naming the source, the weight and both
// shapes or dtypes when it does not match the expectations, ValueError when it passes the budget.
// No-op without a scope.
void check_new_weight(const std::string& path, const Shape& shape, DType dtype);
// Called before `layer` runs on zeros of `shape` to infer its output shape; ValueError past the
// activation budget. No-op without a scope.
void check_shape_inference(const std::string& layer, const Shape& shape);

}  // namespace osprey::nn
