#include "osprey/autograd/ops/softmax.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(SoftmaxTest, GradientsOverEachAxis) {
  for (int axis : {0, 1, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    OSPREY_EXPECT_GRADCHECK([axis](const Vars& v) { return softmax(v[0], axis); },
                            (Vars{input({3, 1, 4}, 10 + static_cast<uint64_t>(axis + 1), true)}));
    OSPREY_EXPECT_GRADCHECK([axis](const Vars& v) { return log_softmax(v[0], axis); },
                            (Vars{input({3, 1, 4}, 20 + static_cast<uint64_t>(axis + 1), true)}));
  }
}

// Values from PyTorch 1.13 (torch.nn.functional.softmax / log_softmax, float64).
TEST(SoftmaxTest, ForwardMatchesPyTorch) {
  const Variable x(f64({1, 2, 3, -1, 0, 5}, {2, 3}));
  expect_near_all(values(softmax(x)),
                  {0.0900305731704, 0.244728471055, 0.665240955775, 0.00245611490445,
                   0.00667641251338, 0.990867472582},
                  1e-12);
  expect_near_all(values(log_softmax(x)),
                  {-2.40760596444, -1.40760596444, -0.407605964444, -6.00917448459, -5.00917448459,
                   -0.00917448459173},
                  1e-11);
}

TEST(SoftmaxTest, AxisOutOfRangeNamesTheOp) {
  expect_error<ValueError>([] { softmax(input({2, 3}, 1), 2); }, {"softmax", "axis 2", "rank 2"});
}

// Mixed precision: 16-bit logits are normalized in float32 and the probabilities stay float32;
// the gradient returns in the logits' dtype.
TEST(SoftmaxTest, SixteenBitInputsComputeInFloat32) {
  for (DType d : {DType::bfloat16, DType::float16}) {
    Variable x(randn({4, 7}, 3).to(d), true);
    const Variable y = softmax(x);
    EXPECT_EQ(y.dtype(), DType::float32);
    Variable x32(x.value().to(DType::float32), true);
    const Variable y32 = softmax(x32);
    expect_near_all(values(y), values(y32), 0.0);  // the same float32 computation
    sum(mul(y, Variable(randn({4, 7}, 4).to(DType::float32)))).backward();
    EXPECT_EQ(x.grad().dtype(), d);
  }
}

}  // namespace
}  // namespace osprey::autograd
