#include "osprey/data/text/language_model_dataset.h"

#include <gtest/gtest.h>

#include <set>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"
#include "osprey/tensor/factory.h"

namespace osprey::data::text {
namespace {

using osprey::testing::error_of;

Tensor stream(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 100 + i;
  return from_vector<int64_t>(v, {n});
}

TEST(LanguageModelDatasetTest, WindowsInOrderWithTheNextTokenAsTarget) {
  const Dataset ds = language_model_dataset(stream(10), {.block_size = 3});
  std::vector<std::vector<int64_t>> xs, ys;
  for (auto& e : ds) {
    xs.push_back(e[0].to_vector<int64_t>());
    ys.push_back(e[1].to_vector<int64_t>());
  }
  // Non-overlapping windows of 3 that leave a next token: offsets 0, 3, 6 (6 + 3 < 10).
  ASSERT_EQ(xs.size(), 3u);
  EXPECT_EQ(xs[0], (std::vector<int64_t>{100, 101, 102}));
  EXPECT_EQ(ys[0], (std::vector<int64_t>{101, 102, 103}));
  EXPECT_EQ(xs[2], (std::vector<int64_t>{106, 107, 108}));
  EXPECT_EQ(ys[2], (std::vector<int64_t>{107, 108, 109}));
  EXPECT_EQ(ds.cardinality(), 3);
  // stride 1: every offset from 0 to n - T - 1.
  EXPECT_EQ(language_model_dataset(stream(10), {.block_size = 3, .stride = 1}).cardinality(), 7);
}

TEST(LanguageModelDatasetTest, RandomWindowsAreReproducibleAndDifferEachEpoch) {
  const LanguageModelOptions o{.block_size = 4, .samples_per_epoch = 2000, .seed = 7};
  const Dataset ds = language_model_dataset(stream(50), o);
  auto offsets = [](const Dataset& d) {
    std::vector<int64_t> first;
    for (auto& e : d) {
      const auto x = e[0].to_vector<int64_t>();
      const auto y = e[1].to_vector<int64_t>();
      for (size_t j = 0; j < x.size(); ++j) EXPECT_EQ(y[j], x[j] + 1);
      first.push_back(x[0] - 100);
    }
    return first;
  };
  const std::vector<int64_t> epoch0 = offsets(ds), epoch1 = offsets(ds);
  ASSERT_EQ(epoch0.size(), 2000u);
  EXPECT_NE(epoch0, epoch1);                                          // a new draw each epoch
  EXPECT_EQ(offsets(language_model_dataset(stream(50), o)), epoch0);  // same seed, same epoch 0
  const std::set<int64_t> seen(epoch0.begin(), epoch0.end());
  EXPECT_EQ(*seen.begin(), 0);    // every offset in [0, 46) is drawn in 2000 tries,
  EXPECT_EQ(*seen.rbegin(), 45);  // the last one that leaves a target
  EXPECT_EQ(seen.size(), 46u);
  // Batched, as training takes them.
  auto it = ds.batch(8).iterator();
  const auto b = it.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ((*b)[0].shape(), (Shape{8, 4}));
  EXPECT_EQ((*b)[1].shape(), (Shape{8, 4}));
}

TEST(LanguageModelDatasetTest, BadArgumentsAreNamed) {
  EXPECT_EQ(error_of<ValueError>([] { language_model_dataset(stream(4), {.block_size = 4}); }),
            "language_model_dataset: the stream of 4 tokens is too short for block_size 4 (a "
            "window needs block_size + 1 tokens)");
  EXPECT_EQ(error_of<ValueError>([] { language_model_dataset(stream(9), {.block_size = 0}); }),
            "language_model_dataset: block_size must be positive. Received: 0");
  EXPECT_EQ(error_of<ValueError>([] {
              language_model_dataset(zeros({3, 3}, {DType::int64}), {.block_size = 1});
            }),
            "language_model_dataset: tokens must be an int64 stream [n]. Received: int64 [3, 3]");
  EXPECT_EQ(error_of<ValueError>([] { split_tokens(stream(9), 1.0); }),
            "split_tokens: fraction must be between 0 and 1. Received: 1");
}

}  // namespace
}  // namespace osprey::data::text
