// Finite-difference gradient check in float64, the harness every differentiable op is tested
// with. The function's output is reduced to a scalar with fixed random weights,
// L = sum(f(inputs) * w), so every output element is checked at once; the analytic gradient of L
// (one backward pass) is compared with central differences (L(x + eps) - L(x - eps)) / (2 eps)
// for every element of every input that requires grad. Inputs may be strided views (see
// noncontiguous()), so ops are checked on the layouts they meet in practice.
//   auto r = testing::gradcheck([](const auto& v) { return matmul(v[0], v[1]); }, {a, b});
//   EXPECT_TRUE(r.ok) << r.message;
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "osprey/autograd/variable.h"

namespace osprey::testing {

struct GradcheckOptions {
  double eps = 1e-6;
  // Per element |analytic - numeric| / max(1, |analytic|, |numeric|): relative for large
  // gradients, absolute for those below 1 (where central differences have absolute error).
  double tolerance = 1e-6;
  uint64_t seed = 12345;  // of the output weights w
};

struct GradcheckResult {
  bool ok = true;
  double max_error = 0.0;      // the largest per-element error, as defined above
  int worst_input = -1;        // where it occurred (-1: nothing was checked)
  int64_t worst_element = -1;  // row-major index into that input
  double analytic = 0.0, numeric = 0.0;
  int64_t elements_checked = 0;
  std::string message;  // a one-line summary naming the worst element; says why when !ok
};

using GradcheckFunction =
    std::function<autograd::Variable(const std::vector<autograd::Variable>& inputs)>;

// Inputs that require grad must be float64 and must not overlap themselves (no stride-0 axes);
// their values are perturbed in place and restored; their gradients are reset. Inputs that do not
// require grad are passed through unchecked. The function must be deterministic (seeded).
GradcheckResult gradcheck(const GradcheckFunction& fn,
                          const std::vector<autograd::Variable>& inputs,
                          const GradcheckOptions& options = {});

// The values of t (cast to float64) in a non-contiguous layout: every other element of a buffer
// twice as long along the last axis of size > 1 (the gaps hold NaN, so a kernel that reads them
// shows it). A tensor with no axis of size > 1 is returned as a contiguous copy.
Tensor noncontiguous(const Tensor& t);
// A seeded float64 normal tensor (a shorthand for tests).
Tensor randn(const Shape& shape, uint64_t seed, double mean = 0.0, double stddev = 1.0);
// A leaf float64 Variable requiring grad, optionally laid out by noncontiguous().
autograd::Variable grad_input(const Shape& shape, uint64_t seed, bool strided = false,
                              double mean = 0.0, double stddev = 1.0);

}  // namespace osprey::testing
