#include "osprey/autograd/ops/embedding.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(EmbeddingTest, GradientWithRepeatedIndices) {
  const Tensor ids = from_vector<int64_t>({0, 3, 3, 1, 0, 2}, {2, 3});
  OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return embedding(v[0], ids); },
                          (Vars{input({5, 2}, 1, true)}));
  const Tensor ids32 = from_vector<int32_t>({4, 4}, {2});
  OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return embedding(v[0], ids32); },
                          (Vars{input({5, 3}, 2)}));
}

TEST(EmbeddingTest, GathersRowsAndScatterAddsGradients) {
  Variable table(f64({0, 1, 10, 11, 20, 21}, {3, 2}), true);
  const Tensor ids = from_vector<int64_t>({2, 0, 2}, {3});
  const Variable e = embedding(table, ids);
  EXPECT_EQ(e.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(e), (std::vector<double>{20, 21, 0, 1, 20, 21}));
  sum(e).backward();
  EXPECT_EQ(values(table.grad()), (std::vector<double>{1, 1, 0, 0, 2, 2}));
}

TEST(EmbeddingTest, BadIndicesAreErrors) {
  const Variable table = input({3, 2}, 1);
  expect_error<ValueError>([&] { embedding(table, from_vector<float>({1.0f}, {1})); },
                           {"embedding", "int32 or int64", "float32"});
  expect_error<ValueError>([&] { embedding(table, from_vector<int64_t>({3}, {1})); }, {"3"});
  expect_error<ValueError>([] { embedding(input({6}, 1), from_vector<int64_t>({0}, {1})); },
                           {"embedding", "2-D", "[6]"});
}

}  // namespace
}  // namespace osprey::autograd
