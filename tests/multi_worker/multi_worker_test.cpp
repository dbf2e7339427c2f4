// Multi-worker training against single-process training, run as every rank of a 2-process job:
// under `mpirun -np 2` (Open MPI) and as two processes started independently with OSPREY_CONFIG
// (Gloo; run_config_job.sh). Each rank also trains the single-process references itself
// (OneDevice, and MirroredStrategy on 2 virtual devices) from the same initial weights and data,
// and checks that its multi-worker weights match them and are bitwise the other rank's.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "osprey/comm/mpi.h"
#include "osprey/core/error.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/data_parallel/multi_worker_mirrored_strategy.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/one_device_strategy.h"
#include "osprey/distribute/strategy_fixture.h"
#include "osprey/distribute/weights_difference.h"
#include "osprey/io/json.h"
#include "osprey/io/temporary_directory.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/loss_scale_optimizer.h"
#include "osprey/precision/dtype_policy.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/callback.h"
#include "osprey/train/callbacks/profiler.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::distribute {
namespace {

using StrategyPtr = std::shared_ptr<const train::Strategy>;
using testing::max_relative_difference;

// One connection per process and compression, made by the first test that needs it.
std::shared_ptr<MultiWorkerMirroredStrategy> strategy(const std::string& compression = "none") {
  static std::map<std::string, std::shared_ptr<MultiWorkerMirroredStrategy>> made;
  auto& s = made[compression];
  if (!s)
    s = std::make_shared<MultiWorkerMirroredStrategy>(
        std::vector<std::string>{}, MultiWorkerOptions{.compression = compression});
  return s;
}

using testing::data_x;
using testing::data_y;
using testing::initial_weights;
using testing::make_mlp;
using testing::train_20_steps;

std::vector<float> flat(const std::vector<Tensor>& ws) {
  std::vector<float> out;
  for (const Tensor& w : ws) {
    const auto v = w.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// This worker's values against every other worker's, bit for bit.
void expect_same_on_every_worker(const MultiWorkerMirroredStrategy& s, std::vector<float> mine,
                                 const char* what) {
  const int n = s.num_workers();
  std::vector<float> all(mine.size() * static_cast<size_t>(n));
  s.worker_group()->outputs()->all_gather(mine.data(), all.data(),
                                          static_cast<int64_t>(mine.size()));
  for (int w = 0; w < n; ++w) {
    const std::vector<float> theirs(all.begin() + static_cast<int64_t>(mine.size()) * w,
                                    all.begin() + static_cast<int64_t>(mine.size()) * (w + 1));
    EXPECT_EQ(std::memcmp(theirs.data(), mine.data(), mine.size() * sizeof(float)), 0)
        << what << ": worker " << w << " differs from worker " << s.worker_rank();
  }
}

TEST(MultiWorkerTest, TwoWorkersMatchOneDeviceAndOneWorkerWithTwoReplicas) {
  auto mw = strategy();
  ASSERT_EQ(mw->num_workers(), 2);
  EXPECT_EQ(mw->num_replicas_in_sync(), 2);
  for (const std::string opt : {"sgd", "adam"}) {
    const Model one = train_20_steps(std::make_shared<OneDevice>("cpu:0"), opt, data_x());
    const Model mirrored =
        train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(2)), opt, data_x());
    const Model multi = train_20_steps(mw, opt, data_x());
    ASSERT_GT(testing::max_abs_difference(one.get_weights(), initial_weights()), 1e-3) << opt;
    EXPECT_LE(max_relative_difference(multi.get_weights(), one.get_weights()), 1e-5) << opt;
    EXPECT_LE(max_relative_difference(multi.get_weights(), mirrored.get_weights()), 1e-5) << opt;
    expect_same_on_every_worker(*mw, flat(multi.get_weights()), "weights");
  }
}

// Hierarchical: 2 replicas in each of the 2 workers (4 in sync) reduce in-process first, then
// across workers; the same weights as one device and as 4 replicas in one process.
TEST(MultiWorkerTest, TwoWorkersOfTwoReplicasMatchOneDeviceAndFourReplicas) {
  static auto mw2 = std::make_shared<MultiWorkerMirroredStrategy>(virtual_devices(2));
  ASSERT_EQ(mw2->num_replicas_in_sync(), 4);
  const Model one = train_20_steps(std::make_shared<OneDevice>("cpu:0"), "adam", data_x());
  const Model four =
      train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(4)), "adam", data_x());
  const Model multi = train_20_steps(mw2, "adam", data_x());
  EXPECT_LE(max_relative_difference(multi.get_weights(), one.get_weights()), 1e-5);
  EXPECT_LE(max_relative_difference(multi.get_weights(), four.get_weights()), 1e-5);
  expect_same_on_every_worker(*mw2, flat(multi.get_weights()), "weights (2 x 2)");
}

// Synchronized BatchNormalization across workers: batch statistics of the whole global batch
// (its layer collectives go through the workers' own communicator), so the weights and moving
// statistics match single-device training. Rows are shifted by their position in each batch of
// 8, so the halves' statistics differ and per-worker statistics would not match.
TEST(MultiWorkerTest, SynchronizedBatchNormUsesTheGlobalBatchAcrossWorkers) {
  auto mw = strategy();
  Tensor x = data_x().clone();
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] += 0.5f * static_cast<float>((i / 5) % 8);
  const auto train = [&](const StrategyPtr& s) {
    nn::clear_session();
    Model m = Sequential(
        {layers::Dense(4), layers::BatchNormalization({.momentum = 0.5, .synchronized = true}),
         layers::Dense(3)},
        {.input_shape = {5}});
    static const std::vector<Tensor> w0 = m.get_weights();
    m.set_weights(w0);
    m.compile("sgd", "mse", {}, {.strategy = s});
    m.fit(x, data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
    return m;
  };
  const Model one = train(std::make_shared<OneDevice>("cpu:0"));
  const Model multi = train(mw);
  const std::vector<Tensor> w = multi.get_weights(), w1 = one.get_weights();
  for (size_t i = 0; i < w.size(); ++i) {
    if (i == 1)
      continue;  // the first Dense's bias: zero gradient in exact arithmetic, rounding noise
    EXPECT_LE(max_relative_difference({w[i]}, {w1[i]}), 1e-5) << "weight " << i;
  }
  expect_same_on_every_worker(*mw, flat(w), "synchronized BatchNormalization weights");
}

// Each replica computes its half of the batch in bfloat16, as MirroredStrategy's replicas do: the
// same per-replica arithmetic, so the same weights; one device computes the whole batch in
// bfloat16 at once (other roundings), so it agrees only to bfloat16's precision.
TEST(MultiWorkerTest, MixedBfloat16MatchesTwoInProcessReplicasUnderTheSamePolicy) {
  auto mw = strategy();
  precision::DTypePolicyScope policy("mixed_bfloat16");
  const Model one = train_20_steps(std::make_shared<OneDevice>("cpu:0"), "adam", data_x());
  const Model mirrored =
      train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(2)), "adam", data_x());
  const Model multi = train_20_steps(mw, "adam", data_x());
  EXPECT_LE(max_relative_difference(multi.get_weights(), mirrored.get_weights()), 1e-5);
  EXPECT_LE(max_relative_difference(multi.get_weights(), one.get_weights()), 1e-2);
  expect_same_on_every_worker(*mw, flat(multi.get_weights()), "mixed_bfloat16 weights");
}

TEST(MultiWorkerTest, LogsAreTheWholeGlobalBatchsOnEveryWorker) {
  auto mw = strategy();
  Model one = make_mlp();
  one.set_weights(initial_weights());
  one.compile("sgd", "mse", {"mae"}, {.strategy = std::make_shared<OneDevice>("cpu:0")});
  const auto h1 =
      one.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
  Model multi = make_mlp();
  multi.set_weights(initial_weights());
  multi.compile("sgd", "mse", {"mae"}, {.strategy = mw});
  const auto hm =
      multi.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
  for (const char* key : {"loss", "mae"}) {
    for (size_t e = 0; e < 2; ++e)
      EXPECT_NEAR(hm.history.at(key)[e], h1.history.at(key)[e], 1e-5) << key;
  }
  expect_same_on_every_worker(*mw, {static_cast<float>(hm.history.at("loss")[1])}, "loss");
}

// The profiler on every worker: each writes its own trace (trace.rank<r>.json); the chief gathers
// them over the communicator and merges them into one trace.json on its clock, with the clock
// offset and its uncertainty per rank, and every rank's all-reduce spans with their bytes.
TEST(MultiWorkerTest, TheProfilersMergedTraceHoldsEveryWorkersCollectives) {
  auto mw = strategy();
  const int rank = mw->worker_rank();
  io::TemporaryDirectory dir("osprey-mw-profile");  // one per process: no shared files needed
  train_20_steps(mw, "sgd", data_x(), nullptr,
                 {callbacks::Profiler(dir.path(), {.steps = {3, 5}})});
  EXPECT_TRUE(std::filesystem::exists(dir.path() / fmt::format("trace.rank{}.json", rank)));
  if (rank != 0) {
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "trace.json"));
    return;
  }
  const nlohmann::json t = io::read_json_file(dir.path() / "trace.json");
  std::map<int, int> all_reduces;  // pid -> all-reduce spans with bytes
  std::map<int, int> steps;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int pid = e["pid"];
    if (e["cat"] == "step") ++steps[pid];
    if (e["cat"] == "collective" && e["name"].get<std::string>().rfind("all_reduce", 0) == 0 &&
        std::stoll(e["args"]["bytes"].get<std::string>()) > 0) {
      ++all_reduces[pid];
    }
  }
  EXPECT_EQ(steps, (std::map<int, int>{{0, 3}, {1, 3}}));
  EXPECT_EQ(all_reduces.size(), 2U);
  EXPECT_GT(all_reduces[0], 0);
  EXPECT_EQ(all_reduces[0], all_reduces[1]);
  const auto& sync = t["otherData"]["clock_sync"];
  ASSERT_EQ(sync.size(), 2U);
  EXPECT_EQ(sync[0]["pid"], 0);
  EXPECT_EQ(sync[0]["offset_us"], 0);
  EXPECT_EQ(sync[1]["pid"], 1);
  EXPECT_GT(sync[1]["uncertainty_us"].get<double>(), 0.0);
}

// A sequence model whose outputs carry a mask (Embedding(mask_zero)): every worker's metrics see
// the other workers' masks with their predictions, so the logs count only the real tokens of the
// whole global batch. Each replica's loss is the mean over its own real tokens and the gradients
// are averaged (as Keras's and DDP's): the same training as 2 replicas in one process, and an
// evaluation whose accuracy is one device's.
TEST(MultiWorkerTest, MaskedSequenceMetricsCountOnlyRealTokensOnEveryWorker) {
  constexpr int64_t kRows = 32, kSteps = 6, kVocab = 9;
  std::vector<int64_t> xs, ys;
  for (int64_t i = 0; i < kRows; ++i) {
    const int64_t n = 1 + (i * 5) % kSteps;  // padded with 0 after n real tokens
    for (int64_t t = 0; t < kSteps; ++t) {
      xs.push_back(t < n ? 1 + (i * 7 + t * 3) % (kVocab - 1) : 0);
      ys.push_back(t < n ? 1 + (i + t * 5) % (kVocab - 1) : 0);
    }
  }
  const Tensor x = from_vector<int64_t>(xs, {kRows, kSteps});
  const Tensor y = from_vector<int64_t>(ys, {kRows, kSteps});
  const auto make = [&] {
    nn::clear_session();
    return Sequential({layers::Embedding(kVocab, 8, {.mask_zero = true}),
                       layers::LSTM(8, {.return_sequences = true}), layers::Dense(kVocab)},
                      {.input_shape = {kSteps}});
  };
  const std::vector<Tensor> init = make().get_weights();
  const auto train = [&](const StrategyPtr& s) {
    Model m = make();
    m.set_weights(init);
    m.compile("adam", "sparse_categorical_crossentropy", {"accuracy"}, {.strategy = s});
    auto h = m.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
    return std::make_pair(std::move(m), h);
  };
  auto mw = strategy();
  const auto [two, h2] = train(std::make_shared<MirroredStrategy>(virtual_devices(2)));
  auto [multi, hm] = train(mw);
  for (const char* key : {"loss", "accuracy"}) {
    for (size_t e = 0; e < 2; ++e)
      EXPECT_NEAR(hm.history.at(key)[e], h2.history.at(key)[e], 1e-5) << key;
  }
  EXPECT_LE(max_relative_difference(multi.get_weights(), two.get_weights()), 1e-5);
  Model one = make();
  one.set_weights(multi.get_weights());
  one.compile("adam", "sparse_categorical_crossentropy", {"accuracy"},
              {.strategy = std::make_shared<OneDevice>("cpu:0")});
  const double want = one.evaluate(x, y, {.batch_size = 8, .verbose = 0}).at("accuracy");
  const double got = multi.evaluate(x, y, {.batch_size = 8, .verbose = 0}).at("accuracy");
  EXPECT_NEAR(got, want, 1e-9);
  expect_same_on_every_worker(*mw, {static_cast<float>(got)}, "accuracy");
}

TEST(MultiWorkerTest, Bf16CompressionTrainsCloseToFloat32AndTheSameOnEveryWorker) {
  auto mw = strategy("bf16");
  const Model one = train_20_steps(std::make_shared<OneDevice>("cpu:0"), "sgd", data_x());
  const Model multi = train_20_steps(mw, "sgd", data_x());
  const double diff = max_relative_difference(multi.get_weights(), one.get_weights());
  EXPECT_GT(diff, 0.0);   // bf16 rounding did happen
  EXPECT_LE(diff, 2e-2);  // and stays at bf16's precision
  expect_same_on_every_worker(*mw, flat(multi.get_weights()), "bf16 weights");
}

// Batch 5 (rows 40-47) holds 1e30 in row 44: worker 1's half. In float16 the forward overflows
// there only, so only worker 1's gradients are infinite; the all-reduce spreads the inf, and every
// worker's LossScaleOptimizer skips that one step and halves its scale, as single-device training
// on the same batches does.
TEST(MultiWorkerTest, MixedFloat16OverflowOnOneWorkerIsSkippedByAllWorkers) {
  auto mw = strategy();
  Tensor x = data_x().clone();
  x.set({44, 0}, 1e30);
  precision::DTypePolicyScope policy("mixed_float16");
  const Model one = train_20_steps(std::make_shared<OneDevice>("cpu:0"), "sgd", x);
  const Model multi = train_20_steps(mw, "sgd", x);
  auto* lso_one = dynamic_cast<optim::LossScaleOptimizer*>(&one.trainer().optimizer());
  auto* lso = dynamic_cast<optim::LossScaleOptimizer*>(&multi.trainer().optimizer());
  ASSERT_NE(lso, nullptr);
  ASSERT_NE(lso_one, nullptr);
  EXPECT_EQ(lso_one->skipped_steps(), 1);
  EXPECT_EQ(lso->skipped_steps(), 1);
  EXPECT_EQ(lso->scale(), lso_one->scale());
  EXPECT_LE(max_relative_difference(multi.get_weights(), one.get_weights()), 1e-3);
  expect_same_on_every_worker(
      *mw, {static_cast<float>(lso->skipped_steps()), static_cast<float>(lso->scale())},
      "loss scale");
  expect_same_on_every_worker(*mw, flat(multi.get_weights()), "mixed_float16 weights");
}

// auto_shard_policy "off": each worker feeds its own share. Batches of 4 sharded 2 ways give worker
// w rows [8k + 4w, 8k + 4w + 4) at step k: together, single-device training's batch k of 8.
TEST(MultiWorkerTest, PerWorkerInputsWithShardingOffEqualTheGlobalBatches) {
  static auto off = std::make_shared<MultiWorkerMirroredStrategy>(
      std::vector<std::string>{}, MultiWorkerOptions{.auto_shard_policy = "off"});
  const auto h_one = [] {
    Model one = make_mlp();
    one.set_weights(initial_weights());
    one.compile("adam", "mse", {"mae"}, {.strategy = std::make_shared<OneDevice>("cpu:0")});
    auto h =
        one.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
    return std::make_pair(one.get_weights(), h);
  }();
  Model multi = make_mlp();
  multi.set_weights(initial_weights());
  multi.compile("adam", "mse", {"mae"}, {.strategy = off});
  const data::Dataset mine = data::Dataset::from_tensors({data_x(), data_y()})
                                 .batch(4)
                                 .shard(off->num_workers(), off->worker_rank());
  const auto h = multi.fit(mine, {.epochs = 1, .verbose = 0});
  EXPECT_LE(max_relative_difference(multi.get_weights(), h_one.first), 1e-5);
  EXPECT_NEAR(h.history.at("loss")[0], h_one.second.history.at("loss")[0], 1e-6);
  EXPECT_NEAR(h.history.at("mae")[0], h_one.second.history.at("mae")[0], 1e-6);
  expect_same_on_every_worker(*off, flat(multi.get_weights()), "weights (sharding off)");
}

TEST(MultiWorkerTest, FileShardingIsRefusedForSourcesThatAreNotOneFilePerShard) {
  try {
    MultiWorkerMirroredStrategy s({}, {.auto_shard_policy = "file"});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("auto_shard_policy 'file' shards by input file"),
              std::string::npos);
  }
}

// The gradient buckets skip the per-call check because the models are checked alike once: a
// worker that built another model gets an error naming the variable, on every worker, not a hang.
TEST(MultiWorkerTest, WorkersThatBuiltDifferentModelsFailAtTheFirstStepNamingTheVariable) {
  auto mw = strategy();
  nn::clear_session();
  const int64_t width = mw->worker_rank() == 0 ? 16 : 12;
  Model m = Sequential({layers::Dense(width, "relu"), layers::Dense(3)}, {.input_shape = {5}});
  m.compile("sgd", "mse", {}, {.strategy = mw});
  try {
    m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("trainable variable 0 differs between worker"),
              std::string::npos)
        << e.what();
  }
}

TEST(MultiWorkerTest, AnIndivisibleGlobalBatchNamesBothNumbers) {
  auto mw = strategy();
  Model m = make_mlp();
  m.compile("sgd", "mse", {}, {.strategy = mw});
  try {
    m.fit(data_x().narrow(0, 0, 9), data_y().narrow(0, 0, 9),
          {.batch_size = 9, .epochs = 1, .verbose = 0});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "the global batch size 9 is not divisible by the 2 replicas in sync"),
              std::string::npos)
        << e.what();
  }
}

// The Open MPI communicator itself (under mpirun only): the contract every backend keeps.
class MpiCommunicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!comm::mpi_launched()) GTEST_SKIP() << "runs under mpirun (ctest mpi_multi_worker)";
    c_ = comm::make_mpi_communicator();
  }
  std::unique_ptr<comm::Communicator> c_;
};

std::vector<float> rank_values(int rank, int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i + 1) + 1.37f * rank - 0.5f;
  return v;
}

TEST_F(MpiCommunicatorTest, AllReduceSumAndMeanAreTheRankOrderSumOnEveryRank) {
  constexpr int kN = 1001;
  const int size = c_->size();
  for (const auto op : {comm::ReduceOp::sum, comm::ReduceOp::mean}) {
    std::vector<float> v = rank_values(c_->rank(), kN);
    c_->all_reduce(v.data(), kN, op);
    for (int i = 0; i < kN; ++i) {
      float want = rank_values(0, kN)[static_cast<size_t>(i)];
      for (int q = 1; q < size; ++q) want += rank_values(q, kN)[static_cast<size_t>(i)];
      if (op == comm::ReduceOp::mean) want /= static_cast<float>(size);
      ASSERT_NEAR(v[static_cast<size_t>(i)], want, 1e-6 * std::abs(want) + 1e-7) << i;
    }
    std::vector<float> all(v.size() * static_cast<size_t>(size));
    c_->all_gather(v.data(), all.data(), kN);
    for (int q = 0; q < size; ++q) {
      EXPECT_EQ(
          std::memcmp(all.data() + static_cast<size_t>(q) * kN, v.data(), v.size() * sizeof(float)),
          0)
          << "rank " << q << " got other bits";
    }
  }
}

TEST_F(MpiCommunicatorTest, Bf16AllReduceIsBitwiseTheBaseDefinition) {
  constexpr int kN = 1001;  // not divisible by the size: padded blocks
  std::vector<float> v = rank_values(c_->rank(), kN);
  c_->all_reduce_bf16(v.data(), kN, comm::ReduceOp::mean);
  // The definition (communicator.h): inputs rounded to bf16, summed in f32 in rank order, the
  // mean rounded to bf16.
  std::vector<float> want = rank_values(0, kN);
  comm::round_to_bf16(want.data(), kN);
  for (int q = 1; q < c_->size(); ++q) {
    std::vector<float> o = rank_values(q, kN);
    comm::round_to_bf16(o.data(), kN);
    for (int i = 0; i < kN; ++i) want[static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
  }
  for (float& w : want) w /= static_cast<float>(c_->size());
  comm::round_to_bf16(want.data(), kN);
  EXPECT_EQ(v, want);
}

TEST_F(MpiCommunicatorTest, ACountMismatchIsTheSameErrorOnEveryRank) {
  std::vector<float> v(12, 1.0f);
  try {
    c_->all_reduce(v.data(), c_->rank() == 0 ? 10 : 12, comm::ReduceOp::sum);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "Communicator::all_reduce: rank 0 passed 10 elements but rank 1 passed 12");
  }
  c_->barrier();  // the communicator is still usable
}

TEST_F(MpiCommunicatorTest, ADifferentCollectiveIsTheSameErrorOnEveryRank) {
  std::vector<float> v(4, 1.0f);
  try {
    if (c_->rank() == 0) {
      c_->broadcast(v.data(), 4, 0);
    } else {
      c_->all_reduce(v.data(), 4, comm::ReduceOp::sum);
    }
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "Communicator: rank 0 called broadcast but rank 1 called all_reduce");
  }
}

TEST_F(MpiCommunicatorTest, PointToPointAndARecvOfAnotherCount) {
  if (c_->size() < 2) GTEST_SKIP();
  std::vector<float> v = {1.5f, 2.5f, 3.5f};
  if (c_->rank() == 0) {
    c_->send(v.data(), 3, 1, 4);
    c_->send(v.data(), 3, 1, 5);
  } else if (c_->rank() == 1) {
    std::vector<float> in(3);
    c_->recv(in.data(), 3, 0, 4);
    EXPECT_EQ(in, v);
    try {
      c_->recv(in.data(), 2, 0, 5);
      FAIL() << "no error";
    } catch (const ValueError& e) {
      EXPECT_EQ(
          std::string(e.what()),
          "Communicator::recv: rank 1 expected 2 elements from rank 0 (tag 5) but 3 were sent");
    }
  }
  c_->barrier();
}

// Started with OSPREY_TEST_DIE=1 by run_config_job.sh: worker 1 dies in the middle of training;
// worker 0 must fail with an error naming it, not hang.
class DieAtBatch : public train::Callback {
 public:
  explicit DieAtBatch(int rank) : rank_(rank) {}
  void on_train_batch_end(int64_t batch, const train::Logs&) override {
    if (rank_ == 1 && batch == 5) _exit(3);
  }

 private:
  int rank_;
};

TEST(MultiWorkerTest, AWorkerThatDiesMakesTheOthersFailNamingIt) {
  const char* die = std::getenv("OSPREY_TEST_DIE");
  if (die == nullptr || std::string(die) != "1")
    GTEST_SKIP() << "run by run_config_job.sh with OSPREY_TEST_DIE=1";
  auto mw = strategy();
  try {
    train_20_steps(mw, "sgd", data_x(), nullptr, {std::make_shared<DieAtBatch>(mw->worker_rank())});
    FAIL() << "worker 0 trained on without worker 1";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 died or left the job"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace osprey::distribute
