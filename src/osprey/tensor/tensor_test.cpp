#include "osprey/tensor/tensor.h"

#include <gtest/gtest.h>

#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey {
namespace {

Tensor iota(const Shape& s, DType d = DType::float32) {
  return arange(0.0, static_cast<double>(s.numel()), 1.0, {d}).reshape(s);
}

TEST(TensorTest, EmptyIsContiguousAndAligned) {
  Tensor t = Tensor::empty({3, 5}, {DType::float64});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.strides(), (Shape{5, 1}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  EXPECT_EQ(t.nbytes(), 120u);
  EXPECT_EQ(t.describe(), "float64[3, 5] on cpu:0");
}

// Issue 27 (found by fuzz_idx): a header may claim sizes whose strides overflow although a zero
// size means no data; the tensor is refused instead of computing overflowing strides.
TEST(TensorTest, EmptyRefusesShapesTooLargeToAddressEvenWithNoElements) {
  try {
    Tensor::empty({0, int64_t{1} << 38, int64_t{1} << 26});
    FAIL() << "accepted strides past 2^63";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "Tensor::empty: shape [0, 274877906944, 67108864] is too large to address (its "
                 "sizes, zeros counted as 1, multiply past 2^63 bytes)");
  }
  EXPECT_EQ(Tensor::empty({0, int64_t{1} << 30}).numel(), 0);
}

TEST(TensorTest, TransposeIsAViewSharingStorage) {
  Tensor x = iota({2, 3});
  Tensor t = x.transpose(0, 1);
  EXPECT_TRUE(t.shares_storage(x));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  x.set({1, 2}, 42.0);
  EXPECT_EQ(t.at({2, 1}), 42.0);
}

TEST(TensorTest, PermuteSliceSelectExpandAreViews) {
  Tensor x = iota({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.at({3, 1, 2}), x.at({1, 2, 3}));
  Tensor s = x.slice(2, 1, 4, 2);
  EXPECT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.at({1, 1, 1}), x.at({1, 1, 3}));
  EXPECT_TRUE(s.shares_storage(x));
  Tensor neg = x.slice(0, -1, 100);
  EXPECT_EQ(neg.shape(), (Shape{1, 3, 4}));
  Tensor sel = x.select(1, -1);
  EXPECT_EQ(sel.shape(), (Shape{2, 4}));
  EXPECT_EQ(sel.at({1, 0}), x.at({1, 2, 0}));
  Tensor row = iota({3});
  Tensor e = row.expand({4, 3});
  EXPECT_EQ(e.strides(), (Shape{0, 1}));
  EXPECT_EQ(e.at({3, 2}), 2.0);
  EXPECT_TRUE(e.shares_storage(row));
}

TEST(TensorTest, ReshapeIsAViewWhenStridesAllowAndACopyOtherwise) {
  Tensor x = iota({4, 6});
  Tensor v = x.reshape({2, 2, -1});
  EXPECT_TRUE(v.shares_storage(x));
  EXPECT_EQ(v.shape(), (Shape{2, 2, 6}));
  // A column slice keeps rows contiguous: splitting the row axis is still a view.
  Tensor cols = x.slice(1, 0, 3);
  EXPECT_TRUE(cols.reshape({2, 2, 3}).shares_storage(x));
  // A transpose cannot be flattened without a copy.
  Tensor t = x.transpose(0, 1);
  Tensor flat = t.reshape({24});
  EXPECT_FALSE(flat.shares_storage(x));
  EXPECT_EQ(flat.at({1}), x.at({1, 0}));
  EXPECT_THROW(t.view({24}), ValueError);
}

TEST(TensorTest, ContiguousCopiesArbitraryStridesCorrectly) {
  Tensor x = iota({3, 4, 5}, DType::float64);
  Tensor v = x.permute({2, 0, 1}).slice(0, 1, 5, 2).slice(2, 3, 0 + 4);
  Tensor c = v.contiguous();
  ASSERT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage(x));
  for (int64_t i = 0; i < c.size(0); ++i) {
    for (int64_t j = 0; j < c.size(1); ++j) {
      for (int64_t k = 0; k < c.size(2); ++k) {
        EXPECT_EQ(c.at({i, j, k}), x.at({j, k + 3, 1 + 2 * i}));
      }
    }
  }
  EXPECT_TRUE(x.contiguous().shares_storage(x));
}

TEST(TensorTest, CastsRoundAndSaturate) {
  Tensor x = from_vector<float>({1.5f, -2.7f, 1e10f, 300.0f}, {4});
  std::vector<int32_t> i = x.to_vector<int32_t>();
  EXPECT_EQ(i[0], 1);
  EXPECT_EQ(i[1], -2);
  EXPECT_EQ(i[2], 2147483647);
  std::vector<int8_t> b = x.to_vector<int8_t>();
  EXPECT_EQ(b[3], 127);
  Tensor h = x.to(DType::bfloat16);
  EXPECT_EQ(h.dtype(), DType::bfloat16);
  EXPECT_EQ(h.at({0}), 1.5);
}

TEST(TensorTest, ElementAccessChecksIndices) {
  Tensor x = zeros({2, 3});
  EXPECT_EQ(x.at({-1, -1}), 0.0);
  try {
    x.at({2, 0});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "at: index 2 is out of range for axis 0 of size 2");
  }
  EXPECT_THROW(x.at({0}), ValueError);
  EXPECT_THROW(x.item(), ValueError);
  EXPECT_THROW(x.data<double>(), ValueError);
}

TEST(TensorTest, ViewErrorsNameShapes) {
  Tensor x = zeros({2, 3});
  try {
    x.reshape({4, 2});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(
        e.what(),
        "reshape: cannot reshape a tensor of shape [2, 3] (6 elements) into [4, 2] (8 elements)");
  }
  EXPECT_THROW(x.expand({3, 3}), ValueError);
  EXPECT_THROW(x.permute({0, 0}), ValueError);
  EXPECT_THROW(x.transpose(0, 2), ValueError);
  EXPECT_THROW(x.squeeze(0), ValueError);
  EXPECT_THROW(x.as_strided({3, 3}, {3, 1}, 0), ValueError);
}

TEST(TensorTest, PrintsLikeNumPyAndTruncates) {
  Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(x.to_string(), "tensor([[1.0000, 2.0000],\n        [3.0000, 4.0000]], dtype=float32)");
  EXPECT_EQ(from_vector<int64_t>({7}, {}).to_string(), "tensor(7, dtype=int64)");
  EXPECT_EQ(from_vector<bool>({true, false}).to_string(), "tensor([True, False], dtype=bool)");
  const std::string big = arange(2000).to_string();
  EXPECT_EQ(big, "tensor([0, 1, 2, ..., 1997, 1998, 1999], dtype=int64)");
}

TEST(TensorTest, UnsqueezeSqueezeFlattenRoundTrip) {
  Tensor x = iota({2, 3});
  Tensor u = x.unsqueeze(1);
  EXPECT_EQ(u.shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(u.squeeze(1).shape(), x.shape());
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(iota({2, 3, 4}).flatten(1).shape(), (Shape{2, 12}));
}

TEST(TensorTest, CopyBroadcastsAndCasts) {
  Tensor dst = zeros({2, 3}, {DType::float64});
  dst.copy_(from_vector<int32_t>({1, 2, 3}));
  EXPECT_EQ(dst.at({1, 2}), 3.0);
  Tensor view = dst.slice(1, 1, 3);
  view.fill_(9.0);
  EXPECT_EQ(dst.at({0, 0}), 1.0);
  EXPECT_EQ(dst.at({0, 1}), 9.0);
}

}  // namespace
}  // namespace osprey
