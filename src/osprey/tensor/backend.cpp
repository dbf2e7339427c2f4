#include "osprey/tensor/backend.h"

#include <cstdlib>
#include <string_view>

#include "osprey/tensor/reference/kernels.h"

namespace osprey {

const Backend& reference_backend() {
  static const Backend table = [] {
    Backend b;
    b.name = "reference";
    b.copy = reference::copy;
    b.fill = reference::fill;
    b.unary = reference::unary;
    b.binary = reference::binary;
    b.where = reference::where;
    b.reduce = reference::reduce;
    b.arg_reduce = reference::arg_reduce;
    b.random = reference::random;
    b.matmul = reference::matmul;
    b.quantize_rows_int8 = reference::quantize_rows_int8;
    b.matmul_int8 = reference::matmul_int8;
    b.conv2d_int8 = reference::conv2d_int8;
    b.conv2d_forward = reference::conv2d_forward;
    b.conv2d_backward_data = reference::conv2d_backward_data;
    b.conv2d_backward_weights = reference::conv2d_backward_weights;
    b.max_pool2d_forward = reference::max_pool2d_forward;
    b.max_pool2d_backward = reference::max_pool2d_backward;
    b.avg_pool2d_forward = reference::avg_pool2d_forward;
    b.avg_pool2d_backward = reference::avg_pool2d_backward;
    b.batch_norm_forward = reference::batch_norm_forward;
    b.batch_norm_backward = reference::batch_norm_backward;
    b.layer_norm_forward = reference::layer_norm_forward;
    b.layer_norm_backward = reference::layer_norm_backward;
    b.softmax_forward = reference::softmax_forward;
    b.softmax_backward = reference::softmax_backward;
    b.cross_entropy_forward = reference::cross_entropy_forward;
    b.cross_entropy_backward = reference::cross_entropy_backward;
    b.attention_forward = reference::attention_forward;
    b.attention_backward = reference::attention_backward;
    b.attention_weights = reference::attention_weights;
    b.gather_rows = reference::gather_rows;
    b.scatter_add_rows = reference::scatter_add_rows;
    b.rnn_forward = reference::rnn_forward;
    b.rnn_backward = reference::rnn_backward;
    return b;
  }();
  return table;
}

const Backend& backend_for(Device device) {
  static const bool use_reference = [] {
    const char* env = std::getenv("OSPREY_BACKEND");
    return env != nullptr && std::string_view(env) == "reference";
  }();
  if (device.type() == DeviceType::cuda) {
    OSPREY_THROW(NotImplementedError, "device {}: osprey was built without CUDA",
                 device.to_string());
  }
  return use_reference ? reference_backend() : cpu_backend();
}

}  // namespace osprey
