#include "osprey/quant/quantized_embedding.h"

#include "osprey/core/error.h"
#include "osprey/nn/layers/embedding_indices.h"
#include "osprey/quant/int8_config.h"
#include "osprey/tensor/backend.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::quant {

QuantizedEmbedding::QuantizedEmbedding(int64_t input_dim, int64_t output_dim,
                                       const nn::LayerOptions& options, bool mask_zero)
    : SingleInputLayer("QuantizedEmbedding", options),
      input_dim_(input_dim),
      output_dim_(output_dim),
      mask_zero_(mask_zero) {
  OSPREY_CHECK(
      input_dim > 0 && output_dim > 0,
      "QuantizedEmbedding: input_dim and output_dim must be positive. Received: input_dim={}, "
      "output_dim={}",
      input_dim, output_dim);
}

std::shared_ptr<QuantizedEmbedding> QuantizedEmbedding::from_embedding(const nn::Embedding& emb) {
  OSPREY_CHECK(emb.built(),
               "quantize: layer '{}' is not built yet; call the model on data (or build it) first",
               emb.name());
  auto q = std::make_shared<QuantizedEmbedding>(
      emb.input_dim(), emb.output_dim(), nn::LayerOptions{emb.name(), "float32", emb.trainable()},
      emb.mask_zero());
  q->build(emb.build_input_shapes());
  const QuantizedRows t = quantize_rows_int8(emb.embeddings().value());
  Tensor v = q->embeddings_.value(), s = q->embeddings_scale_.value();
  v.copy_(t.values);
  s.copy_(t.scales);
  return q;
}

void QuantizedEmbedding::build_single(const Shape&) {
  embeddings_ = add_weight("embeddings", zeros({input_dim_, output_dim_}, {DType::int8}), false);
  embeddings_scale_ = add_weight("embeddings_scale", ones({input_dim_}, {DType::float32}), false);
}

Shape QuantizedEmbedding::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  Shape s = input_shapes[0];
  s.push_back(output_dim_);
  return s;
}

Variable QuantizedEmbedding::call_single(const Variable& x, bool) {
  const Tensor ids = nn::detail::embedding_indices(x.value(), input_dim_, name());
  const int64_t n = ids.numel();
  const Tensor table = embeddings_.value();
  Tensor rows = Tensor::empty({n, output_dim_}, {DType::int8, table.device()});
  Tensor scales = Tensor::empty({n, 1}, {DType::float32, table.device()});
  const Backend& backend = backend_for(table.device());
  if (n > 0) {
    backend.gather_rows(table, ids, rows);
    backend.gather_rows(embeddings_scale_.value().view({input_dim_, 1}), ids, scales);
  }
  Shape out = ids.shape();
  out.push_back(output_dim_);
  return Variable(div(rows.to(DType::float32), scales).view(out));
}

Variable QuantizedEmbedding::reverse(const Variable& h) {
  OSPREY_CHECK(built() && h.ndim() >= 1 && h.size(-1) == output_dim_,
               "{}: reverse() expects a built table and h [..., {}]. Received: {}", name(),
               output_dim_, h.shape().to_string());
  if (!transposed_.defined() || transposed_version_ != embeddings_.version()) {
    transposed_ = embeddings_.value().transpose(0, 1).contiguous();
    transposed_version_ = embeddings_.version();
  }
  return Variable(linear_int8(h.value(), {transposed_, embeddings_scale_.value()}));
}

nlohmann::json QuantizedEmbedding::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["input_dim"] = input_dim_;
  c["output_dim"] = output_dim_;
  c["mask_zero"] = mask_zero_;
  c["quantization_mode"] = "int8";
  return c;
}

Tensor QuantizedEmbedding::compute_mask(const std::vector<Variable>& inputs,
                                        const Tensor& /*mask*/) const {
  return mask_zero_ ? nn::nonzero_ids_mask(inputs[0].value()) : Tensor();
}

std::shared_ptr<nn::Layer> QuantizedEmbedding::from_config(const nlohmann::json& c) {
  detail::check_int8_mode(c, "QuantizedEmbedding");
  return std::make_shared<QuantizedEmbedding>(
      c.at("input_dim").get<int64_t>(), c.at("output_dim").get<int64_t>(),
      nn::LayerOptions{c.value("name", std::string()), "float32", c.value("trainable", true)},
      c.value("mask_zero", false));
}

}  // namespace osprey::quant
