// Differentiable normalization: batch norm (training and inference, running statistics with
// Keras's conventions) and layer norm over the trailing axes.
//   Tensor mean = zeros({C}), var = ones({C});
//   Variable y = batch_norm(x, gamma, beta, mean, var, {.training = true});  // updates mean, var
//   Variable z = layer_norm(h, ln_gamma, ln_beta);                          // over the last axis
#pragma once

#include <functional>

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

struct BatchNormOptions {
  bool training = true;
  // Keras: moving = moving * momentum + batch * (1 - momentum).
  double momentum = 0.99;
  double epsilon = 1e-3;
  int axis = -1;  // the channel axis: -1 for NHWC / [N, C], 1 for NCHW
  // Synchronized (cross-replica) statistics in training when set: an in-place sum of a float64
  // tensor over every replica of a data-parallel step. The forward sums per-channel count, sum
  // and sum of squares (float64) to normalize with the global batch's mean and biased variance
  // and to update the running statistics with them (the same on every replica); the backward
  // sums dy and dy * xhat per channel, so dx is the gradient through the global statistics of
  // the sum of the replicas' losses. gamma and beta gradients stay local (the strategy averages
  // them). It is called once in forward and once in backward, in graph order: every replica must
  // run the same graph so the collectives pair up.
  std::function<void(Tensor&)> cross_replica_sum{};
};

// x [..., C, ...] normalized per channel; gamma, beta [C] may be undefined (scale 1, shift 0).
// Training: normalizes with the batch mean and biased variance (as Keras), and, when the running
// statistics are defined, updates them in place with the batch mean and biased variance;
// the gradient flows through the batch statistics. Inference: normalizes with the running
// statistics (required then), which are constants for the gradient.
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    Tensor& running_mean, Tensor& running_var,
                    const BatchNormOptions& options = {});
// Training mode without running statistics.
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    const BatchNormOptions& options = {});

struct LayerNormOptions {
  int begin_axis = -1;    // normalizes over axes [begin_axis, ndim)
  double epsilon = 1e-3;  // Keras's default
};

// gamma, beta hold one value per normalized element (shape x.shape()[begin_axis:] or flat);
// either may be undefined.
Variable layer_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    const LayerNormOptions& options = {});

// RMSNorm (Zhang and Sennrich, 2019; Keras's RMSNormalization): y = x / sqrt(mean(x^2) + epsilon)
// * scale over the last axis, no centring. scale [last] may be undefined. Composed of
// elementwise ops and a mean (a fused kernel is issue 44's to add).
Variable rms_norm(const Variable& x, const Variable& scale, double epsilon = 1e-6);

}  // namespace osprey::autograd
