// Model and pipeline parallelism across the processes of a 2-worker job, run as every rank:
// under `mpirun -np 2` (Open MPI) and as two processes started with OSPREY_CONFIG (Gloo). Each
// rank also trains the single-device reference itself from the same initial weights and data,
// and checks that the weights match it (1e-5) and are bitwise the other rank's.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "osprey/distribute/model_parallel/model_parallel.h"
#include "osprey/distribute/pipeline/pipeline_parallel.h"
#include "osprey/distribute/strategy_fixture.h"
#include "osprey/distribute/weights_difference.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::distribute {
namespace {

using StrategyPtr = std::shared_ptr<const train::Strategy>;
using testing::data_x;
using testing::data_y;
using testing::initial_weights;
using testing::make_mlp;
using testing::max_relative_difference;

Model train_mlp(const StrategyPtr& strategy, const std::string& opt) {
  return testing::train_steps(strategy, opt, 10);
}

// This worker's weights against every other worker's, bit for bit.
void expect_same_on_every_worker(const WorkerGroup& group, const std::vector<Tensor>& weights,
                                 const std::string& what) {
  std::vector<float> mine;
  for (const Tensor& w : weights) {
    const auto v = w.to_vector<float>();
    mine.insert(mine.end(), v.begin(), v.end());
  }
  std::vector<float> all(mine.size() * static_cast<size_t>(group.size()));
  group.outputs()->all_gather(mine.data(), all.data(), static_cast<int64_t>(mine.size()));
  for (int w = 0; w < group.size(); ++w) {
    EXPECT_EQ(std::memcmp(all.data() + mine.size() * static_cast<size_t>(w), mine.data(),
                          mine.size() * sizeof(float)),
              0)
        << what << ": worker " << w << " differs from worker " << group.rank();
  }
}

TEST(ModelParallelAcrossWorkersTest, AMeshSpanningTwoWorkersMatchesOneDevice) {
  // The model axis across the workers (one device each); then 2 x 2 meshes whose first axis
  // crosses the workers: the batch (model axis inside each worker), or the model (batch axis
  // inside).
  LayoutMap across(DeviceMesh({2}, {"model"}));
  across["sequential/dense(_1)?/kernel"] = {std::nullopt, "model"};
  across["sequential/dense(_1)?/bias"] = {"model"};
  LayoutMap batch_across(DeviceMesh({2, 2}, {"data", "model"}));
  batch_across["sequential/dense/kernel"] = {std::nullopt, "model"};
  batch_across["sequential/dense_1/kernel"] = {"model", std::nullopt};
  LayoutMap model_across(DeviceMesh({2, 2}, {"model", "data"}));
  model_across["sequential/dense/kernel"] = {std::nullopt, "model"};
  model_across["sequential/dense_1/kernel"] = {"model", std::nullopt};
  model_across["sequential/dense_2/kernel"] = {"model", std::nullopt};
  for (const std::string opt : {"sgd", "adam"}) {
    const Model one = train_mlp(nullptr, opt);
    for (const auto& [name, layout, batch] :
         {std::tuple{"model axis across", across, ""},
          std::tuple{"batch axis across", batch_across, "data"},
          std::tuple{"model axis across, batch inside", model_across, "data"}}) {
      auto mp = std::make_shared<ModelParallel>(layout, batch);
      ASSERT_EQ(mp->num_workers(), 2) << name;
      Model m = train_mlp(mp, opt);
      EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5)
          << opt << " " << name;
      expect_same_on_every_worker(*mp->worker_group(), m.get_weights(), opt + " " + name);
      // Predictions (every worker sees every row) agree with one device's.
      const Tensor x = data_x().narrow(0, 80, 16);
      Model single = make_mlp();
      single.set_weights(m.get_weights());
      EXPECT_LE(testing::max_abs_difference({m.predict(x)}, {single.predict(x)}), 1e-5) << name;
    }
  }
}

TEST(ModelParallelAcrossWorkersTest, ACnnSplitAcrossTwoWorkersMatchesOneDevice) {
  const Tensor x = random_normal({40, 6, 6, 2}, {.seed = 21});
  const Tensor y = random_normal({40, 3}, {.seed = 22});
  static const std::vector<Tensor> init = testing::make_cnn().get_weights();
  auto train = [&](const StrategyPtr& strategy) {
    Model m = testing::make_cnn();
    m.set_weights(init);
    m.compile("adam", "mse", {}, {.strategy = strategy});
    m.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0, .shuffle = false});  // 10 steps
    return m;
  };
  const Model one = train(nullptr);
  // Filters split (column) then input channels (row) over the workers; then the batch across
  // the workers with the same split inside each.
  LayoutMap column_row(DeviceMesh({2}, {"model"}));
  column_row["sequential/conv2d/kernel"] = {std::nullopt, std::nullopt, std::nullopt, "model"};
  column_row["sequential/conv2d_1/kernel"] = {std::nullopt, std::nullopt, "model", std::nullopt};
  LayoutMap two_d(DeviceMesh({2, 2}, {"batch", "model"}));
  two_d["sequential/conv2d/kernel"] = {std::nullopt, std::nullopt, std::nullopt, "model"};
  two_d["sequential/conv2d/bias"] = {"model"};
  two_d["sequential/conv2d_1/kernel"] = {std::nullopt, std::nullopt, "model", std::nullopt};
  for (const auto& [name, layout, batch] :
       {std::tuple{"column-row", column_row, ""}, std::tuple{"2-D", two_d, "batch"}}) {
    auto mp = std::make_shared<ModelParallel>(layout, batch);
    const Model m = train(mp);
    EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5) << name;
    expect_same_on_every_worker(*mp->worker_group(), m.get_weights(), name);
  }
}

TEST(ModelParallelAcrossWorkersTest, AGroupSpanningWorkersPartlyIsAnErrorNamingTheAxis) {
  // 4 devices on 2 workers with the model axis inside and a batch axis of 4: batch groups of 4
  // devices, 2 on each worker.
  LayoutMap layout(DeviceMesh({4, 1}, {"data", "model"}));
  auto mp = std::make_shared<ModelParallel>(layout, "data");
  Model m = make_mlp();
  try {
    m.compile("sgd", "mse", {}, {.strategy = mp});
    m.fit(data_x().narrow(0, 0, 8), data_y().narrow(0, 0, 8), {.batch_size = 8, .verbose = 0});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "ModelParallel: mesh axis 'data' groups devices 0, 1, 2, 3 held by workers 0, 1 "
                 "of 2; a group must stay inside one worker or take one device from each worker "
                 "at the same position (make the axis that crosses workers the first one of the "
                 "mesh)");
  }
}

TEST(ModelParallelAcrossWorkersTest, TheChiefSavesTheWholeModelAndOptimizerState) {
  const auto dir = std::filesystem::temp_directory_path() / "osprey_mp_workers_checkpoint";
  LayoutMap layout(DeviceMesh({2}, {"model"}));
  layout["sequential/dense/kernel"] = {std::nullopt, "model"};
  layout["sequential/dense_1/kernel"] = {"model", std::nullopt};
  auto mp = std::make_shared<ModelParallel>(layout);
  Model m = train_mlp(mp, "adam");
  if (mp->is_chief()) std::filesystem::remove_all(dir);
  mp->worker_group()->outputs()->barrier();
  m.save(dir.string());
  mp->worker_group()->outputs()->barrier();
  // One more epoch from the checkpoint on one device equals one more under the mesh.
  Model single = load_model(dir.string());
  single.compile("adam", "mse");
  single.load_optimizer_state(dir.string());
  for (Model* x : {&single, &m}) {
    x->fit(data_x().narrow(0, 0, 80), data_y().narrow(0, 0, 80),
           {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  }
  EXPECT_LE(max_relative_difference(m.get_weights(), single.get_weights()), 1e-5);
  mp->worker_group()->outputs()->barrier();
  if (mp->is_chief()) std::filesystem::remove_all(dir);
}

TEST(PipelineParallelAcrossWorkersTest, TwoStagesOnTwoWorkersMatchOneDevice) {
  for (const std::string opt : {"sgd", "adam"}) {
    Model one = train_mlp(nullptr, opt);
    for (const auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
      auto pipe = std::make_shared<PipelineParallel>(
          PipelineOptions{.stages = 2, .micro_batches = 4, .schedule = schedule});
      ASSERT_EQ(pipe->num_workers(), 2);
      Model m = train_mlp(pipe, opt);
      const std::string what = opt + " " + to_string(schedule);
      EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5) << what;
      // The logs are the whole batch's on both workers: evaluate agrees with one device.
      EXPECT_NEAR(m.evaluate(data_x(), data_y(), {.verbose = 0}).at("loss"),
                  one.evaluate(data_x(), data_y(), {.verbose = 0}).at("loss"), 1e-5)
          << what;
      expect_same_on_every_worker(*pipe->worker_group(), m.get_weights(), what);
    }
  }
}

TEST(PipelineParallelAcrossWorkersTest, PipeDreamWithOneMicroBatchIsPlainSgdAcrossWorkers) {
  const Model one = train_mlp(nullptr, "sgd");
  auto pipe =
      std::make_shared<PipelineParallel>(PipelineOptions{.stages = 2,
                                                         .micro_batches = 1,
                                                         .schedule = PipelineSchedule::pipedream,
                                                         .split_points = {2}});
  const Model m = train_mlp(pipe, "sgd");
  EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5);
}

// Each worker runs one stage, yet its stats() are the whole pipeline's, as in one process: under
// PipeDream stage 0's micro-batches 1-3 go backward one version after their forward (gap 1), which
// the worker running stage 1 (never behind itself) must report too (issue 48, item 10).
TEST(PipelineParallelAcrossWorkersTest, EveryWorkersStatsCoverEveryStage) {
  const auto run = [](bool single_process) {
    auto pipe =
        std::make_shared<PipelineParallel>(PipelineOptions{.stages = 2,
                                                           .micro_batches = 4,
                                                           .schedule = PipelineSchedule::pipedream,
                                                           .split_points = {1},
                                                           .single_process = single_process});
    train_mlp(pipe, "sgd");
    return pipe->stats();
  };
  const auto versions = [](const PipelineStats& st) {
    std::vector<std::string> seen;
    for (const auto& v : st.versions) {
      seen.push_back(fmt::format("s{} m{} f{} b{} newest{}", v.stage, v.micro_batch, v.forward,
                                 v.backward, v.newest));
    }
    std::sort(seen.begin(), seen.end());
    return seen;
  };
  const PipelineStats one = run(true), across = run(false);
  EXPECT_EQ(versions(across), versions(one));
  EXPECT_EQ(versions(across).size(), 8U);
  EXPECT_EQ(across.max_version_gap, 1);
  EXPECT_EQ(across.max_live_activations, (std::vector<int>{2, 1}));
  EXPECT_EQ(across.max_live_activations, one.max_live_activations);
  ASSERT_EQ(across.busy_seconds.size(), 2U);
  EXPECT_GT(across.busy_seconds[0], 0.0);
  EXPECT_GT(across.busy_seconds[1], 0.0);
}

TEST(PipelineParallelAcrossWorkersTest, StagesMustEqualTheWorkers) {
  try {
    const PipelineParallel three({.stages = 3});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "PipelineParallel: across 2 workers each worker runs one stage of one pipeline: "
                 "set stages=2 and replicas=1 (received stages=3, replicas=1), or single_process "
                 "to keep every stage in this process");
  }
}

}  // namespace
}  // namespace osprey::distribute
