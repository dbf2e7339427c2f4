#include "osprey/quant/float8_conv2d.h"

#include "osprey/autograd/ops.h"

namespace osprey::quant {

Float8Conv2D::Float8Conv2D(int64_t filters, std::array<int64_t, 2> kernel_size,
                           nn::Conv2DOptions options, precision::DelayedScaling scaling)
    : Float8Layer(scaling, "Float8Conv2D", filters, kernel_size, std::move(options)) {}

std::shared_ptr<Float8Conv2D> Float8Conv2D::from_conv2d(const nn::Conv2D& conv,
                                                        const precision::DelayedScaling& scaling) {
  nn::Conv2DOptions o = conv.options();
  o.name = conv.name();
  o.trainable = conv.trainable();
  auto f = std::make_shared<Float8Conv2D>(conv.filters(), conv.kernel_size(), o, scaling);
  f->build_from(conv);
  return f;
}

Variable Float8Conv2D::call_single(const Variable& x, bool training) {
  check_input_shape(x.shape());
  const Conv2dOptions conv = conv_options();
  Variable y = float8_product(
      x, kernel(), scalings(), training,
      [&conv](const Variable& a, const Variable& b) { return autograd::conv2d(a, b, conv); });
  if (bias().defined()) {
    const bool last = options().data_format == "channels_last";
    y = autograd::add(y, last ? bias() : autograd::reshape(bias(), {filters(), 1, 1}));
  }
  return options().activation(y);
}

std::shared_ptr<nn::Layer> Float8Conv2D::from_config(const nlohmann::json& c) {
  const auto conv = std::static_pointer_cast<nn::Conv2D>(nn::Conv2D::from_config(c));
  return std::make_shared<Float8Conv2D>(conv->filters(), conv->kernel_size(), conv->options(),
                                        read_float8_config(c, "Float8Conv2D"));
}

}  // namespace osprey::quant
