// Differentiable recurrent layers over a whole sequence: lstm, gru (reset_after true or false)
// and simple_rnn, the kernels of the Keras layers LSTM, GRU, SimpleRNN and Bidirectional. Weights
// in Keras 3's layouts: kernel [features, G * units], recurrent_kernel [units, G * units], gates
// i, f, c, o (lstm) and z, r, h (gru); bias [G * units], or [2, 3 * units] for gru with
// reset_after (Keras's default). h0, c0 and bias may be undefined Variables (zeros). Masks,
// go_backwards and the rest are RnnOptions (tensor/ops_rnn.h).
//   auto [y, h, c] = lstm(x, Variable(), Variable(), kernel, recurrent_kernel, bias);
//   // x [batch, T, features] -> y [batch, T, units], h and c [batch, units]
#pragma once

#include "osprey/autograd/variable.h"
#include "osprey/tensor/ops_rnn.h"

namespace osprey::autograd {

struct RnnOutputs {
  Variable outputs;  // [batch, timesteps, units], in processing order (reversed by go_backwards)
  Variable h;        // [batch, units]: the final state
  Variable c;        // [batch, units]: the final cell state (lstm; undefined otherwise)
};

RnnOutputs lstm(const Variable& x, const Variable& h0, const Variable& c0, const Variable& kernel,
                const Variable& recurrent_kernel, const Variable& bias,
                const RnnOptions& options = {});
RnnOutputs gru(const Variable& x, const Variable& h0, const Variable& kernel,
               const Variable& recurrent_kernel, const Variable& bias,
               const RnnOptions& options = {});
RnnOutputs simple_rnn(const Variable& x, const Variable& h0, const Variable& kernel,
                      const Variable& recurrent_kernel, const Variable& bias,
                      const RnnOptions& options = {});

}  // namespace osprey::autograd
