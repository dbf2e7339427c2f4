// The kernel table. A Backend is a plain table of functions, one per kernel, so a device type
// plugs in by filling a table (flashlight's TensorBackend idea). Two tables exist for the CPU:
// `reference` (naive loops, always built, the oracle every fast kernel is tested against) and
// `cpu` (oneDNN primitives and vectorized loops; it starts as a copy of `reference` and overrides
// what it accelerates). Later `cuda` fills the same table.
//
// Contract for every kernel: the op layer (tensor/ops.cpp) has already checked shapes, dtypes
// and devices, broadcast inputs to the output shape (stride-0 views) where stated, and allocated
// outputs as contiguous tensors. Inputs may be arbitrary strided views unless stated. Kernels
// are dtype-generic: float kernels accept float64/float32 and, where noted, bfloat16/float16.
#pragma once

#include <cstdint>

#include "osprey/tensor/tensor.h"

namespace osprey {

enum class UnaryOp : uint8_t {
  neg,
  exp,
  log,
  sqrt,
  rsqrt,
  abs,
  sign,
  square,
  reciprocal,
  relu,
  sigmoid,
  tanh,
  gelu_tanh,
  gelu_erf,
  add_scalar,   // x + alpha
  mul_scalar,   // x * alpha
  pow_scalar,   // x ^ alpha
  rsub_scalar,  // alpha - x
  clamp,        // min(max(x, alpha), beta); NaN stays NaN
};

enum class BinaryOp : uint8_t {
  add,
  sub,
  mul,
  div,
  pow,
  maximum,
  minimum,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,  // output dtype bool
  // Backward helpers: a is the incoming gradient dy, b the saved input x or output y.
  relu_backward,       // dy * (x > 0)
  sigmoid_backward,    // dy * y * (1 - y)
  tanh_backward,       // dy * (1 - y^2)
  gelu_tanh_backward,  // dy * d/dx gelu_tanh(x)
  gelu_erf_backward,   // dy * d/dx gelu_erf(x)
};

enum class ReduceOp : uint8_t { sum, mean, max, min };

// An activation fused into matmul/linear/conv outputs.
enum class Activation : uint8_t { none, relu, gelu_tanh, gelu_erf, sigmoid, tanh };

// The elementwise op that applies a fused activation on its own (for kernels that run it as a
// separate pass); Activation::none has none and must not be passed.
inline UnaryOp unary_op_of(Activation a) {
  switch (a) {
    case Activation::relu:
      return UnaryOp::relu;
    case Activation::gelu_tanh:
      return UnaryOp::gelu_tanh;
    case Activation::gelu_erf:
      return UnaryOp::gelu_erf;
    case Activation::sigmoid:
      return UnaryOp::sigmoid;
    case Activation::tanh:
      return UnaryOp::tanh;
    case Activation::none:
      break;
  }
  return UnaryOp::neg;  // unreachable for the activations above
}

struct UnaryParams {
  double alpha = 0.0;
  double beta = 0.0;
};

struct MatmulParams {
  bool accumulate = false;  // out += a @ b instead of out = a @ b
  Activation activation = Activation::none;
};

// Geometry of a 2-D convolution. Data is NHWC when channels_last, else NCHW; the kernel is
// always [kh, kw, in_channels / groups, out_channels] (Keras's HWIO).
struct Conv2dParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool channels_last = true;
  // conv2d_forward only: applied to the output in the kernel (a oneDNN post-op on CPU), as
  // MatmulParams::activation; the backward kernels ignore it (autograd applies its derivative).
  Activation activation = Activation::none;
};

struct Pool2dParams {
  int64_t kernel_h = 2, kernel_w = 2;
  int64_t stride_h = 2, stride_w = 2;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  bool channels_last = true;
  // Average pooling divides by the number of real (unpadded) elements, as Keras and
  // PyTorch's count_include_pad=False.
};

enum class RandomKind : uint8_t { uniform, normal, bernoulli };

// Scaled dot-product attention, resolved by the op layer (tensor/ops_attention.h).
struct AttentionParams {
  double scale = 1.0;   // scores = scale * q . k (the op layer's default is 1 / sqrt(d))
  bool causal = false;  // top-left aligned, as PyTorch 2's is_causal: query i sees keys j <= i
  double dropout_rate = 0.0;  // on the normalized weights; keep decisions from attention_dropout.h
  uint64_t dropout_seed = 0;
};

// Recurrent layers (Keras 3 weight layouts and gate orders). kernel [features, G * units],
// recurrent_kernel [units, G * units], gates in column blocks: lstm G = 4 (i, f, c, o), gru G = 3
// (z, r, h), simple_rnn G = 1. bias [G * units], except gru_reset_after: [2, 3 * units] (input
// bias row 0, recurrent bias row 1, applied before the reset gate multiplies it).
enum class RnnCell : uint8_t { lstm, gru, gru_reset_after, simple_rnn };

struct RnnParams {
  RnnCell cell = RnnCell::lstm;
  Activation activation = Activation::tanh;  // simple_rnn only: tanh or relu
  bool zero_output_for_mask = false;         // a masked step outputs 0, not the carried state
};

// What rnn_forward reads and rnn_backward reads again. x [batch, T, features]; h0, c0 [batch,
// units] (c0 only for lstm, else null); bias may be null (zero); mask bool [batch, T] or null
// (a false step keeps the state and outputs the carried h). Time runs forward: the op layer
// reverses x and mask for go_backwards.
struct RnnArgs {
  const Tensor* x = nullptr;
  const Tensor* h0 = nullptr;
  const Tensor* c0 = nullptr;
  const Tensor* kernel = nullptr;
  const Tensor* recurrent_kernel = nullptr;
  const Tensor* bias = nullptr;
  const Tensor* mask = nullptr;
};
// Forward results (y [batch, T, units], h_n and c_n [batch, units]) as rnn_backward gets them
// back, with the workspace the forward kept (undefined when it kept none).
struct RnnResults {
  const Tensor* y = nullptr;
  const Tensor* h_n = nullptr;
  const Tensor* c_n = nullptr;
  const Tensor* workspace = nullptr;
};
// Gradients rnn_backward writes, each of its input's shape: all non-null except dc0 (lstm only)
// and dbias (when there is no bias).
struct RnnGrads {
  Tensor* dx = nullptr;
  Tensor* dh0 = nullptr;
  Tensor* dc0 = nullptr;
  Tensor* dkernel = nullptr;
  Tensor* drecurrent_kernel = nullptr;
  Tensor* dbias = nullptr;
};

struct Backend {
  const char* name = "";

  // dst = cast(src); same shape, any strides on both sides, any dtype pair.
  void (*copy)(const Tensor& src, Tensor& dst) = nullptr;
  // Every element of dst (any strides) = value.
  void (*fill)(Tensor& dst, double value) = nullptr;
  // y = op(x); y contiguous with x's shape and dtype.
  void (*unary)(UnaryOp op, const Tensor& x, Tensor& y, const UnaryParams& p) = nullptr;
  // out = op(a, b); a and b already expanded to out's shape and of one dtype; out has that dtype,
  // or bool for comparisons.
  void (*binary)(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) = nullptr;
  // out = cond ? a : b; all expanded to out's shape; cond is bool.
  void (*where)(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) = nullptr;
  // out has x's rank with size 1 on every reduced axis (keepdims); axes whose sizes differ
  // between x and out are reduced. Sums accumulate in double, in chunks fixed by the range (not
  // the thread count), so results are bitwise identical on any number of threads.
  void (*reduce)(ReduceOp op, const Tensor& x, Tensor& out) = nullptr;
  // Index of the max (or min) along axis; out is int64 with size 1 on axis. Ties: first index.
  void (*arg_reduce)(bool is_max, const Tensor& x, int axis, Tensor& out) = nullptr;

  // out[..., M, N] = a[..., M, K] @ b[..., K, N] (+ bias[N]) (then activation). Batch dims of a,
  // b and out are identical (already broadcast); a and b may be transposed views. bias may be null.
  void (*matmul)(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& out,
                 const MatmulParams& p) = nullptr;

  // int8 inference (the dynamic per-row scheme of quant/). quantize_rows_int8: x [M, K]
  // contiguous float32, q [M, K] int8, scale [M] float32 with the seeds' abs-max formula
  // scale[m] = 127 / (max_k |x[m, k]| + 1e-7), q = clip(round_half_even(x * scale), -127, 127),
  // all in float32 arithmetic.
  void (*quantize_rows_int8)(const Tensor& x, Tensor& q, Tensor& scale) = nullptr;
  // out [M, N] float32 = act(acc * ((1 / a_scale[m]) * (1 / b_scale[n])) + bias[n]) where
  // acc = a_q [M, K] int8 @ b_q [K, N] int8 summed exactly in int32; every operand contiguous,
  // a_scale [M] and b_scale [N] float32, bias [N] float32 or null.
  void (*matmul_int8)(const Tensor& a_q, const Tensor& a_scale, const Tensor& b_q,
                      const Tensor& b_scale, const Tensor* bias, Tensor& out,
                      Activation activation) = nullptr;
  // y float32 = act(acc * ((1 / x_scale[n]) * (1 / w_scale[o])) + bias[o]) where acc =
  // conv2d(x_q, w_q) summed exactly in int32: x_q int8 of y's layout (p.channels_last) with one
  // scale per sample n, w_q int8 HWIO [kh, kw, in / groups, out], w_scale [out], bias [out] or
  // null; all contiguous. With pool non-null, y is max_pool2d(that result, *pool) instead, for a
  // non-decreasing activation only (none, relu, sigmoid, tanh): then the maximum commutes with
  // the positive scales, the bias and the activation, so a kernel may pool the int32 sums first
  // and dequantize a quarter of the values (for 2x2), with a bitwise-identical result.
  void (*conv2d_int8)(const Tensor& x_q, const Tensor& x_scale, const Tensor& w_q,
                      const Tensor& w_scale, const Tensor* bias, Tensor& y, const Conv2dParams& p,
                      Activation activation, const Pool2dParams* pool) = nullptr;

  void (*conv2d_forward)(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                         const Conv2dParams& p) = nullptr;
  void (*conv2d_backward_data)(const Tensor& dy, const Tensor& w, Tensor& dx,
                               const Conv2dParams& p) = nullptr;
  // dbias may be null.
  void (*conv2d_backward_weights)(const Tensor& dy, const Tensor& x, Tensor& dw, Tensor* dbias,
                                  const Conv2dParams& p) = nullptr;

  // workspace: when non-null, the kernel stores there (allocating it, in a layout of its own
  // choice) what its own max_pool2d_backward needs; only that backend's backward reads it.
  void (*max_pool2d_forward)(const Tensor& x, Tensor& y, Tensor* workspace,
                             const Pool2dParams& p) = nullptr;
  void (*max_pool2d_backward)(const Tensor& dy, const Tensor& x, const Tensor& workspace,
                              Tensor& dx, const Pool2dParams& p) = nullptr;
  void (*avg_pool2d_forward)(const Tensor& x, Tensor& y, const Pool2dParams& p) = nullptr;
  void (*avg_pool2d_backward)(const Tensor& dy, Tensor& dx, const Pool2dParams& p) = nullptr;

  // Batch normalization over every axis but channel_axis. Training (mean/invstd outputs are
  // defined): statistics of the batch (biased variance) go to mean [C] and invstd [C] =
  // 1/sqrt(var+eps). Inference: mean [C] and invstd [C] are inputs (the caller derives invstd from
  // its running variance), and the kernel only normalizes. gamma/beta [C] may be null (scale 1,
  // shift 0).
  void (*batch_norm_forward)(const Tensor& x, const Tensor* gamma, const Tensor* beta, Tensor& mean,
                             Tensor& invstd, bool training, double eps, int channel_axis,
                             Tensor& y) = nullptr;
  // dgamma/dbeta may be null. Training-mode gradient (through the batch statistics).
  void (*batch_norm_backward)(const Tensor& dy, const Tensor& x, const Tensor* gamma,
                              const Tensor& mean, const Tensor& invstd, int channel_axis,
                              Tensor& dx, Tensor* dgamma, Tensor* dbeta) = nullptr;
  // Normalizes over the trailing `norm_size` elements of each row: x viewed as [rows, norm_size].
  // gamma/beta [norm_size] may be null; mean/rstd are [rows] float32 (float64 for float64 x).
  void (*layer_norm_forward)(const Tensor& x, const Tensor* gamma, const Tensor* beta,
                             int64_t norm_size, double eps, Tensor& y, Tensor& mean,
                             Tensor& rstd) = nullptr;
  void (*layer_norm_backward)(const Tensor& dy, const Tensor& x, const Tensor* gamma,
                              const Tensor& mean, const Tensor& rstd, int64_t norm_size, Tensor& dx,
                              Tensor* dgamma, Tensor* dbeta) = nullptr;

  // Softmax (or log-softmax) along axis, x and y of one shape.
  void (*softmax_forward)(const Tensor& x, int axis, bool log, Tensor& y) = nullptr;
  void (*softmax_backward)(const Tensor& dy, const Tensor& y, int axis, bool log,
                           Tensor& dx) = nullptr;
  // Fused softmax cross-entropy on logits [N, C]. labels: int32/int64 [N] class indices, or a
  // float [N, C] distribution. Label smoothing mixes the target with the uniform distribution.
  // losses [N] (float32, or float64 for float64 logits); probs [N, C] = softmax(logits), kept for
  // backward. An index outside [0, C) throws ValueError naming the sample and the class count.
  void (*cross_entropy_forward)(const Tensor& logits, const Tensor& labels, double label_smoothing,
                                Tensor& losses, Tensor& probs) = nullptr;
  // dlogits[n, :] = dloss[n] * (probs[n, :] - target[n, :]): the true gradient when each row of a
  // float label distribution sums to 1, which the op layer requires.
  void (*cross_entropy_backward)(const Tensor& probs, const Tensor& labels, double label_smoothing,
                                 const Tensor& dloss, Tensor& dlogits) = nullptr;

  // Attention. q [B, H, Tq, D], k [B, KVH, Tk, D], v [B, KVH, Tk, Dv], contiguous, one float
  // dtype; KVH divides H and query head h reads kv head h / (H / KVH). mask: null or a
  // [B, H, Tq, Tk] view (stride 0 on broadcast axes), bool (true = attend) or float (added to
  // the scaled scores; float32 for float32/16-bit q, float64 for float64 q). key_padding: null or
  // [B, Tk] bool (true = a real key). out [B, H, Tq, Dv] of q's dtype; lse [B, H, Tq] float32
  // (float64 for float64 q): the log-sum-exp of each row of scores, +inf for a row with no key
  // to attend to, whose output is 0 (and whose gradients are 0). Memory beyond the inputs and
  // outputs must not grow with Tq * Tk on the fast backends.
  void (*attention_forward)(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                            const Tensor* key_padding, const AttentionParams& p, Tensor& out,
                            Tensor& lse) = nullptr;
  // dq, dk, dv: contiguous, of q's shape / k's / v's and q's dtype; out and lse from forward.
  void (*attention_backward)(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor* mask, const Tensor* key_padding, const Tensor& out,
                             const Tensor& lse, const AttentionParams& p, Tensor& dq, Tensor& dk,
                             Tensor& dv) = nullptr;
  // weights [B, H, Tq, Tk] of q's dtype: softmax(scores) before dropout, 0 on a row with no key to
  // attend to. Materializes the Tq x Tk matrix: for inspection of small cases only.
  void (*attention_weights)(const Tensor& q, const Tensor& k, const Tensor* mask,
                            const Tensor* key_padding, const AttentionParams& p,
                            Tensor& weights) = nullptr;

  // out[i, :] = table[indices[i], :]; indices int32/int64 (any shape, flattened), out [n, D].
  // An index outside [0, V) throws ValueError naming it and V.
  void (*gather_rows)(const Tensor& table, const Tensor& indices, Tensor& out) = nullptr;
  // dtable[indices[i], :] += grad[i, :] (dtable is zeroed by the caller).
  void (*scatter_add_rows)(const Tensor& grad, const Tensor& indices, Tensor& dtable) = nullptr;

  // Fills dst (contiguous) with counter-based random numbers: element i depends only on
  // (seed, i), never on threads. uniform in [a, b); normal with mean a, stddev b; bernoulli
  // with P(1) = a.
  void (*random)(RandomKind kind, uint64_t seed, double a, double b, Tensor& dst) = nullptr;

  // A whole recurrent layer over the sequence (RnnArgs and friends above). workspace non-null
  // (training): the kernel stores there what its own rnn_backward reads, or leaves it undefined
  // when that backward recomputes. c_n is null except for lstm.
  void (*rnn_forward)(const RnnArgs& in, const RnnParams& p, Tensor& y, Tensor& h_n, Tensor* c_n,
                      Tensor* workspace) = nullptr;
  // dy [batch, T, units], dh_n, dc_n (lstm, else null) [batch, units]: gradients of the outputs.
  void (*rnn_backward)(const RnnArgs& in, const RnnParams& p, const RnnResults& out,
                       const Tensor& dy, const Tensor& dh_n, const Tensor* dc_n,
                       const RnnGrads& grads) = nullptr;
};

// The reference table (naive loops) and the fast CPU table.
const Backend& reference_backend();
const Backend& cpu_backend();
// The table ops use for a device: cpu_backend() for cpu:*, unless OSPREY_BACKEND=reference.
const Backend& backend_for(Device device);

}  // namespace osprey
