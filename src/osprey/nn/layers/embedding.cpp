#include "osprey/nn/layers/embedding.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/embedding_indices.h"
#include "osprey/nn/layers/options.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : SingleInputLayer("Embedding", base_options(options)),
      input_dim_(input_dim),
      output_dim_(output_dim),
      options_(std::move(options)) {
  OSPREY_CHECK(
      input_dim > 0 && output_dim > 0,
      "Embedding: input_dim and output_dim must be positive. Received: input_dim={}, output_dim={}",
      input_dim, output_dim);
}

void Embedding::build_single(const Shape& input_shape) {
  embeddings_ = add_weight("embeddings", {input_dim_, output_dim_}, options_.embeddings_initializer,
                           true, options_.embeddings_regularizer);
}

Shape Embedding::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  Shape s = input_shapes[0];
  s.push_back(output_dim_);
  return s;
}

Variable Embedding::reverse(const Variable& h) {
  OSPREY_CHECK(built() && h.ndim() >= 1 && h.size(-1) == output_dim_,
               "{}: reverse() expects a built table and h [..., {}]. Received: {}", name(),
               output_dim_, h.shape().to_string());
  const Variable w =
      embeddings_.dtype() == h.dtype() ? embeddings_ : autograd::cast(embeddings_, h.dtype());
  return autograd::linear(h, autograd::transpose(w, 0, 1));
}

Variable Embedding::call_single(const Variable& x, bool training) {
  // Indices arrive as the value of a Variable; they get no gradient.
  const Tensor ids = detail::embedding_indices(x.value(), input_dim_, name());
  return autograd::embedding(autocast(embeddings_), ids);
}

Tensor Embedding::compute_mask(const std::vector<Variable>& inputs, const Tensor& /*mask*/) const {
  return options_.mask_zero ? nonzero_ids_mask(inputs[0].value()) : Tensor();
}

Tensor nonzero_ids_mask(const Tensor& ids) {
  return ne(ids, full(Shape{}, 0.0, {ids.dtype(), ids.device()}));
}

nlohmann::json Embedding::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["input_dim"] = input_dim_;
  c["output_dim"] = output_dim_;
  c["embeddings_initializer"] = options_.embeddings_initializer.to_json();
  c["embeddings_regularizer"] = options_.embeddings_regularizer.to_json();
  c["mask_zero"] = options_.mask_zero;
  return c;
}

std::shared_ptr<Layer> Embedding::from_config(const nlohmann::json& c) {
  EmbeddingOptions o;
  read_base_options(c, o);
  if (c.contains("embeddings_initializer")) {
    o.embeddings_initializer = initializers::from_json(c["embeddings_initializer"]);
  }
  o.embeddings_regularizer =
      Regularizer::from_json(c.value("embeddings_regularizer", nlohmann::json()));
  o.mask_zero = c.value("mask_zero", false);
  return std::make_shared<Embedding>(c.at("input_dim").get<int64_t>(),
                                     c.at("output_dim").get<int64_t>(), o);
}

}  // namespace osprey::nn
