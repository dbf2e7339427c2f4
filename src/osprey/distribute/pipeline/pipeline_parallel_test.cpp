// PipelineParallel against single-device training: GPipe and 1F1B update once per step with the
// mean gradient of the step's micro-batches, so they must give the single-device gradient and
// weights (1e-5); PipeDream's weight stashing is inspected version by version; the schedules'
// orders and the stage balancing are pinned.
#include "osprey/distribute/pipeline/pipeline_parallel.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "osprey/autograd/ops.h"
#include "osprey/core/error_of_test.h"
#include "osprey/distribute/strategy_fixture.h"
#include "osprey/distribute/weights_difference.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::distribute {
namespace {

using osprey::testing::error_of;
using testing::data_x;
using testing::data_y;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::initial_weights;
using testing::make_mlp;
using testing::max_abs_difference;
using testing::max_relative_difference;

std::string ops_text(const std::vector<PipelineOp>& ops) {
  std::string s;
  for (const PipelineOp& op : ops)
    s += fmt::format("{}{} ", op.forward ? 'F' : 'B', op.micro_batch);
  return s;
}

TEST(PipelineScheduleTest, GPipeFillsThenDrains) {
  EXPECT_EQ(ops_text(stage_ops(PipelineSchedule::gpipe, 0, 2, 4)), "F0 F1 F2 F3 B3 B2 B1 B0 ");
  EXPECT_EQ(ops_text(stage_ops(PipelineSchedule::gpipe, 1, 2, 4)), "F0 F1 F2 F3 B3 B2 B1 B0 ");
}

TEST(PipelineScheduleTest, OneFOneBWarmsUpByTheStagesAfterIt) {
  EXPECT_EQ(ops_text(stage_ops(PipelineSchedule::one_f_one_b, 0, 3, 4)),
            "F0 F1 F2 B0 F3 B1 B2 B3 ");
  EXPECT_EQ(ops_text(stage_ops(PipelineSchedule::one_f_one_b, 1, 3, 4)),
            "F0 F1 B0 F2 B1 F3 B2 B3 ");
  EXPECT_EQ(ops_text(stage_ops(PipelineSchedule::one_f_one_b, 2, 3, 4)),
            "F0 B0 F1 B1 F2 B2 F3 B3 ");
  EXPECT_EQ(ops_text(stage_ops(PipelineSchedule::pipedream, 0, 3, 1)), "F0 B0 ");
}

TEST(PipelineScheduleTest, TheoreticalBubbleAndScheduleNames) {
  EXPECT_DOUBLE_EQ(theoretical_bubble(2, 4), 0.2);
  EXPECT_DOUBLE_EQ(theoretical_bubble(2, 1), 0.5);
  EXPECT_EQ(parse_pipeline_schedule("1f1b"), PipelineSchedule::one_f_one_b);
  EXPECT_EQ(to_string(PipelineSchedule::pipedream), "pipedream");
  try {
    parse_pipeline_schedule("zero_bubble");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "PipelineParallel: unknown schedule 'zero_bubble'; expected gpipe, 1f1b or "
                 "pipedream");
  }
}

TEST(PipelineScheduleTest, BalancingMinimizesTheSlowestStage) {
  // [1 2 3 | 4 5 | 6]: the slowest stage costs 9, and no split does better.
  EXPECT_THAT(balance_stages({1, 2, 3, 4, 5, 6}, 3), ElementsAre(3, 5));
  EXPECT_THAT(balance_stages({1, 1, 1, 1, 4}, 2), ElementsAre(4));
  EXPECT_THAT(balance_stages({5, 1}, 2), ElementsAre(1));
  try {
    balance_stages({1, 1}, 3);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "PipelineParallel: 2 layers cannot make 3 stages of at least one layer each");
  }
}

// 10 steps of global batch 8 (rows / 8 steps) from the fixture's initial weights.
Model train_mlp(const std::shared_ptr<const train::Strategy>& strategy, const std::string& opt,
                int rows = 80) {
  return testing::train_steps(strategy, opt, rows / 8);
}

std::shared_ptr<PipelineParallel> pipeline(PipelineOptions o) {
  return std::make_shared<PipelineParallel>(std::move(o));
}

TEST(PipelineParallelTest, GPipeAnd1F1BGiveTheSingleDeviceGradientAndWeights) {
  for (const std::string opt : {"sgd", "adam"}) {
    const Model one = train_mlp(nullptr, opt);
    ASSERT_GT(max_abs_difference(one.get_weights(), initial_weights()), 1e-3);
    for (const PipelineSchedule schedule :
         {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
      for (const std::vector<int>& split : {std::vector<int>{1}, std::vector<int>{1, 2}}) {
        auto pipe = pipeline({.stages = static_cast<int>(split.size()) + 1,
                              .micro_batches = 4,
                              .schedule = schedule,
                              .split_points = split});
        const Model m = train_mlp(pipe, opt);
        const std::string what =
            opt + " " + to_string(schedule) + " stages=" + std::to_string(split.size() + 1);
        EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5) << what;
        // The last step's gradient, left on the variables, is the single-device one.
        const auto a = m.network().trainable_variables(), b = one.network().trainable_variables();
        for (size_t k = 0; k < a.size(); ++k) {
          EXPECT_LE(max_relative_difference({a[k].grad()}, {b[k].grad()}), 1e-5)
              << what << " " << a[k].name();
        }
      }
    }
  }
}

TEST(PipelineParallelTest, ReplicatedPipelinesAverageEachStagesGradients) {
  const Model one = train_mlp(nullptr, "adam");
  auto pipe = pipeline({.stages = 2, .micro_batches = 2, .split_points = {2}, .replicas = 2});
  const Model m = train_mlp(pipe, "adam");
  EXPECT_EQ(m.trainer().strategy().num_replicas_in_sync(), 2);
  EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5);
}

TEST(PipelineParallelTest, OneFOneBHoldsFewerActivationsThanGPipe) {
  for (const auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    auto pipe =
        pipeline({.stages = 3, .micro_batches = 8, .schedule = schedule, .split_points = {1, 2}});
    train_mlp(pipe, "sgd", 32);
    const PipelineStats st = pipe->stats();
    EXPECT_EQ(st.steps, 4);
    if (schedule == PipelineSchedule::gpipe) {
      EXPECT_THAT(st.max_live_activations, ElementsAre(8, 8, 8));
    } else {
      EXPECT_THAT(st.max_live_activations, ElementsAre(3, 2, 1));
    }
    EXPECT_GT(st.bubble(), 0.0);
    EXPECT_LT(st.bubble(), 1.0);
  }
}

TEST(PipelineParallelTest, PipeDreamStashesTheWeightVersionEachForwardUsed) {
  auto pipe = pipeline({.stages = 2,
                        .micro_batches = 4,
                        .schedule = PipelineSchedule::pipedream,
                        .split_points = {1}});
  Model m = make_mlp();
  m.set_weights(initial_weights());
  m.compile("sgd", "mse", {}, {.strategy = pipe});
  const auto h = m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 3, .verbose = 0});
  const auto& loss = h.history.at("loss");
  EXPECT_LT(loss.back(), loss.front());
  const PipelineStats st = pipe->stats();
  // The last step (the 60th, versions 236..240 on each stage): stage 0 runs F0 F1 B0 F2 B1 F3 B2
  // B3, so micro-batches 1-3 go backward one update after their forward; stage 1 never lags.
  std::vector<std::string> seen;
  for (const auto& v : st.versions) {
    EXPECT_EQ(v.forward, v.backward) << "stage " << v.stage << " micro-batch " << v.micro_batch;
    seen.push_back(fmt::format("s{} m{} f{} newest{}", v.stage, v.micro_batch, v.forward - 236,
                               v.newest - 236));
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_THAT(seen, ElementsAre("s0 m0 f0 newest0", "s0 m1 f0 newest1", "s0 m2 f1 newest2",
                                "s0 m3 f2 newest3", "s1 m0 f0 newest0", "s1 m1 f1 newest1",
                                "s1 m2 f2 newest2", "s1 m3 f3 newest3"));
  EXPECT_EQ(st.max_version_gap, 1);
}

// PipeDream's arithmetic by hand for one step of 4 micro-batches on 2 stages (stage 0: dense and
// dense_1; stage 1: dense_2), SGD at 0.01. Stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3: B1 computes its
// gradient at the stashed version 0 though version 1 is the newest, and applies it to version 1.
// Without stashing, B1 to B3 would use the newest weights and the result would differ.
TEST(PipelineParallelTest, PipeDreamMatchesAHandWrittenStashedSchedule) {
  using autograd::Variable;
  const std::vector<Tensor>& w = initial_weights();  // k0 b0 k1 b1 k2 b2
  const double lr = 0.01;
  std::vector<Tensor> s0 = {w[0].clone(), w[1].clone(), w[2].clone(), w[3].clone()};
  std::vector<Tensor> s1 = {w[4].clone(), w[5].clone()};
  auto x = [](int i) { return data_x().narrow(0, 2 * i, 2); };
  auto y = [](int i) { return data_y().narrow(0, 2 * i, 2); };
  auto stage0 = [](const Tensor& in, const std::vector<Variable>& v) {
    Variable h = autograd::relu(autograd::add(autograd::matmul(Variable(in), v[0]), v[1]));
    return autograd::tanh(autograd::add(autograd::matmul(h, v[2]), v[3]));
  };
  auto sgd = [&](std::vector<Tensor>& weights, const std::vector<Variable>& v) {
    for (size_t k = 0; k < weights.size(); ++k)
      weights[k] = osprey::sub(weights[k], osprey::mul(v[k].grad(), lr));
  };
  auto leaves = [](const std::vector<Tensor>& t) {
    std::vector<Variable> v;
    v.reserve(t.size());
    for (const Tensor& x : t) v.emplace_back(x.clone(), true);
    return v;
  };
  // Stage 1 on micro-batch i: its update, and the gradient of the loss with respect to its input.
  auto stage1 = [&](const Tensor& h, int i) {
    const std::vector<Variable> v = leaves(s1);
    Variable in(h, true);
    Variable d = autograd::sub(autograd::add(autograd::matmul(in, v[0]), v[1]), Variable(y(i)));
    autograd::mean(autograd::mul(d, d)).backward();
    sgd(s1, v);
    return in.grad().clone();
  };
  // Stage 0's backward of micro-batch i at the stashed version, applied to the newest.
  auto backward0 = [&](const std::vector<Tensor>& stashed, int i, const Tensor& g) {
    const std::vector<Variable> v = leaves(stashed);
    stage0(x(i), v).backward(g);
    sgd(s0, v);
  };
  std::vector<std::vector<Tensor>> version{s0};  // version k of stage 0's weights
  auto forward0 = [&](int i) { return stage0(x(i), leaves(s0)).value().clone(); };
  const Tensor h0 = forward0(0), h1 = forward0(1);  // F0 F1 at v0
  backward0(version[0], 0, stage1(h0, 0));          // B0 at v0 -> v1
  version.push_back(s0);
  const Tensor h2 = forward0(2);            // F2 at v1
  backward0(version[0], 1, stage1(h1, 1));  // B1 at v0 -> v2
  version.push_back(s0);
  const Tensor h3 = forward0(3);            // F3 at v2
  backward0(version[1], 2, stage1(h2, 2));  // B2 at v1 -> v3
  backward0(version[2], 3, stage1(h3, 3));  // B3 at v2 -> v4

  auto pipe = pipeline({.stages = 2,
                        .micro_batches = 4,
                        .schedule = PipelineSchedule::pipedream,
                        .split_points = {2}});
  Model m = make_mlp();
  m.set_weights(initial_weights());
  m.compile("sgd", "mse", {}, {.strategy = pipe});
  m.fit(data_x().narrow(0, 0, 8), data_y().narrow(0, 0, 8),
        {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  const std::vector<Tensor> expected = {s0[0], s0[1], s0[2], s0[3], s1[0], s1[1]};
  EXPECT_LE(max_relative_difference(m.get_weights(), expected), 1e-5);
  // And the schedule did lag: one step of plain SGD on the same batch ends elsewhere.
  EXPECT_GT(max_relative_difference(train_mlp(nullptr, "sgd", 8).get_weights(), expected), 1e-4);
}

TEST(PipelineParallelTest, PipeDreamWithOneMicroBatchIsPlainSgd) {
  const Model one = train_mlp(nullptr, "sgd");
  auto pipe = pipeline({.stages = 3,
                        .micro_batches = 1,
                        .schedule = PipelineSchedule::pipedream,
                        .split_points = {1, 2}});
  const Model m = train_mlp(pipe, "sgd");
  EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5);
}

TEST(PipelineParallelTest, BalancedStagesComeFromMeasuredLayerTimes) {
  auto pipe = pipeline({.stages = 2, .micro_batches = 2});
  train_mlp(pipe, "sgd", 16);
  const PipelineStats st = pipe->stats();
  ASSERT_EQ(st.split_points.size(), 1U);
  EXPECT_GE(st.split_points[0], 1);
  EXPECT_LE(st.split_points[0], 2);
}

TEST(PipelineParallelTest, BadConfigurationsAreErrorsNamingWhatIsWrong) {
  EXPECT_EQ(error_of<Error>([] { PipelineParallel({.stages = 3, .split_points = {1}}); }),
            "PipelineParallel: 3 stages need 2 split points. Received: 1");
  EXPECT_EQ(error_of<Error>([] { train_mlp(pipeline({.stages = 2, .split_points = {3}}), "sgd"); }),
            "PipelineParallel: split point 0 (3) must be above 0 and below the layer count 3: "
            "every stage needs a layer");
  EXPECT_THAT(error_of<Error>([] {
                train_mlp(pipeline({.stages = 2, .micro_batches = 3, .split_points = {1}}), "sgd");
              }),
              HasSubstr("PipelineParallel (micro-batches)"));
  nn::clear_session();
  auto in = nn::Input({5});
  auto out = layers::Dense(2)(layers::Dense(4)(in));
  Model functional(std::make_shared<models::Functional>(std::vector{in}, std::vector{out}));
  functional.compile("sgd", "mse", {}, {.strategy = pipeline({.stages = 2})});
  EXPECT_THAT(error_of<Error>([&] {
                functional.fit(data_x().narrow(0, 0, 8), data_y().narrow(0, 0, 8).narrow(1, 0, 2),
                               {.batch_size = 8, .verbose = 0});
              }),
              HasSubstr("PipelineParallel: stages are cut from a Sequential model"));
}

}  // namespace
}  // namespace osprey::distribute
