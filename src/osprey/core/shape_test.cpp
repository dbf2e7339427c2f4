// Shape: element counts, printing, broadcasting and axis checks, and their error messages.
#include "osprey/core/shape.h"

#include <gtest/gtest.h>

#include <string>

#include "osprey/core/error.h"

namespace osprey {
namespace {

// The message of the ValueError fn throws, or "" (with a test failure) when it throws none.
template <class Fn>
std::string value_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ValueError thrown";
  return "";
}

TEST(ShapeTest, NumelIsTheProductOfTheDimsAndOneForAScalar) {
  EXPECT_EQ(Shape({128, 784}).numel(), 100352);
  EXPECT_EQ(Shape({2, 3, 4}).numel(), 24);
  EXPECT_EQ(Shape({5, 0, 3}).numel(), 0);
  EXPECT_EQ(Shape().numel(), 1);
  EXPECT_TRUE(Shape().empty());
  EXPECT_EQ(Shape({3, 1}).ndim(), 2);
}

TEST(ShapeTest, ToStringPrintsTheDimsInBrackets) {
  EXPECT_EQ(Shape({128, 784}).to_string(), "[128, 784]");
  EXPECT_EQ(Shape({7}).to_string(), "[7]");
  EXPECT_EQ(Shape().to_string(), "[]");
}

TEST(ShapeTest, EditingAndComparingKeepsTheDimsInOrder) {
  Shape s{2, 3};
  s.push_back(4);
  s.insert(0, 1);
  EXPECT_EQ(s, Shape({1, 2, 3, 4}));
  s.erase(1);
  EXPECT_EQ(s, Shape({1, 3, 4}));
  EXPECT_NE(s, Shape({1, 3}));
  EXPECT_EQ(s.at(-1), 4);
  EXPECT_EQ(s.to_vector(), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(Shape(std::vector<int64_t>{5, 6}), Shape({5, 6}));
  EXPECT_EQ(Shape::filled(3, 7), Shape({7, 7, 7}));
}

TEST(ShapeTest, MoreThanEightDimsIsAValueError) {
  EXPECT_EQ(value_error_of([] {
              Shape({1, 2, 3, 4, 5, 6, 7, 8, 9});
            }),
            "Shape: at most 8 dimensions are supported. Received: 9 dimensions");
  Shape s = Shape::filled(kMaxDims, 1);
  EXPECT_EQ(value_error_of([&] { s.push_back(2); }), "Shape: at most 8 dimensions are supported");
  EXPECT_THROW(Shape::filled(9, 1), ValueError);
  EXPECT_NO_THROW(Shape({1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(ShapeTest, BroadcastFollowsNumPyRules) {
  EXPECT_EQ(broadcast_shapes(Shape({8, 1, 6, 1}), Shape({7, 1, 5}), "add"), Shape({8, 7, 6, 5}));
  EXPECT_EQ(broadcast_shapes(Shape({3}), Shape(), "mul"), Shape({3}));
  EXPECT_EQ(broadcast_shapes(Shape(), Shape(), "mul"), Shape());
  EXPECT_EQ(broadcast_shapes(Shape({0, 1}), Shape({1, 4}), "sub"), Shape({0, 4}));
  EXPECT_EQ(broadcast_shapes(Shape({2, 3}), Shape({2, 3}), "sub"), Shape({2, 3}));
}

TEST(ShapeTest, BroadcastErrorNamesTheOpAndBothShapes) {
  EXPECT_EQ(value_error_of([] {
              broadcast_shapes(Shape({2, 3}), Shape({4, 3}), "add");
            }),
            "add: shapes [2, 3] and [4, 3] cannot be broadcast together (dimension 0: 2 vs 4)");
  const std::string msg = value_error_of([] {
    broadcast_shapes(Shape({5, 2}), Shape({3}), "maximum");
  });
  EXPECT_NE(msg.find("maximum"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5, 2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3]"), std::string::npos) << msg;
}

TEST(ShapeTest, NormalizeAxisWrapsNegativesAndRejectsOutOfRange) {
  EXPECT_EQ(normalize_axis(-1, 3, "sum"), 2);
  EXPECT_EQ(normalize_axis(-3, 3, "sum"), 0);
  EXPECT_EQ(normalize_axis(2, 3, "sum"), 2);
  EXPECT_EQ(normalize_axis(0, 0, "sum"), 0);  // a scalar accepts axis 0 and -1, as PyTorch
  EXPECT_EQ(normalize_axis(-1, 0, "sum"), 0);
  EXPECT_EQ(value_error_of([] { normalize_axis(3, 3, "sum"); }),
            "sum: axis 3 is out of range for a tensor of rank 3 (expected an axis in [-3, 2])");
  EXPECT_EQ(
      value_error_of([] { normalize_axis(-4, 3, "softmax"); }),
      "softmax: axis -4 is out of range for a tensor of rank 3 (expected an axis in [-3, 2])");
  EXPECT_THROW(Shape({2, 2}).at(2), ValueError);
}

TEST(ShapeTest, ContiguousStridesAreRowMajor) {
  EXPECT_EQ(contiguous_strides(Shape({2, 3, 4})), Shape({12, 4, 1}));
  EXPECT_EQ(contiguous_strides(Shape({5})), Shape({1}));
  EXPECT_EQ(contiguous_strides(Shape()), Shape());
  EXPECT_EQ(contiguous_strides(Shape({3, 0, 2})), Shape({2, 2, 1}));  // zero dims count as one
}

}  // namespace
}  // namespace osprey
