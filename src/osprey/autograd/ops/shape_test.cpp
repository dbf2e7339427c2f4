#include "osprey/autograd/ops/shape.h"

#include <gtest/gtest.h>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(ShapeTest, ViewOpGradients) {
  const Shape s{2, 3, 4};
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) {
        return reshape(v[0], {4, -1});
      },
      (Vars{input(s, 1, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return flatten(v[0], 1); },
                          (Vars{input(s, 2, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return transpose(v[0], 0, 2); },
                          (Vars{input(s, 3, true)}));
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) {
        return permute(v[0], {2, 0, 1});
      },
      (Vars{input(s, 4, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return slice(v[0], 2, 1, -1); },
                          (Vars{input(s, 5, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return slice(v[0], 1, 0, 3, 2); },
                          (Vars{input(s, 6)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return narrow(v[0], 0, 1, 1); }, (Vars{input(s, 7)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return select(v[0], 1, -1); },
                          (Vars{input(s, 8, true)}));
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) {
        return expand(v[0], {2, 3, 4});
      },
      (Vars{input({3, 1}, 9, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return squeeze(v[0], 1); },
                          (Vars{input({2, 1, 3}, 10, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return unsqueeze(v[0], 0); },
                          (Vars{input({2, 3}, 11, true)}));
}

TEST(ShapeTest, CopyingOpGradients) {
  Variable a = input({2, 3}, 20, true), b = input({2, 1}, 21), c = input({2, 2}, 22);
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return concat(v, 1); }, (Vars{a, b, c}));
  Variable d = input({2, 3}, 23), e = input({2, 3}, 24, true);
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return stack(v, 1); }, (Vars{a, d, e}));
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) {
        return pad(v[0], {{1, 0}, {2, 1}}, 0.5);
      },
      (Vars{input({2, 3}, 25, true)}));
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) {
        auto parts = split(v[0], {1, 3}, -1);
        return mul(parts[0], sum(parts[1], {-1}, true));
      },
      (Vars{input({3, 4}, 26, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return flip(v[0], 1); },
                          (Vars{input({2, 3, 2}, 27, true)}));
}

TEST(ShapeTest, ViewsShareStorageAndCopiesDoNot) {
  const Variable x = input({2, 3}, 30);
  EXPECT_TRUE(transpose(x, 0, 1).value().shares_storage(x.value()));
  EXPECT_TRUE(slice(x, 1, 1, 3).value().shares_storage(x.value()));
  EXPECT_TRUE(split(x, {1, 2}, 1)[1].value().shares_storage(x.value()));
  EXPECT_FALSE(concat({x, x}, 0).value().shares_storage(x.value()));
}

TEST(ShapeTest, ForwardValues) {
  const Variable x(f64({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(values(transpose(x, 0, 1)), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values(slice(x, 1, -2, 3)), (std::vector<double>{2, 3, 5, 6}));
  EXPECT_EQ(values(concat({x, x}, 1)), (std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  EXPECT_EQ(stack({x, x}, 0).shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(values(pad(x, {{0, 0}, {1, 0}})), (std::vector<double>{0, 1, 2, 3, 0, 4, 5, 6}));
  EXPECT_EQ(values(flip(x, 1)), (std::vector<double>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(values(flip(x, -2)), (std::vector<double>{4, 5, 6, 1, 2, 3}));
}

TEST(ShapeTest, BadArgumentsAreErrors) {
  const Variable x = input({2, 3}, 40);
  expect_error<ValueError>([&] { transpose(x, 0, 2); }, {"transpose", "axis 2", "rank 2"});
  expect_error<ValueError>([&] { reshape(x, {4, 2}); }, {"[4, 2]"});
  expect_error<ValueError>([&] { split(x, {1, 1}, 1); }, {"split", "add up to 2", "size 3"});
  expect_error<ValueError>(
      [&] {
        concat({x, input({3, 3}, 41)}, 1);
      },
      {"concat", "[2, 3]", "[3, 3]"});
  expect_error<ValueError>([&] { concat({x, Variable()}); }, {"concat", "undefined"});
}

}  // namespace
}  // namespace osprey::autograd
