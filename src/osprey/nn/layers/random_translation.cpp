#include "osprey/nn/layers/random_translation.h"

#include "osprey/nn/layers/image_transform.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

RandomTranslation::RandomTranslation(double height_factor, double width_factor,
                                     RandomTranslationOptions options)
    : RandomTranslation(detail::symmetric_factor(height_factor),
                        detail::symmetric_factor(width_factor), std::move(options)) {}

RandomTranslation::RandomTranslation(std::pair<double, double> height_factor,
                                     std::pair<double, double> width_factor,
                                     RandomTranslationOptions options)
    : SingleInputLayer("RandomTranslation", base_options(options)),
      height_factor_(height_factor),
      width_factor_(width_factor),
      options_(std::move(options)) {
  detail::check_factor(height_factor_, "height_factor", "RandomTranslation");
  detail::check_factor(width_factor_, "width_factor", "RandomTranslation");
  detail::parse_fill_mode(options_.fill_mode, "RandomTranslation");
  detail::parse_interpolation(options_.interpolation, "RandomTranslation");
}

Shape RandomTranslation::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  detail::image_batch_shape(input_shapes[0], "RandomTranslation");
  return input_shapes[0];
}

Variable RandomTranslation::call_single(const Variable& x, bool training) {
  const Shape s = detail::image_batch_shape(x.value(), "RandomTranslation");
  if (!training) return x;
  detail::check_no_input_gradient(x, "RandomTranslation");
  const Philox rng(detail::call_seed(options_.seed, calls_));
  const auto [h_lower, h_upper] = height_factor_;
  const auto [w_lower, w_upper] = width_factor_;
  const auto height = static_cast<double>(s[1]), width = static_cast<double>(s[2]);
  // Keras's translation matrix [1, 0, -dx, 0, 1, -dy, 0, 0]: output (x, y) reads (x - dx, y - dy).
  std::vector<detail::AxisAlignedTransform> transforms(static_cast<size_t>(s[0]));
  for (int64_t i = 0; i < s[0]; ++i) {
    const auto u = detail::image_uniforms(rng, i);
    const double dy = (h_lower + u[0] * (h_upper - h_lower)) * height;
    const double dx = (w_lower + u[1] * (w_upper - w_lower)) * width;
    transforms[static_cast<size_t>(i)] = {.zx = 1.0, .dx = -dx, .zy = 1.0, .dy = -dy};
  }
  const Tensor out = detail::resample_images(
      x.value().reshape(s), transforms,
      {.height = s[1],
       .width = s[2],
       .fill_mode = detail::parse_fill_mode(options_.fill_mode, "RandomTranslation"),
       .interpolation = detail::parse_interpolation(options_.interpolation, "RandomTranslation"),
       .fill_value = options_.fill_value});
  return Variable(out.reshape(x.shape()));
}

nlohmann::json RandomTranslation::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["height_factor"] = detail::factor_json(height_factor_);
  c["width_factor"] = detail::factor_json(width_factor_);
  c["fill_mode"] = options_.fill_mode;
  c["interpolation"] = options_.interpolation;
  c["fill_value"] = options_.fill_value;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json();
  c["data_format"] = "channels_last";
  return c;
}

std::shared_ptr<Layer> RandomTranslation::from_config(const nlohmann::json& c) {
  RandomTranslationOptions o;
  read_base_options(c, o);
  o.fill_mode = c.value("fill_mode", o.fill_mode);
  o.interpolation = c.value("interpolation", o.interpolation);
  o.fill_value = c.value("fill_value", o.fill_value);
  if (c.contains("seed") && !c["seed"].is_null()) o.seed = c["seed"].get<uint64_t>();
  detail::check_channels_last(c, "RandomTranslation");
  return std::make_shared<RandomTranslation>(
      detail::read_factor(c, "height_factor", "RandomTranslation"),
      detail::read_factor(c, "width_factor", "RandomTranslation"), o);
}

}  // namespace osprey::nn
