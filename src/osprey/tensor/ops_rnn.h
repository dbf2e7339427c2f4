// Recurrent layers as tensor ops (no gradients): shape checks naming the op ("lstm", "gru",
// "simple_rnn"), go_backwards, output allocation, then the Backend's rnn_forward/rnn_backward
// (oneDNN's RNN primitives on CPU, masked batches step by step; reference loops for float64).
// autograd/ops/rnn.h makes them differentiable; the Keras layers call that. Weights use Keras 3's
// layouts (see RnnCell in backend.h), so Keras weight files load as they are.
//   RnnForward f = rnn_forward(RnnCell::lstm, x, nullptr, nullptr, kernel, recurrent, &bias, {});
//   f.y  // [batch, timesteps, units]
#pragma once

#include "osprey/tensor/backend.h"
#include "osprey/tensor/tensor.h"

namespace osprey {

struct RnnOptions {
  // [batch, timesteps], nonzero = a real step; undefined = every step is real. A masked step
  // keeps the state and outputs the carried h (Keras's JAX and NumPy backends; the TensorFlow
  // backend outputs 0 before the first real step instead, the same when h0 = 0), or 0 with
  // zero_output_for_mask (what Keras's Bidirectional asks for). On CPU a masked batch runs
  // oneDNN one step at a time (tensor/cpu/rnn_masked.cpp).
  Tensor mask{};
  // Runs over the reversed sequence and returns outputs in processing order, as Keras does.
  bool go_backwards = false;
  bool zero_output_for_mask = false;
  bool reset_after = true;                   // gru only: Keras 3's default (PyTorch's GRU)
  Activation activation = Activation::tanh;  // simple_rnn only: tanh or relu
};

// y, h_n and c_n (lstm only) are contiguous views of `packed` ([batch * T * units] then
// [batch * units] per state), so the autograd op records a single output.
struct RnnForward {
  Tensor packed, y, h_n, c_n, workspace;
};
struct RnnBackward {
  Tensor dx, dh0, dc0, dkernel, drecurrent_kernel, dbias;
};

// cell gru with options.reset_after = true runs RnnCell::gru_reset_after. h0, c0 and bias may be
// null (zeros); c0 only for lstm. training keeps what rnn_backward needs.
RnnForward rnn_forward(RnnCell cell, const Tensor& x, const Tensor* h0, const Tensor* c0,
                       const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor* bias,
                       const RnnOptions& options, bool training = false);
// The gradients of the inputs given those of y, h_n and c_n (undefined = zero), from the same
// inputs and the forward's results.
RnnBackward rnn_backward(RnnCell cell, const Tensor& x, const Tensor* h0, const Tensor* c0,
                         const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor* bias,
                         const RnnOptions& options, const RnnForward& forward, const Tensor& dy,
                         const Tensor& dh_n, const Tensor& dc_n);

}  // namespace osprey
