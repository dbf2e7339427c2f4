#include "osprey/nn/layers/global_average_pooling2d.h"

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"
#include "osprey/nn/layers/spatial.h"

namespace osprey::nn {

GlobalAveragePooling2D::GlobalAveragePooling2D(GlobalAveragePooling2DOptions options)
    : SingleInputLayer("GlobalAveragePooling2D", base_options(options)),
      options_(std::move(options)) {
  detail::kernel_data_format(options_.data_format, "GlobalAveragePooling2D");
}

void GlobalAveragePooling2D::check_input_shape(const Shape& s) const {
  OSPREY_CHECK(s.ndim() == 4, "{}: expected a 4-D input {}. Received: {}", name(),
               options_.data_format == "channels_last" ? "[batch, height, width, channels]"
                                                       : "[batch, channels, height, width]",
               s.to_string());
}

Shape GlobalAveragePooling2D::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const Shape& s = input_shapes[0];
  check_input_shape(s);
  const bool last = options_.data_format == "channels_last";
  const int64_t c = last ? s[3] : s[1];
  if (!options_.keepdims) return {s[0], c};
  return last ? Shape{s[0], 1, 1, c} : Shape{s[0], c, 1, 1};
}

Variable GlobalAveragePooling2D::call_single(const Variable& x, bool training) {
  check_input_shape(x.shape());
  return autograd::global_average_pool2d(
      x, detail::kernel_data_format(options_.data_format, name()), options_.keepdims);
}

nlohmann::json GlobalAveragePooling2D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["data_format"] = options_.data_format;
  c["keepdims"] = options_.keepdims;
  return c;
}

std::shared_ptr<Layer> GlobalAveragePooling2D::from_config(const nlohmann::json& c) {
  GlobalAveragePooling2DOptions o;
  read_base_options(c, o);
  o.data_format = c.value("data_format", std::string("channels_last"));
  o.keepdims = c.value("keepdims", false);
  return std::make_shared<GlobalAveragePooling2D>(o);
}

}  // namespace osprey::nn
