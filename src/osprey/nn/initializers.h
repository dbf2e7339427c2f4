// Initializers: how a layer fills a new weight, by Keras name ("glorot_uniform", "he_normal",
// "zeros", ...). Fans follow Keras: a Dense kernel [in, out] has fan_in = in, fan_out = out; a
// Conv2D kernel [kh, kw, in, out] multiplies both by the receptive field kh * kw. Draws use the
// counter-based generator, so a seed gives the same weights on any thread count.
//   Initializer init = initializers::get("he_normal");
//   Tensor w = init(Shape{784, 512}, DType::float32, /*seed=*/7);
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "osprey/tensor/tensor.h"

namespace osprey::nn {

class Initializer {
 public:
  using Fn = std::function<Tensor(const Shape& shape, DType dtype, uint64_t seed)>;
  Initializer() = default;
  Initializer(std::string name, nlohmann::json config, Fn fn)
      : name_(std::move(name)), config_(std::move(config)), fn_(std::move(fn)) {}
  // An initializer by name with Keras's defaults; ValueError listing the names otherwise.
  Initializer(
      const char* name);  // NOLINT: implicit, so options read {.kernel_initializer = "zeros"}
  Initializer(const std::string& name);  // NOLINT

  Tensor operator()(const Shape& shape, DType dtype, uint64_t seed) const;
  const std::string& name() const { return name_; }
  // {"class_name": "GlorotUniform", "config": {...}} as Keras writes it.
  nlohmann::json to_json() const;
  bool defined() const { return static_cast<bool>(fn_); }

 private:
  std::string name_;
  nlohmann::json config_;
  Fn fn_;
};

namespace initializers {
Initializer get(const std::string& name);
Initializer from_json(const nlohmann::json& j);
Initializer Zeros();
Initializer Ones();
Initializer Constant(double value);
Initializer RandomNormal(double mean = 0.0, double stddev = 0.05);
Initializer RandomUniform(double minval = -0.05, double maxval = 0.05);
Initializer GlorotUniform();
Initializer GlorotNormal();
Initializer HeNormal();
Initializer HeUniform();
Initializer LecunNormal();
// A (semi-)orthogonal matrix times gain, as Keras's Orthogonal: the weight flattened to
// [prod(shape[:-1]), shape[-1]] has orthonormal columns (or rows, when it is wider than tall);
// the recurrent kernels' default.
Initializer Orthogonal(double gain = 1.0);
// Fans of a weight shape, as Keras computes them.
std::pair<double, double> compute_fans(const Shape& shape);
}  // namespace initializers

}  // namespace osprey::nn
