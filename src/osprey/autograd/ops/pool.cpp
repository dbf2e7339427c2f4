#include "osprey/autograd/ops/pool.h"

#include "osprey/autograd/ops/common.h"
#include "osprey/autograd/ops/reduction.h"

namespace osprey::autograd {

Variable max_pool2d(const Variable& x, const Pool2dOptions& options) {
  detail::check_input(x, "max_pool2d", "input");
  const Pool2dParams p = resolve_pool2d(x.shape(), options, "max_pool2d");
  const bool record = should_record(x);
  Tensor workspace;
  Tensor y = osprey::max_pool2d(x.value(), p, record ? &workspace : nullptr);
  if (!record) return Variable(std::move(y));
  return make_variable(
      std::move(y), "max_pool2d", {x},
      [xv = x.value(), workspace, p](const Tensor& g, const std::vector<bool>&) {
        return std::vector<Tensor>{osprey::max_pool2d_backward(g, xv, workspace, p)};
      });
}

Variable avg_pool2d(const Variable& x, const Pool2dOptions& options) {
  detail::check_input(x, "avg_pool2d", "input");
  const Pool2dParams p = resolve_pool2d(x.shape(), options, "avg_pool2d");
  Tensor y = osprey::avg_pool2d(x.value(), p);
  if (!should_record(x)) return Variable(std::move(y));
  return make_variable(std::move(y), "avg_pool2d", {x},
                       [xs = x.shape(), p](const Tensor& g, const std::vector<bool>&) {
                         return std::vector<Tensor>{osprey::avg_pool2d_backward(g, xs, p)};
                       });
}

namespace {
std::vector<int> spatial_axes(const Variable& x, const std::string& data_format, const char* op) {
  detail::check_input(x, op, "input");
  OSPREY_CHECK(data_format == "NHWC" || data_format == "NCHW" || data_format == "channels_last" ||
                   data_format == "channels_first",
               "{}: data_format must be 'NHWC' or 'NCHW'. Received: '{}'", op, data_format);
  OSPREY_CHECK(x.ndim() == 4, "{}: expected a 4-D input ({}). Received: {}", op, data_format,
               x.shape().to_string());
  const bool last = data_format == "NHWC" || data_format == "channels_last";
  return last ? std::vector<int>{1, 2} : std::vector<int>{2, 3};
}
}  // namespace

Variable global_average_pool2d(const Variable& x, const std::string& data_format, bool keepdims) {
  return mean(x, spatial_axes(x, data_format, "global_average_pool2d"), keepdims);
}

Variable global_max_pool2d(const Variable& x, const std::string& data_format, bool keepdims) {
  return max(x, spatial_axes(x, data_format, "global_max_pool2d"), keepdims);
}

}  // namespace osprey::autograd
