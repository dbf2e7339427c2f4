#include "osprey/nn/layers/rotary_embedding.h"

#include <cmath>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"
#include "osprey/tensor/factory.h"

namespace osprey::nn {

RotaryEmbedding::RotaryEmbedding(RotaryEmbeddingOptions options)
    : SingleInputLayer("RotaryEmbedding", base_options(options)), options_(std::move(options)) {
  OSPREY_CHECK(options_.max_wavelength > 0 && options_.scaling_factor > 0,
               "RotaryEmbedding: max_wavelength and scaling_factor must be positive. Received: "
               "max_wavelength={}, scaling_factor={}",
               options_.max_wavelength, options_.scaling_factor);
  OSPREY_CHECK(options_.sequence_axis >= 1,
               "RotaryEmbedding: sequence_axis must be 1 or later (0 is the batch). Received: {}",
               options_.sequence_axis);
}

void RotaryEmbedding::check_input_shape(const Shape& s) const {
  const int d = s.ndim() - 1;
  OSPREY_CHECK(s.ndim() >= 3 && options_.sequence_axis < d && s[d] % 2 == 0,
               "{}: expected [batch, T, ..., features] with the sequence on axis {} and an even "
               "number of features. Received: {}",
               name(), options_.sequence_axis, s.to_string());
}

Shape RotaryEmbedding::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  check_input_shape(input_shapes[0]);
  return input_shapes[0];
}

Variable RotaryEmbedding::rotate(const Variable& x, int64_t start_index) {
  const Shape& s = x.shape();
  check_input_shape(s);
  const int last = s.ndim() - 1;
  const int64_t t = s[options_.sequence_axis], d = s[last], half = d / 2;
  // cos and sin of p * w_i, [T, d] (each angle twice: for feature i and i + d/2), shaped to
  // broadcast against x: T on sequence_axis, d last, 1 elsewhere.
  std::vector<double> c(static_cast<size_t>(t * d)), sn(c.size());
  for (int64_t p = 0; p < t; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double w = 1.0 / (std::pow(options_.max_wavelength,
                                       2.0 * static_cast<double>(i) / static_cast<double>(d)) *
                              options_.scaling_factor);
      const double angle = static_cast<double>(p + start_index) * w;
      for (int64_t j : {i, i + half}) {
        c[static_cast<size_t>(p * d + j)] = std::cos(angle);
        sn[static_cast<size_t>(p * d + j)] = std::sin(angle);
      }
    }
  }
  Shape b(std::vector<int64_t>(static_cast<size_t>(s.ndim()), 1));
  b[options_.sequence_axis] = t;
  b[last] = d;
  const Variable cos(from_vector<double>(c, b).to(x.dtype()));
  const Variable sin(from_vector<double>(sn, b).to(x.dtype()));
  // rotate_half(x) = [-x2, x1] for the halves x1 = x[..., :d/2], x2 = x[..., d/2:].
  const Variable rotated = autograd::concat(
      {autograd::neg(autograd::narrow(x, last, half, half)), autograd::narrow(x, last, 0, half)},
      last);
  return autograd::add(autograd::mul(x, cos), autograd::mul(rotated, sin));
}

Variable RotaryEmbedding::call_single(const Variable& x, bool /*training*/) { return rotate(x); }

nlohmann::json RotaryEmbedding::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["max_wavelength"] = options_.max_wavelength;
  c["scaling_factor"] = options_.scaling_factor;
  c["sequence_axis"] = options_.sequence_axis;
  c["feature_axis"] = -1;
  return c;
}

std::shared_ptr<Layer> RotaryEmbedding::from_config(const nlohmann::json& c) {
  RotaryEmbeddingOptions o;
  read_base_options(c, o);
  o.max_wavelength = c.value("max_wavelength", 10000.0);
  o.scaling_factor = c.value("scaling_factor", 1.0);
  o.sequence_axis = c.value("sequence_axis", 1);
  OSPREY_CHECK(c.value("feature_axis", -1) == -1,
               "RotaryEmbedding: only the last axis holds the features (feature_axis=-1). "
               "Received: feature_axis={}",
               c.value("feature_axis", -1));
  return std::make_shared<RotaryEmbedding>(o);
}

}  // namespace osprey::nn
