#include "osprey/nn/layers/random_zoom.h"

#include "osprey/nn/layers/image_transform.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

RandomZoom::RandomZoom(double height_factor, RandomZoomOptions options)
    : RandomZoom(detail::symmetric_factor(height_factor), std::move(options)) {}

RandomZoom::RandomZoom(std::pair<double, double> height_factor, RandomZoomOptions options)
    : SingleInputLayer("RandomZoom", base_options(options)),
      height_factor_(height_factor),
      options_(std::move(options)) {
  detail::check_factor(height_factor_, "height_factor", "RandomZoom");
  if (options_.width_factor)
    detail::check_factor(*options_.width_factor, "width_factor", "RandomZoom");
  detail::parse_fill_mode(options_.fill_mode, "RandomZoom");
  detail::parse_interpolation(options_.interpolation, "RandomZoom");
}

Shape RandomZoom::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  detail::image_batch_shape(input_shapes[0], "RandomZoom");
  return input_shapes[0];
}

Variable RandomZoom::call_single(const Variable& x, bool training) {
  const Shape s = detail::image_batch_shape(x.value(), "RandomZoom");
  if (!training) return x;
  detail::check_no_input_gradient(x, "RandomZoom");
  const Philox rng(detail::call_seed(options_.seed, calls_));
  const auto [h_lower, h_upper] = height_factor_;
  const auto [w_lower, w_upper] = options_.width_factor.value_or(height_factor_);
  const double y_centre = (static_cast<double>(s[1]) - 1.0) / 2.0;
  const double x_centre = (static_cast<double>(s[2]) - 1.0) / 2.0;
  // Keras's zoom matrix [zx, 0, cx (1 - zx), 0, zy, cy (1 - zy), 0, 0]: the centre stays put.
  std::vector<detail::AxisAlignedTransform> transforms(static_cast<size_t>(s[0]));
  for (int64_t i = 0; i < s[0]; ++i) {
    const auto u = detail::image_uniforms(rng, i);
    const double zy = 1.0 + h_lower + u[0] * (h_upper - h_lower);
    const double zx = options_.width_factor ? 1.0 + w_lower + u[1] * (w_upper - w_lower) : zy;
    transforms[static_cast<size_t>(i)] = {
        .zx = zx, .dx = x_centre * (1.0 - zx), .zy = zy, .dy = y_centre * (1.0 - zy)};
  }
  const Tensor out = detail::resample_images(
      x.value().reshape(s), transforms,
      {.height = s[1],
       .width = s[2],
       .fill_mode = detail::parse_fill_mode(options_.fill_mode, "RandomZoom"),
       .interpolation = detail::parse_interpolation(options_.interpolation, "RandomZoom"),
       .fill_value = options_.fill_value});
  return Variable(out.reshape(x.shape()));
}

nlohmann::json RandomZoom::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["height_factor"] = detail::factor_json(height_factor_);
  c["width_factor"] =
      options_.width_factor ? detail::factor_json(*options_.width_factor) : nlohmann::json();
  c["fill_mode"] = options_.fill_mode;
  c["interpolation"] = options_.interpolation;
  c["fill_value"] = options_.fill_value;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json();
  c["data_format"] = "channels_last";
  return c;
}

std::shared_ptr<Layer> RandomZoom::from_config(const nlohmann::json& c) {
  RandomZoomOptions o;
  read_base_options(c, o);
  if (c.contains("width_factor") && !c["width_factor"].is_null())
    o.width_factor = detail::read_factor(c, "width_factor", "RandomZoom");
  o.fill_mode = c.value("fill_mode", o.fill_mode);
  o.interpolation = c.value("interpolation", o.interpolation);
  o.fill_value = c.value("fill_value", o.fill_value);
  if (c.contains("seed") && !c["seed"].is_null()) o.seed = c["seed"].get<uint64_t>();
  detail::check_channels_last(c, "RandomZoom");
  return std::make_shared<RandomZoom>(detail::read_factor(c, "height_factor", "RandomZoom"), o);
}

}  // namespace osprey::nn
