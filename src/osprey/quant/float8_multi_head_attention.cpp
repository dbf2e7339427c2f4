#include "osprey/quant/float8_multi_head_attention.h"

#include "osprey/autograd/ops.h"
#include "osprey/core/error.h"

namespace osprey::quant {

Float8MultiHeadAttention::Float8MultiHeadAttention(int64_t num_heads, int64_t num_key_value_heads,
                                                   int64_t key_dim,
                                                   nn::MultiHeadAttentionOptions options,
                                                   precision::DelayedScaling scaling)
    : MultiHeadAttention("Float8MultiHeadAttention", num_heads, num_key_value_heads, key_dim,
                         std::move(options)),
      scaling_(scaling) {
  OSPREY_CHECK(num_key_value_heads > 0 && num_heads % num_key_value_heads == 0,
               "Float8MultiHeadAttention: num_heads ({}) must be a positive multiple of "
               "num_key_value_heads ({})",
               num_heads, num_key_value_heads);
  precision::check_delayed_scaling(scaling_, "Float8MultiHeadAttention");
}

std::shared_ptr<Float8MultiHeadAttention> Float8MultiHeadAttention::from_attention(
    const nn::MultiHeadAttention& attention, const precision::DelayedScaling& scaling) {
  auto f = std::make_shared<Float8MultiHeadAttention>(
      attention.num_heads(), attention.num_key_value_heads(), attention.key_dim(),
      options_of_built(attention), scaling);
  f->build(attention.build_input_shapes());
  // The attention's weights come first in both, in one order: copy them one for one.
  const std::vector<nn::Weight>& from = attention.own_weights();
  const std::vector<nn::Weight>& to = f->own_weights();
  OSPREY_ASSERT(to.size() >= from.size(), "quantize: {} has more weights than its float8 form",
                attention.name());
  for (size_t i = 0; i < from.size(); ++i) {
    OSPREY_ASSERT(from[i].name == to[i].name, "quantize: weight {} is {} in the float8 form",
                  from[i].name, to[i].name);
    Tensor t = to[i].variable.value();
    t.copy_(from[i].variable.value());
  }
  return f;
}

void Float8MultiHeadAttention::build_impl(const std::vector<Shape>& shapes) {
  MultiHeadAttention::build_impl(shapes);
  for (int i = 0; i < kNumProjections; ++i) {
    const std::string prefix = std::string(projection_name(static_cast<Projection>(i))) + "/";
    scalings_[i] = add_float8_scalings(
        [&](const std::string& n, Tensor v) { return add_weight(prefix + n, std::move(v), false); },
        scaling_);
  }
}

Variable Float8MultiHeadAttention::linear(const Variable& x, Projection p, bool training) {
  const Variable& k = kernel(p);
  const Variable& b = bias(p);
  const Shape m = matrix_shape(p, k.shape());
  return float8_linear(x, autograd::reshape(k, m), b.defined() ? autograd::reshape(b, {m[1]}) : b,
                       Activation::none, scalings_[static_cast<int>(p)], training);
}

nlohmann::json Float8MultiHeadAttention::get_config() const {
  nlohmann::json c = MultiHeadAttention::get_config();
  c["num_key_value_heads"] = num_key_value_heads();
  write_float8_config(c, scaling_);
  return c;
}

std::shared_ptr<nn::Layer> Float8MultiHeadAttention::from_config(const nlohmann::json& c) {
  const auto heads = c.at("num_heads").get<int64_t>();
  return std::make_shared<Float8MultiHeadAttention>(
      heads, c.value("num_key_value_heads", heads), c.at("key_dim").get<int64_t>(), read_options(c),
      read_float8_config(c, "Float8MultiHeadAttention"));
}

}  // namespace osprey::quant
