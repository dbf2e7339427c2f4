// Top-k accuracies by hand, with in_top_k's tie rule (ties at the boundary count as in the top k).
#include "osprey/metrics/top_k.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/tensor/factory.h"

namespace osprey::metrics {
namespace {

Tensor scores() {
  return from_vector<float>({0.1f, 0.5f, 0.4f, 0.6f, 0.3f, 0.1f, 0.2f, 0.2f, 0.6f}, {3, 3});
}

TEST(SparseTopKCategoricalAccuracyTest, CountsTargetsAmongTheKHighestScores) {
  // k = 2. Row 0: target 2 (0.4) has one score above: hit. Row 1: target 2 (0.1) has two above:
  // miss. Row 2: target 0 (0.2) has one above (0.6); the tie with class 1 does not count: hit.
  SparseTopKCategoricalAccuracy top2(2);
  top2.update_state(from_vector<int64_t>({2, 2, 0}), scores());
  EXPECT_DOUBLE_EQ(top2.result(), 2.0 / 3.0);
  SparseTopKCategoricalAccuracy top1(1);
  top1.update_state(from_vector<int32_t>({1, 0, 2}, {3, 1}), scores());
  EXPECT_DOUBLE_EQ(top1.result(), 1.0);
}

TEST(SparseTopKCategoricalAccuracyTest, TiesAtTheBoundaryAreAllInTheTopK) {
  const Tensor p = from_vector<double>({0.3, 0.3, 0.3, 0.1}, {1, 4});
  for (int64_t target : {0, 1, 2}) {
    SparseTopKCategoricalAccuracy top1(1);
    top1.update_state(from_vector<int64_t>({target}), p);
    EXPECT_EQ(top1.result(), 1.0) << "target "
                                  << target;  // argmax accuracy would count only class 0
  }
  SparseTopKCategoricalAccuracy last(3);
  last.update_state(from_vector<int64_t>({3}), p);
  EXPECT_EQ(last.result(), 0.0);  // three classes score strictly higher
}

TEST(SparseTopKCategoricalAccuracyTest, LargeKNanScoresAndOutOfRangeTargets) {
  SparseTopKCategoricalAccuracy top5;  // k = 5 > 3 classes: every finite target is a hit
  top5.update_state(from_vector<int64_t>({0, 1, 2}), scores());
  EXPECT_EQ(top5.result(), 1.0);
  SparseTopKCategoricalAccuracy nan_target(5);
  nan_target.update_state(from_vector<int64_t>({0, 5}),
                          from_vector<float>({NAN, 1.0f, 0.5f, 0.5f}, {2, 2}));
  EXPECT_EQ(nan_target.result(), 0.0);  // a NaN target score and a label past the classes both miss
  try {
    SparseTopKCategoricalAccuracy(0);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "SparseTopKCategoricalAccuracy: k must be at least 1. Received: k=0");
  }
}

TEST(TopKCategoricalAccuracyTest, TakesTheTargetFromOneHotLabels) {
  TopKCategoricalAccuracy top2(2);
  top2.update_state(from_vector<float>({0, 0, 1, 0, 0, 1, 1, 0, 0}, {3, 3}), scores());
  EXPECT_DOUBLE_EQ(top2.result(), 2.0 / 3.0);
  const Tensor w = from_vector<float>({0, 0, 1});
  top2.reset_state();
  top2.update_state(from_vector<float>({0, 0, 1, 0, 0, 1, 1, 0, 0}, {3, 3}), scores(), &w);
  EXPECT_EQ(top2.result(), 1.0);
  EXPECT_EQ(top2.get_config()["k"], 2);
}

}  // namespace
}  // namespace osprey::metrics
