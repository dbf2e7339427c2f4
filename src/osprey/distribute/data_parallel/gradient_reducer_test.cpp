// GradientReducer: the DDP bucket assignment (first bucket, byte limits), the overlap ceiling,
// and that every way of reducing gives each rank exactly the mean of the ranks' gradients.
#include "osprey/distribute/data_parallel/gradient_reducer.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "osprey/autograd/ops.h"
#include "osprey/comm/in_process.h"
#include "osprey/core/error.h"
#include "osprey/tensor/factory.h"

namespace osprey::distribute {
namespace {

using autograd::Variable;
using B = std::vector<std::vector<size_t>>;

std::vector<Variable> variables_of_sizes(const std::vector<int64_t>& numels) {
  std::vector<Variable> vars;
  vars.reserve(numels.size());
  for (int64_t n : numels) vars.emplace_back(Tensor::empty({n}, {DType::float32}), true);
  return vars;
}

TEST(GradientReducerTest, TheFirstBucketHasItsOwnLimit) {
  // Sizes in bytes: v0 40, v1 400, v2 8, v3 100; buckets fill from the last variable.
  const auto vars = variables_of_sizes({10, 100, 2, 25});
  EXPECT_EQ(assign_buckets(vars, kDefaultBucketBytes, 108), (B{{3, 2}, {1, 0}}));
  EXPECT_EQ(assign_buckets(vars, kDefaultBucketBytes, 1),
            (B{{3}, {2, 1, 0}}));  // v3 alone exceeds it
  EXPECT_EQ(assign_buckets(vars, 400, 108), (B{{3, 2}, {1}, {0}}));
  EXPECT_EQ(kDefaultFirstBucketBytes, 1024 * 1024);
}

TEST(GradientReducerTest, FashionMnistMlpDefaultsSplitOffTheFirstKernel) {
  // Dense 784-512-256-10 with biases: kernel0, bias0, kernel1, bias1, kernel2, bias2. The last
  // five (536 KB) fit the 1 MB first bucket; the first kernel (1.6 MB) is alone in the second.
  const auto vars = variables_of_sizes({784 * 512, 512, 512 * 256, 256, 256 * 10, 10});
  const B buckets = assign_buckets(vars, kDefaultBucketBytes, kDefaultFirstBucketBytes);
  EXPECT_EQ(buckets, (B{{5, 4, 3, 2, 1}, {0}}));
  const double total = 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10;
  EXPECT_DOUBLE_EQ(overlap_ceiling(vars, buckets), 1.0 - 784 * 512 / total);
  // One bucket: nothing can be reduced before backward ends.
  EXPECT_DOUBLE_EQ(
      overlap_ceiling(vars, assign_buckets(vars, kDefaultBucketBytes, kDefaultBucketBytes)), 0.0);
}

TEST(GradientReducerTest, LimitsBelowOneNameTheField) {
  const auto vars = variables_of_sizes({4});
  try {
    assign_buckets(vars, kDefaultBucketBytes, 0);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "gradient buckets: first_bucket_bytes must be at least 1. Received: 0");
  }
  try {
    assign_buckets(vars, -3, 1);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "gradient buckets: bucket_bytes must be at least 1. Received: -3");
  }
}

// One rank's model: y = tanh(x w1) w2, and a weight w0 that no op uses (no gradient), created
// first so that it lands in the last bucket.
struct RankModel {
  std::vector<Variable> w;
  explicit RankModel(uint64_t seed) {
    w = {Variable(random_normal({4}, {.seed = 3}), true, "unused"),
         Variable(random_normal({6, 5}, {.seed = 1}), true, "w1"),
         Variable(random_normal({5, 3}, {.seed = 2}), true, "w2")};
    x = Variable(random_normal({8, 6}, {.seed = seed}));
  }
  void backward() {
    for (auto& v : w) v.zero_grad();
    mean(matmul(tanh(matmul(x, w[1])), w[2])).backward();
  }
  Variable x;
};

// Each rank's gradients after 3 steps of backward + reduction, rank r on its own thread.
void expect_reduced_means(ReducerOptions options) {
  comm::InProcessGroup group(2);
  RankModel models[2] = {RankModel(10), RankModel(20)};
  // The reference: each rank's own gradients, and their mean as the in-process sum computes it.
  std::vector<std::vector<float>> expected(1);
  models[0].backward();
  models[1].backward();
  for (size_t i = 1; i < 3; ++i) {
    const Tensor a = models[0].w[i].grad(), b = models[1].w[i].grad();
    std::vector<float> m(static_cast<size_t>(a.numel()));
    for (size_t e = 0; e < m.size(); ++e) m[e] = (a.data<float>()[e] + b.data<float>()[e]) / 2.0f;
    expected.push_back(std::move(m));
  }
  auto run = [&](int r) {
    GradientReducer reducer(models[r].w, group.rank(r), options);
    for (int step = 0; step < 3; ++step) {
      reducer.begin_step();
      models[r].backward();
      reducer.finish_step();
    }
    EXPECT_EQ(reducer.stats().steps, 3);
  };
  std::thread t(run, 1);
  run(0);
  t.join();
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 1; i < 3; ++i) {
      const Tensor g = models[r].w[i].grad();
      ASSERT_EQ(g.shape(), models[r].w[i].shape());
      for (size_t e = 0; e < expected[i].size(); ++e) {
        ASSERT_EQ(g.data<float>()[e], expected[i][e])
            << "rank " << r << " w" << i << " element " << e;
      }
    }
    EXPECT_FALSE(models[r].w[0].has_grad());  // counted as zeros, still no gradient
  }
}

TEST(GradientReducerTest, EveryRankGetsExactlyTheMeanOnTheCommunicationThread) {
  expect_reduced_means({.reduce_on = ReduceOn::communication_thread});
  expect_reduced_means(
      {.bucket_bytes = 1, .first_bucket_bytes = 1, .reduce_on = ReduceOn::communication_thread});
}

TEST(GradientReducerTest, EveryRankGetsExactlyTheMeanOnTheBackwardThread) {
  expect_reduced_means({.reduce_on = ReduceOn::backward_thread});
  expect_reduced_means(
      {.bucket_bytes = 1, .first_bucket_bytes = 1, .reduce_on = ReduceOn::backward_thread});
}

TEST(GradientReducerTest, GradientsKeptAcrossStepsAccumulateOnTheReducedMean) {
  // Step 1 reduces as usual; step 2 does not zero the gradients and uses only w1, so w1 adds its
  // new contribution to the step-1 mean (then reduced again) and w2 keeps the step-1 mean: it is
  // still a view of its bucket, reduced in place (the mean of two equal values is that value).
  comm::InProcessGroup group(2);
  RankModel models[2] = {RankModel(10), RankModel(20)};
  auto second_backward = [](RankModel& m) { mean(tanh(matmul(m.x, m.w[1]))).backward(); };
  std::vector<float> m1[3], g2[2];  // the step-1 means of w1 and w2; each rank's step-2 w1 gradient
  for (int r = 0; r < 2; ++r) {
    RankModel copy(r == 0 ? 10 : 20);
    second_backward(copy);
    const Tensor g = copy.w[1].grad();
    g2[r].assign(g.data<float>(), g.data<float>() + g.numel());
  }
  auto run = [&](int r) {
    GradientReducer reducer(models[r].w, group.rank(r),
                            {.bucket_bytes = 1, .first_bucket_bytes = 1});
    reducer.begin_step();
    models[r].backward();
    reducer.finish_step();
    if (r == 0) {
      for (size_t i = 1; i < 3; ++i) {
        const Tensor g = models[0].w[i].grad();
        m1[i].assign(g.data<float>(), g.data<float>() + g.numel());
      }
    }
    group.rank(r).barrier();  // rank 0 has read the step-1 means
    reducer.begin_step();
    second_backward(models[r]);
    reducer.finish_step();
  };
  std::thread t(run, 1);
  run(0);
  t.join();
  for (int r = 0; r < 2; ++r) {
    const Tensor g1 = models[r].w[1].grad(), g2r = models[r].w[2].grad();
    for (size_t e = 0; e < m1[1].size(); ++e) {
      ASSERT_EQ(g1.data<float>()[e], ((m1[1][e] + g2[0][e]) + (m1[1][e] + g2[1][e])) / 2.0f)
          << "rank " << r;
    }
    for (size_t e = 0; e < m1[2].size(); ++e)
      ASSERT_EQ(g2r.data<float>()[e], m1[2][e]) << "rank " << r;
  }
}

TEST(GradientReducerTest, ARankWhoseStepFailsStillCompletesTheOthersCollectives) {
  // Rank 1 fails before its backward and goes straight to finish_step, which reduces all of its
  // buckets as zeros, so rank 0, blocked in its hooks' collectives, finishes with half its
  // gradients, on either thread.
  for (ReduceOn where : {ReduceOn::backward_thread, ReduceOn::communication_thread}) {
    comm::InProcessGroup group(2);
    RankModel model(10), reference(10);
    reference.backward();
    std::thread failing([&] {
      RankModel other(20);
      GradientReducer reducer(other.w, group.rank(1),
                              {.bucket_bytes = 1, .first_bucket_bytes = 1, .reduce_on = where});
      reducer.begin_step();
      reducer.finish_step();  // what MirroredStrategy does when the step throws
    });
    GradientReducer reducer(model.w, group.rank(0),
                            {.bucket_bytes = 1, .first_bucket_bytes = 1, .reduce_on = where});
    reducer.begin_step();
    model.backward();
    reducer.finish_step();
    failing.join();
    for (size_t i = 1; i < 3; ++i) {
      const Tensor g = model.w[i].grad(), full = reference.w[i].grad();
      for (int64_t e = 0; e < g.numel(); ++e)
        ASSERT_EQ(g.data<float>()[e], (full.data<float>()[e] + 0.0f) / 2.0f);
    }
  }
}

TEST(GradientReducerTest, ReductionsOnTheBackwardThreadAreNeverCountedAsHidden) {
  comm::InProcessGroup group(2);
  RankModel models[2] = {RankModel(10), RankModel(20)};
  GradientReducer::Stats stats[2];
  auto run = [&](int r) {
    // One bucket per variable: w2's and w1's are reduced inside their hooks, w0's in finish_step.
    GradientReducer reducer(
        models[r].w, group.rank(r),
        {.bucket_bytes = 1, .first_bucket_bytes = 1, .reduce_on = ReduceOn::backward_thread});
    for (int step = 0; step < 4; ++step) {
      reducer.begin_step();
      models[r].backward();
      reducer.finish_step();
    }
    stats[r] = reducer.stats();
  };
  std::thread t(run, 1);
  run(0);
  t.join();
  for (const auto& s : stats) {
    EXPECT_GT(s.in_backward_seconds, 0.0);
    EXPECT_GE(s.wait_seconds + s.in_backward_seconds, s.reduce_seconds);
    EXPECT_LE(s.hidden(), 0.0);
  }
}

}  // namespace
}  // namespace osprey::distribute
