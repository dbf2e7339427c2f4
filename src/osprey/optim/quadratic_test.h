// The golden problem of the optimizer tests (see golden_values.py): a kernel [2, 3] and a bias [3]
// with the gradient of a separable quadratic, g = a * w + c, recomputed from the current weights
// before each step, in float64 and cast to the variables' dtype. Test-only, header-only.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/optim/golden_values_test.h"
#include "osprey/optim/optimizer.h"
#include "osprey/tensor/factory.h"

namespace osprey::optim::testing {

using autograd::Variable;

struct Quadratic {
  Variable kernel, bias;
  std::vector<Variable> variables() const { return {kernel, bias}; }
};

template <size_t N>
std::vector<double> vec(const std::array<double, N>& a) {
  return std::vector<double>(a.begin(), a.end());
}

inline Quadratic make_quadratic(DType dtype = DType::float64) {
  return {Variable(from_vector<double>(vec(golden::kKernel0), {2, 3}).to(dtype), true,
                   "sequential/dense/kernel"),
          Variable(from_vector<double>(vec(golden::kBias0), {3}).to(dtype), true,
                   "sequential/dense/bias")};
}

// Sets each variable's gradient to (a * w + c) * scale.
inline void set_quadratic_grads(Quadratic& q, double scale = 1.0) {
  const auto set = [scale](Variable& v, const auto& a, const auto& c) {
    std::vector<double> w = v.value().to_vector<double>();
    for (size_t i = 0; i < w.size(); ++i) w[i] = (a[i] * w[i] + c[i]) * scale;
    v.set_grad(from_vector<double>(w, v.shape()).to(v.dtype()));
  };
  set(q.kernel, golden::kKernelA, golden::kKernelC);
  set(q.bias, golden::kBiasA, golden::kBiasC);
}

// Kernel then bias, as double.
inline std::vector<double> quadratic_values(const Quadratic& q) {
  std::vector<double> out = q.kernel.value().to_vector<double>();
  for (double b : q.bias.value().to_vector<double>()) out.push_back(b);
  return out;
}

// Runs `steps` updates of the golden problem and returns the final weights.
inline std::vector<double> run_quadratic(Optimizer& opt, DType dtype = DType::float64,
                                         int steps = golden::kSteps, double grad_scale = 1.0) {
  Quadratic q = make_quadratic(dtype);
  for (int s = 0; s < steps; ++s) {
    set_quadratic_grads(q, grad_scale);
    opt.apply(q.variables());
  }
  return quadratic_values(q);
}

inline void expect_values_near(const std::vector<double>& got, const std::vector<double>& want,
                               double tol, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol) << what << " element " << i;
  }
}

inline void expect_golden(const std::vector<double>& got, const std::array<double, 9>& want,
                          double tol, const std::string& what = "") {
  expect_values_near(got, vec(want), tol, what);
}

// Expects fn() to throw E whose message is exactly `message`.
template <class E, class F>
void expect_message(F&& fn, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception: " << message;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), message);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

}  // namespace osprey::optim::testing
