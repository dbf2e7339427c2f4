#include "osprey/data/sequences.h"

#include <gtest/gtest.h>

#include <numeric>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"
#include "osprey/tensor/factory.h"

namespace osprey::data {
namespace {

using osprey::testing::error_of;

Tensor steps(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0);
  return from_vector<double>(v, {n});
}

// The examples of keras.utils.pad_sequences's documentation.
TEST(PadSequencesTest, KerasDocumentationExamples) {
  const std::vector<std::vector<int64_t>> seqs{{1}, {2, 3}, {4, 5, 6}};
  EXPECT_EQ(pad_sequences(seqs).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 1, 0, 2, 3, 4, 5, 6}));
  EXPECT_EQ(pad_sequences(seqs, {.value = -1}).to_vector<int64_t>(),
            (std::vector<int64_t>{-1, -1, 1, -1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(pad_sequences(seqs, {.padding = "post"}).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0, 0, 2, 3, 0, 4, 5, 6}));
  const Tensor two = pad_sequences(seqs, {.maxlen = 2});
  EXPECT_EQ(two.shape(), (Shape{3, 2}));
  EXPECT_EQ(two.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 5, 6}));
  EXPECT_EQ(pad_sequences(seqs, {.maxlen = 2, .truncating = "post"}).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(error_of<ValueError>([&] { pad_sequences(seqs, {.padding = "left"}); }),
            "pad_sequences: padding must be 'pre' or 'post'. Received: padding='left'");
}

// keras.utils.timeseries_dataset_from_array's documented example 1: indices 0..98, windows of 10
// sampled every 2 steps, starting every 3: [0 2 .. 18], [3 5 .. 21], ..., last [78 80 .. 96].
TEST(TimeseriesDatasetTest, KerasDocumentationExampleWindows) {
  const Dataset ds = timeseries_dataset_from_array(
      steps(99), Tensor(),
      {.sequence_length = 10, .sequence_stride = 3, .sampling_rate = 2, .batch_size = 0});
  std::vector<std::vector<double>> w;
  for (auto& e : ds) w.push_back(e[0].to_vector<double>());
  ASSERT_EQ(w.size(), 27u);
  EXPECT_EQ(w[0], (std::vector<double>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}));
  EXPECT_EQ(w[1], (std::vector<double>{3, 5, 7, 9, 11, 13, 15, 17, 19, 21}));
  EXPECT_EQ(w[26], (std::vector<double>{78, 80, 82, 84, 86, 88, 90, 92, 94, 96}));
}

// Example 2: the past 10 steps predict the next: inputs data[:-10], targets data[10:].
TEST(TimeseriesDatasetTest, KerasDocumentationExampleTargetsAndBatches) {
  const Tensor data = steps(50);
  const Dataset ds = timeseries_dataset_from_array(data.slice(0, 0, 40), data.slice(0, 10, 50),
                                                   {.sequence_length = 10, .batch_size = 8});
  auto it = ds.iterator();
  const auto first = it.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)[0].shape(), (Shape{8, 10}));
  EXPECT_EQ((*first)[0].slice(0, 0, 1).to_vector<double>(),
            (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ((*first)[1].to_vector<double>(), (std::vector<double>{10, 11, 12, 13, 14, 15, 16, 17}));
  EXPECT_EQ(ds.cardinality(), 4);  // 31 windows in batches of 8
}

TEST(TimeseriesDatasetTest, ShuffledWindowsAreTheSameSetInAnotherOrderEachEpoch) {
  const Dataset ds = timeseries_dataset_from_array(steps(30), steps(30),
                                                   {.sequence_length = 3,
                                                    .batch_size = 0,
                                                    .shuffle = true,
                                                    .seed = 5,
                                                    .start_index = 2,
                                                    .end_index = 20});
  auto starts = [&] {
    std::vector<double> s;
    for (auto& e : ds) {
      EXPECT_EQ(e[1].item(), e[0].to_vector<double>()[0]);  // the target of the start
      s.push_back(e[1].item());
    }
    return s;
  };
  const std::vector<double> a = starts(), b = starts();
  EXPECT_NE(a, b);
  std::vector<double> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> want(16);  // windows start at 2..17 (a window of 3 ends before 20)
  std::iota(want.begin(), want.end(), 2.0);
  EXPECT_EQ(sorted, want);
}

TEST(TimeseriesDatasetTest, BadArgumentsAreNamed) {
  EXPECT_EQ(error_of<ValueError>([] {
              timeseries_dataset_from_array(steps(10), Tensor(), {.sequence_length = 20});
            }),
            "timeseries_dataset_from_array: no window of 20 steps (sampling_rate 1) fits in the "
            "10 steps from start_index 0 to end_index 10");
  EXPECT_EQ(error_of<ValueError>(
                [] { timeseries_dataset_from_array(steps(10), steps(9), {.sequence_length = 2}); }),
            "timeseries_dataset_from_array: targets must have one row per step of data (10). "
            "Received: [9]");
  EXPECT_EQ(error_of<ValueError>([] {
              timeseries_dataset_from_array(steps(10), Tensor(),
                                            {.sequence_length = 2, .end_index = 11});
            }),
            "timeseries_dataset_from_array: expected 0 <= start_index < end_index <= 10 (the "
            "length of data). Received: start_index=0, end_index=11");
}

}  // namespace
}  // namespace osprey::data
