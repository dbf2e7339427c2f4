#include "osprey/quant/float8_dense.h"

#include "osprey/autograd/ops.h"

namespace osprey::quant {

Float8Dense::Float8Dense(int64_t units, nn::ActivationFn activation, nn::DenseOptions options,
                         precision::DelayedScaling scaling)
    : Float8Layer(scaling, "Float8Dense", units, std::move(activation), std::move(options)) {}

std::shared_ptr<Float8Dense> Float8Dense::from_dense(const nn::Dense& dense,
                                                     const precision::DelayedScaling& scaling) {
  nn::DenseOptions o = dense.options();
  o.name = dense.name();
  o.trainable = dense.trainable();
  auto f = std::make_shared<Float8Dense>(dense.units(), dense.activation(), o, scaling);
  f->build_from(dense);
  return f;
}

Variable Float8Dense::call_single(const Variable& x, bool training) {
  const int64_t in = kernel().shape()[0];
  OSPREY_CHECK(x.ndim() >= 1 && x.size(-1) == in,
               "{}: expected inputs with {} features on the last axis. Received: {}", name(), in,
               x.shape().to_string());
  Variable y = float8_linear(x, kernel(), bias(), activation().fused(), scalings(), training);
  return activation().fused() == Activation::none ? activation()(y) : y;
}

std::shared_ptr<nn::Layer> Float8Dense::from_config(const nlohmann::json& c) {
  const auto dense = std::static_pointer_cast<nn::Dense>(nn::Dense::from_config(c));
  return std::make_shared<Float8Dense>(dense->units(), dense->activation(), dense->options(),
                                       read_float8_config(c, "Float8Dense"));
}

}  // namespace osprey::quant
