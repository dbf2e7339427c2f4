#include "osprey/quant/quantized_multi_head_attention.h"

#include <array>

#include "osprey/core/error.h"
#include "osprey/quant/int8_config.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::quant {

namespace {

nn::MultiHeadAttentionOptions float32_options(nn::MultiHeadAttentionOptions o) {
  o.dtype = "float32";
  return o;
}

}  // namespace

QuantizedMultiHeadAttention::QuantizedMultiHeadAttention(int64_t num_heads,
                                                         int64_t num_key_value_heads,
                                                         int64_t key_dim,
                                                         nn::MultiHeadAttentionOptions options)
    : MultiHeadAttention("QuantizedMultiHeadAttention", num_heads, num_key_value_heads, key_dim,
                         float32_options(std::move(options))) {
  OSPREY_CHECK(num_key_value_heads > 0 && num_heads % num_key_value_heads == 0,
               "QuantizedMultiHeadAttention: num_heads ({}) must be a positive multiple of "
               "num_key_value_heads ({})",
               num_heads, num_key_value_heads);
}

std::shared_ptr<QuantizedMultiHeadAttention> QuantizedMultiHeadAttention::from_attention(
    const nn::MultiHeadAttention& attention) {
  auto q = std::make_shared<QuantizedMultiHeadAttention>(
      attention.num_heads(), attention.num_key_value_heads(), attention.key_dim(),
      options_of_built(attention));
  q->build(attention.build_input_shapes());
  // The float weights by name ("query/kernel", ...), as the attention made them.
  const auto weight = [&](const std::string& name) {
    for (const nn::Weight& w : attention.own_weights()) {
      if (w.name == name) return w.variable.value();
    }
    return Tensor();
  };
  for (int i = 0; i < kNumProjections; ++i) {
    const auto p = static_cast<Projection>(i);
    const std::string prefix = projection_name(p);
    Int8Projection& to = q->projections_[static_cast<int>(p)];
    const Tensor kernel = weight(prefix + "/kernel");
    OSPREY_ASSERT(kernel.defined(), "quantize: {} has no {}/kernel", attention.name(), prefix);
    const QuantizedRows w =
        quantize_columns_int8(kernel.to(DType::float32).reshape(matrix_shape(p, kernel.shape())));
    Tensor k = to.kernel.value(), s = to.kernel_scale.value();
    k.copy_(w.values.view(k.shape()));
    s.copy_(w.scales.view(s.shape()));
    if (to.bias.defined()) {
      Tensor b = to.bias.value();
      b.copy_(weight(prefix + "/bias"));
    }
  }
  return q;
}

void QuantizedMultiHeadAttention::build_impl(const std::vector<Shape>& shapes) {
  const std::array<Shape, kNumProjections> kernels = kernel_shapes(shapes);
  for (int i = 0; i < kNumProjections; ++i) {
    const auto p = static_cast<Projection>(i);
    // One scale per output column: the kernel's trailing axes, the float bias's shape.
    const Shape scale = bias_shape(p, kernels[i]);
    const std::string prefix = projection_name(p);
    Int8Projection& w = projections_[i];
    w.kernel = add_weight(prefix + "/kernel", zeros(kernels[i], {DType::int8}), false);
    w.kernel_scale = add_weight(prefix + "/kernel_scale", ones(scale, {DType::float32}), false);
    if (options().use_bias)
      w.bias = add_weight(prefix + "/bias", zeros(scale, {DType::float32}), false);
  }
}

Variable QuantizedMultiHeadAttention::linear(const Variable& x, Projection p, bool /*training*/) {
  const Int8Projection& w = projections_[static_cast<int>(p)];
  const Shape m = matrix_shape(p, w.kernel.shape());
  const QuantizedRows kernel{w.kernel.value().view(m), w.kernel_scale.value().view({m[1]})};
  const Tensor b = w.bias.defined() ? w.bias.value().view({m[1]}) : Tensor();
  return Variable(linear_int8(x.value(), kernel, b.defined() ? &b : nullptr));
}

nlohmann::json QuantizedMultiHeadAttention::get_config() const {
  nlohmann::json c = MultiHeadAttention::get_config();
  c["num_key_value_heads"] = num_key_value_heads();
  c["quantization_mode"] = "int8";
  return c;
}

std::shared_ptr<nn::Layer> QuantizedMultiHeadAttention::from_config(const nlohmann::json& c) {
  detail::check_int8_mode(c, "QuantizedMultiHeadAttention");
  const auto heads = c.at("num_heads").get<int64_t>();
  return std::make_shared<QuantizedMultiHeadAttention>(heads, c.value("num_key_value_heads", heads),
                                                       c.at("key_dim").get<int64_t>(),
                                                       read_options(c));
}

}  // namespace osprey::quant
