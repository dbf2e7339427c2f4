#include "osprey/nn/layers/flatten.h"

#include <numeric>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/options.h"
#include "osprey/nn/layers/spatial.h"

namespace osprey::nn {

Flatten::Flatten(FlattenOptions options)
    : SingleInputLayer("Flatten", base_options(options)), options_(std::move(options)) {
  detail::kernel_data_format(options_.data_format, "Flatten");
}

Shape Flatten::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  const Shape& s = input_shapes[0];
  OSPREY_CHECK(s.ndim() >= 1, "{}: expected an input with a batch axis. Received a scalar", name());
  int64_t features = 1;
  for (int i = 1; i < s.ndim(); ++i) features *= s[i];
  return {s[0], features};
}

Variable Flatten::call_single(const Variable& x, bool training) {
  OSPREY_CHECK(x.ndim() >= 1, "{}: expected an input with a batch axis. Received a scalar", name());
  Variable h = x;
  if (options_.data_format == "channels_first" && x.ndim() >= 3) {
    std::vector<int> axes(static_cast<size_t>(x.ndim()));
    std::iota(axes.begin() + 1, axes.end() - 1, 2);  // [0, 2, ..., k, 1]
    axes.back() = 1;
    h = autograd::permute(x, axes);
  }
  return autograd::reshape(h, compute_output_shape({x.shape()}));
}

nlohmann::json Flatten::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["data_format"] = options_.data_format;
  return c;
}

std::shared_ptr<Layer> Flatten::from_config(const nlohmann::json& c) {
  FlattenOptions o;
  read_base_options(c, o);
  o.data_format = c.value("data_format", std::string("channels_last"));
  return std::make_shared<Flatten>(o);
}

}  // namespace osprey::nn
