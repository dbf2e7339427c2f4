// The fast CPU table: a copy of the reference table with the kernels of tensor/cpu/ put in
// where they accelerate something (each of them still hands its unusual cases back to the
// reference kernel). Kernels not listed here (where, arg_reduce, random) are
// the reference ones.
#include "osprey/tensor/backend.h"
#include "osprey/tensor/cpu/kernels.h"

namespace osprey {

const Backend& cpu_backend() {
  static const Backend table = [] {
    Backend b = reference_backend();
    b.name = "cpu";
    b.copy = cpu::copy;
    b.fill = cpu::fill;
    b.unary = cpu::unary;
    b.binary = cpu::binary;
    b.reduce = cpu::reduce;
    b.matmul = cpu::matmul;
    b.quantize_rows_int8 = cpu::quantize_rows_int8;
    b.matmul_int8 = cpu::matmul_int8;
    b.conv2d_int8 = cpu::conv2d_int8;
    b.conv2d_forward = cpu::conv2d_forward;
    b.conv2d_backward_data = cpu::conv2d_backward_data;
    b.conv2d_backward_weights = cpu::conv2d_backward_weights;
    b.max_pool2d_forward = cpu::max_pool2d_forward;
    b.max_pool2d_backward = cpu::max_pool2d_backward;
    b.avg_pool2d_forward = cpu::avg_pool2d_forward;
    b.avg_pool2d_backward = cpu::avg_pool2d_backward;
    b.batch_norm_forward = cpu::batch_norm_forward;
    b.batch_norm_backward = cpu::batch_norm_backward;
    b.layer_norm_forward = cpu::layer_norm_forward;
    b.layer_norm_backward = cpu::layer_norm_backward;
    b.softmax_forward = cpu::softmax_forward;
    b.softmax_backward = cpu::softmax_backward;
    b.cross_entropy_forward = cpu::cross_entropy_forward;
    b.cross_entropy_backward = cpu::cross_entropy_backward;
    b.attention_forward = cpu::attention_forward;
    b.attention_backward = cpu::attention_backward;
    b.gather_rows = cpu::gather_rows;
    b.scatter_add_rows = cpu::scatter_add_rows;
    b.rnn_forward = cpu::rnn_forward;
    b.rnn_backward = cpu::rnn_backward;
    return b;
  }();
  return table;
}

}  // namespace osprey
