#include "osprey/data/dataset.h"

#include <gtest/gtest.h>

#include "osprey/data/files_test.h"
#include "osprey/data/labeled_arrays.h"
#include "osprey/tensor/factory.h"

namespace osprey::data {
namespace {

using testing::values;

// x: [n, 2] float32 with row i = {i, 10 i}; y: [n] int64 = i.
Element toy(int64_t n) {
  std::vector<float> xs;
  std::vector<int64_t> ys;
  for (int64_t i = 0; i < n; ++i) {
    xs.push_back(static_cast<float>(i));
    xs.push_back(static_cast<float>(10 * i));
    ys.push_back(i);
  }
  return {from_vector(xs, {n, 2}), from_vector(ys)};
}

TEST(DatasetTest, FromTensorsSlicesEveryTensorAlongAxisZero) {
  Dataset ds = Dataset::from_tensors(toy(5));
  EXPECT_EQ(ds.cardinality(), 5);
  int64_t i = 0;
  for (auto& e : ds) {
    ASSERT_EQ(e.size(), 2u);
    EXPECT_EQ(e[0].shape(), (Shape{2}));
    EXPECT_EQ(e[1].shape(), Shape{});
    EXPECT_EQ(e[0].at({1}), 10.0 * static_cast<double>(i));
    EXPECT_EQ(e.y().item(), static_cast<double>(i));
    ++i;
  }
  EXPECT_EQ(i, 5);
}

TEST(DatasetTest, FromTensorsRejectsTensorsOfDifferentLengths) {
  try {
    Dataset::from_tensors({zeros({4, 2}), zeros({3})});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Component 0 has 4 rows ([4, 2]), component 1 has 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(DatasetTest, IteratingTwiceGivesTwoFullEpochs) {
  Dataset ds = Dataset::range(4);
  EXPECT_EQ(values(ds), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(values(ds), (std::vector<int64_t>{0, 1, 2, 3}));
  auto it = ds.iterator();
  int n = 0;
  while (auto e = it.next()) ++n;
  EXPECT_EQ(n, 4);
  EXPECT_FALSE(it.next().has_value());  // stays at the end
}

TEST(DatasetTest, AnIteratorIsARangeAndCanSkip) {
  auto it = Dataset::range(10).iterator();
  EXPECT_EQ(it.skip(3), 3);
  std::vector<int64_t> rest;
  for (Element& e : it) {
    rest.push_back(static_cast<int64_t>(e[0].item()));
    if (rest.size() == 2) break;
  }
  EXPECT_EQ(rest, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(it.next()->x().item(), 5.0);  // a cursor reads ahead only when advanced
  EXPECT_EQ(it.skip(100), 4);
}

TEST(DatasetTest, DefaultDatasetIsEmpty) {
  Dataset ds;
  EXPECT_EQ(ds.cardinality(), 0);
  EXPECT_TRUE(values(ds).empty());
}

TEST(DatasetTest, BatchStacksRowsAndKeepsTheRemainderUnlessDropped) {
  Dataset ds = Dataset::from_tensors(toy(7));
  Dataset b = ds.batch(3);
  EXPECT_EQ(b.cardinality(), 3);
  std::vector<int64_t> sizes;
  for (auto& e : b) {
    sizes.push_back(e[0].size(0));
    EXPECT_EQ(e[0].size(1), 2);
    EXPECT_EQ(e[1].dtype(), DType::int64);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(ds.batch(3, true).cardinality(), 2);
  EXPECT_EQ(values(ds.batch(3, true), 1), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(DatasetTest, BatchCopiesShuffledRowsIntoAFreshContiguousTensor) {
  Element src = toy(10);
  Dataset b = Dataset::from_tensors(src).shuffle(10, 3).batch(4);
  auto it = b.iterator();
  auto e = it.next();
  ASSERT_TRUE(e);
  EXPECT_TRUE((*e)[0].is_contiguous());
  EXPECT_FALSE((*e)[0].shares_storage(src[0]));
  const auto ys = (*e)[1].to_vector<int64_t>();
  const auto xs = (*e)[0].to_vector<float>();
  for (size_t r = 0; r < ys.size(); ++r)
    EXPECT_EQ(xs[2 * r + 1], 10.0f * static_cast<float>(ys[r]));
}

TEST(DatasetTest, BatchOfConsecutiveRowsIsAViewWithoutCopy) {
  Element src = toy(8);
  auto it = Dataset::from_tensors(src).batch(4).iterator();
  it.next();
  auto e = it.next();
  ASSERT_TRUE(e);
  EXPECT_TRUE((*e)[0].shares_storage(src[0]));
  EXPECT_EQ((*e)[0].at({0, 1}), 40.0);
  EXPECT_EQ((*e)[1].to_vector<int64_t>(), (std::vector<int64_t>{4, 5, 6, 7}));
}

TEST(DatasetTest, BatchRejectsElementsOfDifferentShapesNamingThem) {
  Dataset ds = Dataset::from_generator([](uint64_t) {
    return Generator([i = 0]() mutable -> std::optional<Element> {
      if (i == 3) return std::nullopt;
      return Element{zeros({i++ == 1 ? 3 : 2})};
    });
  });
  try {
    values(ds.batch(3));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("element 0 is float32[2], element 1 is float32[3]"),
              std::string::npos)
        << e.what();
  }
}

TEST(DatasetTest, UnbatchUndoesBatch) {
  Dataset ds = Dataset::from_tensors(toy(7));
  Dataset u = ds.batch(3).unbatch();
  EXPECT_EQ(u.cardinality(), kUnknown);
  EXPECT_EQ(values(u, 1), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  auto it = u.iterator();
  EXPECT_EQ(it.next()->x().shape(), (Shape{2}));
}

TEST(DatasetTest, UnbatchRejectsScalars) {
  EXPECT_THROW(values(Dataset::range(3).unbatch()), ValueError);
}

TEST(DatasetTest, DescribeListsThePipelineSourceFirst) {
  Dataset ds = Dataset::from_tensors(toy(10)).shuffle(5, 1).batch(2).prefetch(kAutotune);
  EXPECT_EQ(ds.describe(), "FromTensors(10) -> Shuffle(5) -> Batch(2) -> Prefetch(autotune)");
}

TEST(DatasetTest, CopiesShareTheEpochCounter) {
  Dataset ds = Dataset::range(100).shuffle(100, 9);
  Dataset copy = ds;  // NOLINT(performance-unnecessary-copy-initialization): the copy is tested
  const auto e0 = values(ds);
  const auto e1 = values(copy);  // epoch 1, not a replay of epoch 0
  EXPECT_NE(e0, e1);
  EXPECT_EQ(values(ds.iterator(0)), e0);
  EXPECT_EQ(values(ds.iterator(1)), e1);
}

TEST(DatasetTest, SplitTailReturnsHeadAndTail) {
  auto [head, tail] = Dataset::range(10).split_tail(3);
  EXPECT_EQ(head.cardinality(), 7);
  EXPECT_EQ(tail.cardinality(), 3);
  EXPECT_EQ(values(tail), (std::vector<int64_t>{7, 8, 9}));
  auto [a, b] = Dataset::range(10).split(0.75);
  EXPECT_EQ(values(a), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(b), (std::vector<int64_t>{7, 8, 9}));
}

TEST(DatasetTest, SplitRefusesUnknownCardinalityAndReshuffledOrder) {
  auto odd = Dataset::range(10).filter(
      [](const Element& e) { return static_cast<int64_t>(e[0].item()) % 2; });
  EXPECT_THROW(odd.split_tail(2), ValueError);
  try {
    Dataset::range(10).shuffle(10, 1).split(0.5);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("reshuffles every epoch"), std::string::npos) << e.what();
  }
  auto [h, t] =
      Dataset::range(10).shuffle(10, {.seed = 1, .reshuffle_each_iteration = false}).split_tail(4);
  auto all = values(h);
  for (int64_t v : values(t)) all.push_back(v);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, values(Dataset::range(10)));
}

TEST(DatasetTest, LabeledArraysSplitIntoViewsAndConvertToADataset) {
  Element e = toy(10);
  LabeledArrays arrays{e[0], e[1]};
  EXPECT_EQ(arrays.size(), 10);
  auto [train, val] = arrays.split_tail(4);
  EXPECT_EQ(train.size(), 6);
  EXPECT_EQ(val.size(), 4);
  EXPECT_TRUE(val.x.shares_storage(e[0]));
  EXPECT_EQ(val.y.to_vector<int64_t>(), (std::vector<int64_t>{6, 7, 8, 9}));
  Dataset ds = train;  // implicit conversion
  EXPECT_EQ(ds.cardinality(), 6);
  EXPECT_EQ(train.batch(4).cardinality(), 2);
  EXPECT_EQ(values(val.dataset(), 1), (std::vector<int64_t>{6, 7, 8, 9}));
}

// tf.data's padded_batch: every component padded to the batch's largest size along each axis.
TEST(DatasetTest, PaddedBatchPadsEachComponentToTheLongestInTheBatch) {
  const std::vector<std::vector<int64_t>> seqs = {{1, 2, 3}, {4}, {5, 6}, {7, 8, 9, 10}, {}};
  const Dataset ds = Dataset::from_generator([seqs](uint64_t) {
    return [seqs, i = size_t{0}]() mutable -> std::optional<Element> {
      if (i == seqs.size()) return std::nullopt;
      const auto& s = seqs[i];
      Element e{from_vector<int64_t>(s, Shape{static_cast<int64_t>(s.size())}),
                from_vector<int64_t>({static_cast<int64_t>(i)}, Shape{})};
      ++i;
      return e;
    };
  });
  const Dataset batched = ds.padded_batch(2, /*padding_value=*/-1);
  EXPECT_EQ(batched.describe(), "FromGenerator -> PaddedBatch(2)");
  std::vector<Shape> shapes;
  for (auto& b : batched) shapes.push_back(b[0].shape());
  EXPECT_EQ(shapes, (std::vector<Shape>{Shape{2, 3}, Shape{2, 4}, Shape{1, 0}}));
  EXPECT_EQ(values(batched), (std::vector<int64_t>{1, 2, 3, 4, -1, -1, 5, 6, -1, -1, 7, 8, 9, 10}));
  EXPECT_EQ(values(batched, 1), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(ds.padded_batch(2, 0, /*drop_remainder=*/true), 1),
            (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(DatasetTest, PaddedBatchPadsEveryAxisAndNamesRankMismatches) {
  const Tensor a = from_vector<float>({1, 2, 3, 4}, {2, 2});
  const Tensor b = from_vector<float>({5, 6, 7}, {1, 3});
  const Element out = pad_and_stack_elements({Element{a}, Element{b}}, 0.5);
  EXPECT_EQ(out[0].shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(out[0].to_vector<float>(),
            (std::vector<float>{1, 2, 0.5, 3, 4, 0.5, 5, 6, 7, 0.5, 0.5, 0.5}));
  try {
    pad_and_stack_elements({Element{a}, Element{from_vector<float>({1}, {1})}}, 0);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "padded_batch: every element must have one rank and dtype per component. "
                 "Component 0: element 0 is float32[2, 2], element 1 is float32[1]");
  }
}

}  // namespace
}  // namespace osprey::data
