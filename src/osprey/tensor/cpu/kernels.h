// The fast CPU kernels behind cpu_backend(): oneDNN primitives (matmul, conv, pooling, norms,
// softmax, reorders, transcendental eltwise) and vectorized loops (elementwise, reductions,
// losses, gathers). Each follows the Backend contract in backend.h and hands every case it does
// not accelerate (odd strides, integer or float64 matmuls, ...) to the reference kernel, so the
// table is always complete and always right.
#pragma once

#include <string>

#include "osprey/tensor/backend.h"

namespace osprey::cpu {

void copy(const Tensor& src, Tensor& dst);
void fill(Tensor& dst, double value);
void unary(UnaryOp op, const Tensor& x, Tensor& y, const UnaryParams& p);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
void reduce(ReduceOp op, const Tensor& x, Tensor& out);

void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& out,
            const MatmulParams& p);

void quantize_rows_int8(const Tensor& x, Tensor& q, Tensor& scale);
void matmul_int8(const Tensor& a_q, const Tensor& a_scale, const Tensor& b_q, const Tensor& b_scale,
                 const Tensor* bias, Tensor& out, Activation activation);
void conv2d_int8(const Tensor& x_q, const Tensor& x_scale, const Tensor& w_q, const Tensor& w_scale,
                 const Tensor* bias, Tensor& y, const Conv2dParams& p, Activation activation,
                 const Pool2dParams* pool);
// The oneDNN implementation an int8 product of these sizes gets ("brg:avx512_core_vnni", ...;
// "" when oneDNN has none): lets tests and benchmarks say whether VNNI kernels run.
std::string int8_matmul_impl(int64_t m, int64_t k, int64_t n);

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

void gather_rows(const Tensor& table, const Tensor& indices, Tensor& out);
void scatter_add_rows(const Tensor& grad, const Tensor& indices, Tensor& dtable);

void rnn_forward(const RnnArgs& in, const RnnParams& p, Tensor& y, Tensor& h_n, Tensor* c_n,
                 Tensor* workspace);
void rnn_backward(const RnnArgs& in, const RnnParams& p, const RnnResults& out, const Tensor& dy,
                  const Tensor& dh_n, const Tensor* dc_n, const RnnGrads& grads);

}  // namespace osprey::cpu
