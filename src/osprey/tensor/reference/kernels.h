// The reference kernels: plain loops, written for clarity over speed, accumulating in double.
// They fill reference_backend() and are the oracle every fast kernel is tested against, so each
// one follows the Backend contract in backend.h literally and handles any strides and dtypes.
#pragma once

#include <array>

#include "osprey/tensor/backend.h"

namespace osprey::reference {

void copy(const Tensor& src, Tensor& dst);
void fill(Tensor& dst, double value);
void unary(UnaryOp op, const Tensor& x, Tensor& y, const UnaryParams& p);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
void where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out);
void reduce(ReduceOp op, const Tensor& x, Tensor& out);
void arg_reduce(bool is_max, const Tensor& x, int axis, Tensor& out);
void random(RandomKind kind, uint64_t seed, double a, double b, Tensor& dst);

void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& out,
            const MatmulParams& p);

void quantize_rows_int8(const Tensor& x, Tensor& q, Tensor& scale);
void matmul_int8(const Tensor& a_q, const Tensor& a_scale, const Tensor& b_q, const Tensor& b_scale,
                 const Tensor* bias, Tensor& out, Activation activation);
void conv2d_int8(const Tensor& x_q, const Tensor& x_scale, const Tensor& w_q, const Tensor& w_scale,
                 const Tensor* bias, Tensor& y, const Conv2dParams& p, Activation activation,
                 const Pool2dParams* pool);

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                    const Conv2dParams& p);
void conv2d_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2dParams& p);
void conv2d_backward_weights(const Tensor& dy, const Tensor& x, Tensor& dw, Tensor* dbias,
                             const Conv2dParams& p);

void max_pool2d_forward(const Tensor& x, Tensor& y, Tensor* workspace, const Pool2dParams& p);
void max_pool2d_backward(const Tensor& dy, const Tensor& x, const Tensor& workspace, Tensor& dx,
                         const Pool2dParams& p);
void avg_pool2d_forward(const Tensor& x, Tensor& y, const Pool2dParams& p);
void avg_pool2d_backward(const Tensor& dy, Tensor& dx, const Pool2dParams& p);

void batch_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta, Tensor& mean,
                        Tensor& invstd, bool training, double eps, int channel_axis, Tensor& y);
void batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor* gamma, const Tensor& mean,
                         const Tensor& invstd, int channel_axis, Tensor& dx, Tensor* dgamma,
                         Tensor* dbeta);
void layer_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta, int64_t norm_size,
                        double eps, Tensor& y, Tensor& mean, Tensor& rstd);
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor* gamma, const Tensor& mean,
                         const Tensor& rstd, int64_t norm_size, Tensor& dx, Tensor* dgamma,
                         Tensor* dbeta);

void softmax_forward(const Tensor& x, int axis, bool log, Tensor& y);
void softmax_backward(const Tensor& dy, const Tensor& y, int axis, bool log, Tensor& dx);
void cross_entropy_forward(const Tensor& logits, const Tensor& labels, double label_smoothing,
                           Tensor& losses, Tensor& probs);
void cross_entropy_backward(const Tensor& probs, const Tensor& labels, double label_smoothing,
                            const Tensor& dloss, Tensor& dlogits);

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                       const Tensor* key_padding, const AttentionParams& p, Tensor& out,
                       Tensor& lse);
void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor* mask, const Tensor* key_padding, const Tensor& out,
                        const Tensor& lse, const AttentionParams& p, Tensor& dq, Tensor& dk,
                        Tensor& dv);
void attention_weights(const Tensor& q, const Tensor& k, const Tensor* mask,
                       const Tensor* key_padding, const AttentionParams& p, Tensor& weights);

void gather_rows(const Tensor& table, const Tensor& indices, Tensor& out);
void scatter_add_rows(const Tensor& grad, const Tensor& indices, Tensor& dtable);

void rnn_forward(const RnnArgs& in, const RnnParams& p, Tensor& y, Tensor& h_n, Tensor* c_n,
                 Tensor* workspace);
void rnn_backward(const RnnArgs& in, const RnnParams& p, const RnnResults& out, const Tensor& dy,
                  const Tensor& dh_n, const Tensor* dc_n, const RnnGrads& grads);

// Element access helpers shared by the reference kernels: visit every index of a shape in
// row-major order, and read/write one element of any dtype as double. An element offset counts
// elements from the start of the tensor's storage (it includes t.offset()).
double load(const Tensor& t, int64_t element_offset);
void store(Tensor& t, int64_t element_offset, double v);
// Calls fn(offsets...) for every index of `shape`, with the element offset of each tensor.
template <class Fn, class... Ts>
void for_each_index(const Shape& shape, Fn&& fn, const Ts&... ts) {
  const int nd = shape.ndim();
  const int64_t n = shape.numel();
  if (n == 0) return;
  std::array<int64_t, kMaxDims> idx{};
  for (int64_t i = 0; i < n; ++i) {
    fn((ts.offset() + [&] {
      int64_t o = 0;
      for (int d = 0; d < nd; ++d) o += idx[static_cast<size_t>(d)] * ts.strides()[d];
      return o;
    }())...);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < shape[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace osprey::reference
