// Helpers for tests of differentiable code (header-only, GoogleTest; not part of the library):
// a gradient-check assertion, seeded random shapes and float64 inputs (plain, strided, positive,
// away from kinks) and an exception-message matcher.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "osprey/autograd/ops.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/gradcheck.h"

namespace osprey::testing {

using autograd::Variable;

using Fn = GradcheckFunction;
using Vars = std::vector<Variable>;

// Asserts max relative error < 1e-6 and prints the harness's summary on failure.
#define OSPREY_EXPECT_GRADCHECK(fn, inputs)                               \
  do {                                                                    \
    const auto gc_result_ = ::osprey::testing::gradcheck((fn), (inputs)); \
    EXPECT_TRUE(gc_result_.ok) << gc_result_.message;                     \
    EXPECT_LT(gc_result_.max_error, 1e-6) << gc_result_.message;          \
  } while (0)

inline Variable input(const Shape& s, uint64_t seed, bool strided = false) {
  return grad_input(s, seed, strided);
}

// Values in [0.5, inf): safe for log, sqrt, rsqrt, pow with a real exponent.
inline Variable positive_input(const Shape& s, uint64_t seed, bool strided = false) {
  Tensor v = osprey::add(osprey::abs(randn(s, seed)), 0.5);
  return Variable(strided ? noncontiguous(v) : v, true);
}

// Values with |x| >= 0.1: finite differences stay clear of the kink at 0 (abs, relu).
inline Variable away_from_zero(const Shape& s, uint64_t seed, bool strided = false) {
  const Tensor r = randn(s, seed);
  Tensor v = osprey::add(r, osprey::mul(osprey::sign(r), 0.1));
  return Variable(strided ? noncontiguous(v) : v, true);
}

// A random shape of rank in [min_rank, max_rank] with sizes in [1, max_size].
inline Shape random_shape(std::mt19937& rng, int min_rank, int max_rank, int64_t max_size = 4) {
  std::uniform_int_distribution<int> rank(min_rank, max_rank);
  std::uniform_int_distribution<int64_t> size(1, max_size);
  Shape s;
  const int r = rank(rng);
  for (int i = 0; i < r; ++i) s.push_back(size(rng));
  return s;
}

// A shape that broadcasts to s: some axes set to 1, maybe fewer leading axes.
inline Shape broadcastable_to(std::mt19937& rng, const Shape& s) {
  std::uniform_int_distribution<int> coin(0, 2);
  const int drop = s.ndim() > 0 ? std::uniform_int_distribution<int>(0, s.ndim() - 1)(rng) : 0;
  Shape out;
  for (int i = drop; i < s.ndim(); ++i) out.push_back(coin(rng) == 0 ? 1 : s[i]);
  return out;
}

inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
inline std::vector<double> values(const Variable& v) { return v.value().to_vector<double>(); }

inline void expect_near_all(const std::vector<double>& got, const std::vector<double>& want,
                            double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

inline Tensor f64(const std::vector<double>& v, const Shape& s) {
  return from_vector<double>(v, s);
}

// Expects fn() to throw E with every fragment in its message.
template <class E, class F>
void expect_error(F&& fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

}  // namespace osprey::testing
