#include "osprey/autograd/ops/cast.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(CastTest, ForwardRoundsToTheTargetDtypeAndBackwardReturnsToTheMaster) {
  // 1 + 2^-9 is not a bfloat16 (8 bits of mantissa): it rounds to 1.
  Variable w(from_vector<float>({1.0f + 1.0f / 512.0f, -3.0f, 0.15625f}, {3}), true, "w");
  const Variable w16 = cast(w, DType::bfloat16);
  EXPECT_EQ(w16.dtype(), DType::bfloat16);
  expect_near_all(values(w16), {1.0, -3.0, 0.15625}, 0.0);
  sum(mul(w16, w16)).backward();
  ASSERT_TRUE(w.has_grad());
  EXPECT_EQ(w.grad().dtype(), DType::float32);  // the master keeps its dtype
  expect_near_all(values(w.grad()), {2.0, -6.0, 0.3125}, 0.0);
}

TEST(CastTest, SameDtypeIsTheInputItselfAndChainsAccumulateOnce) {
  Variable x = input({2, 3}, 1);
  EXPECT_TRUE(cast(x, DType::float64).is_same(x));
  // Used twice through one cast: the master's gradient sums both uses (2 per element).
  const Variable x32 = cast(x, DType::float32);
  sum(add(x32, x32)).backward();
  EXPECT_EQ(x.grad().dtype(), DType::float64);
  expect_near_all(values(x.grad()), std::vector<double>(6, 2.0), 0.0);
}

TEST(CastTest, IntegerTargetOfATrainedVariableIsAnError) {
  Variable w(from_vector<float>({1.0f}, {1}), true, "w");
  expect_error<ValueError>(
      [&] { cast(w, DType::int32); },
      {"cast: a Variable that requires grad can only be cast to a floating dtype", "to int32"});
  EXPECT_EQ(cast(w.detach(), DType::int32).dtype(), DType::int32);
}

}  // namespace
}  // namespace osprey::autograd
