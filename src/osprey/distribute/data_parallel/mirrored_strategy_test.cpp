// Data-parallel training against single-device training: the same global batches must give the
// same weights (the mean of per-replica mean gradients is the full batch's mean gradient).
#include "osprey/distribute/data_parallel/mirrored_strategy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "osprey/distribute/data_parallel/central_storage_strategy.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/distribution.h"
#include "osprey/distribute/one_device_strategy.h"
#include "osprey/distribute/strategy_fixture.h"
#include "osprey/distribute/weights_difference.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/adam.h"
#include "osprey/optim/sgd.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/rounding.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::distribute {
namespace {

using StrategyPtr = std::shared_ptr<const train::Strategy>;

using testing::data_x;
using testing::data_y;
using testing::initial_weights;
using testing::make_mlp;
using testing::max_abs_difference;
using testing::max_relative_difference;
using testing::train_20_steps;

TEST(StrategyTest, MirroredMatchesOneDeviceWith1And2And4Devices) {
  for (const std::string opt : {"sgd", "adam"}) {
    const Model one = train_20_steps(std::make_shared<OneDevice>("cpu:0"), opt);
    // Training moved the weights, so agreeing below is not agreeing on the initial values.
    ASSERT_GT(max_abs_difference(one.get_weights(), initial_weights()), 1e-3) << opt;
    for (int n : {1, 2, 4}) {
      const Model mirrored =
          train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(n)), opt);
      EXPECT_EQ(mirrored.trainer().strategy().num_replicas_in_sync(), n);
      EXPECT_LE(max_relative_difference(mirrored.get_weights(), one.get_weights()), 1e-5)
          << opt << " n=" << n;
    }
  }
}

TEST(StrategyTest, NoStrategyIsOneDevice) {
  const Model none = train_20_steps(nullptr, "adam");
  const Model one = train_20_steps(std::make_shared<OneDevice>(), "adam");
  EXPECT_EQ(none.trainer().strategy().name(), "SingleDevice");
  EXPECT_EQ(max_abs_difference(none.get_weights(), one.get_weights()), 0.0);
}

TEST(StrategyTest, MirroredAndCentralStorageAgreeBitwise) {
  for (int n : {2, 4}) {
    std::vector<double> lm, lc;
    const Model mirrored = train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(n)),
                                          "adam", data_x(), &lm);
    const Model central = train_20_steps(
        std::make_shared<CentralStorageStrategy>(virtual_devices(n)), "adam", data_x(), &lc);
    EXPECT_EQ(max_abs_difference(mirrored.get_weights(), central.get_weights()), 0.0) << n;
    EXPECT_EQ(lm, lc);
  }
}

TEST(StrategyTest, TheLossLoggedIsTheGlobalBatchMean) {
  std::vector<double> l1, l4;
  train_20_steps(nullptr, "sgd", data_x(), &l1);
  train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(4)), "sgd", data_x(), &l4);
  ASSERT_EQ(l1.size(), 1u);
  EXPECT_NEAR(l4[0], l1[0], 1e-5 * std::abs(l1[0]));
}

TEST(StrategyTest, BucketSizeDoesNotChangeTheResult) {
  // 64-byte buckets: every variable in its own bucket (7 collectives a step); 25 MB: one bucket.
  const Model small = train_20_steps(
      std::make_shared<MirroredStrategy>(virtual_devices(4), MirroredOptions{.bucket_bytes = 64}),
      "adam");
  const Model big = train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(4)), "adam");
  EXPECT_EQ(max_abs_difference(small.get_weights(), big.get_weights()), 0.0);
}

TEST(StrategyTest, WhereBucketsAreReducedDoesNotChangeTheResult) {
  // One bucket per variable; on a communication thread per replica or in the replicas' hooks.
  auto strategy = [](ReduceOn where) {
    return std::make_shared<MirroredStrategy>(
        virtual_devices(4),
        MirroredOptions{.bucket_bytes = 1, .first_bucket_bytes = 1, .reduce_on = where});
  };
  const Model comm_thread = train_20_steps(strategy(ReduceOn::communication_thread), "adam");
  const Model in_backward = train_20_steps(strategy(ReduceOn::backward_thread), "adam");
  const Model one_device = train_20_steps(nullptr, "adam");
  EXPECT_EQ(max_abs_difference(comm_thread.get_weights(), in_backward.get_weights()), 0.0);
  EXPECT_LT(max_relative_difference(in_backward.get_weights(), one_device.get_weights()), 1e-5);
}

TEST(StrategyTest, ReducerStatsCoverEveryReplicaStep) {
  // The 5-16-8-3 MLP's 6 variables: a 64-byte first bucket, then the rest in one 25 MB bucket.
  const auto s = std::make_shared<MirroredStrategy>(virtual_devices(2),
                                                    MirroredOptions{.first_bucket_bytes = 64});
  EXPECT_EQ(s->reducer_stats().steps, 0);    // nothing trained yet
  const Model m = train_20_steps(s, "sgd");  // its executor holds the reducers
  const MirroredStrategy::ReducerStats st = s->reducer_stats();
  EXPECT_EQ(st.steps, 2 * 20);  // summed over the 2 replicas
  EXPECT_EQ(st.buckets, 2);
  const double total = 5 * 16 + 16 + 16 * 8 + 8 + 8 * 3 + 3;
  // Bucket 0 is the last bias alone (with the last kernel it would hold 108 bytes).
  EXPECT_DOUBLE_EQ(st.ceiling, 1.0 - (total - 3) / total);
  EXPECT_GT(st.reduce_seconds, 0.0);
  s->reset_reducer_stats();
  EXPECT_EQ(s->reducer_stats().steps, 0);
  try {
    MirroredStrategy bad(virtual_devices(2), {.first_bucket_bytes = 0});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "MirroredStrategy: first_bucket_bytes must be at least 1. Received: 0");
  }
}

TEST(StrategyTest, RunsAreDeterministic) {
  const auto s = std::make_shared<MirroredStrategy>(virtual_devices(4));
  const Model a = train_20_steps(s, "adam");
  const Model b = train_20_steps(s, "adam");
  EXPECT_EQ(max_abs_difference(a.get_weights(), b.get_weights()), 0.0);
}

TEST(StrategyTest, AGlobalBatchNotDivisibleByTheReplicasNamesBoth) {
  Model m = make_mlp();
  m.compile("sgd", "mse", {}, {.strategy = std::make_shared<MirroredStrategy>(virtual_devices(4))});
  try {
    m.fit(data_x(), data_y(), {.batch_size = 10, .verbose = 0, .shuffle = false});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "MirroredStrategy: the global batch size 10 is not divisible by the 4 "
                  "replicas in sync"),
              std::string::npos)
        << e.what();
  }
}

TEST(StrategyTest, ScopeBindsCompileAndFitOutsideItUsesThatStrategy) {
  MirroredStrategy strategy(virtual_devices(2));
  Model m;
  {
    auto scope = strategy.scope();
    EXPECT_EQ(train::current_strategy()->name(), "MirroredStrategy");
    m = make_mlp();
    m.set_weights(initial_weights());
    m.compile("adam", "mse");
  }
  EXPECT_EQ(train::current_strategy(), nullptr);
  EXPECT_EQ(m.trainer().strategy().name(), "MirroredStrategy");
  EXPECT_EQ(m.trainer().strategy().num_replicas_in_sync(), 2);
  m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  const Model one = train_20_steps(nullptr, "adam");
  EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5);
}

// As in Keras: a model whose weights exist before the scope opens cannot be compiled inside it
// (the scope is where the variables a strategy trains are made). Outside any scope, naming the
// strategy in CompileOptions adopts the same model, as does a model built lazily by its first
// step.
TEST(StrategyTest, AModelBuiltOutsideTheScopeIsRefusedWhenCompiledInsideIt) {
  MirroredStrategy strategy(virtual_devices(2));
  Model m = make_mlp();
  m.set_weights(initial_weights());
  try {
    auto scope = strategy.scope();
    m.compile("adam", "mse");
    FAIL() << "compiled a model built outside the scope";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "compile: model 'sequential' is compiled inside " + strategy.scope_label() +
                  "'s scope, but its variable sequential/dense/kernel was created outside any "
                  "strategy scope; build (or load) the model inside strategy.scope() and compile "
                  "it there");
  }
  m.compile("adam", "mse", {}, {.strategy = strategy.clone()});
  EXPECT_EQ(m.trainer().strategy().num_replicas_in_sync(), 2);
  m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  EXPECT_LE(max_relative_difference(m.get_weights(), train_20_steps(nullptr, "adam").get_weights()),
            1e-5);
  nn::clear_session();
  Model lazy = Sequential({layers::Dense(4), layers::Dense(3)});  // no weights until a step
  {
    auto scope = strategy.scope();
    lazy.compile("sgd", "mse");
  }
  lazy.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0});
  EXPECT_EQ(lazy.variables()[0].creation_scope(), strategy.scope_label());
}

// Each replica's optimizer is the primary's, built once with everything it holds: weight-decay
// exclusions are in no config, and replicas that decayed the biases the primary kept would drift
// from it (their gradients, and so the reduced ones, would differ from single-device training's).
TEST(StrategyTest, EveryReplicaKeepsThePrimaryOptimizersWeightDecayExclusions) {
  const auto train = [](const StrategyPtr& strategy) {
    auto adamw = std::make_shared<optim::AdamW>(
        optim::AdamWOptions{.learning_rate = 0.01, .weight_decay = 0.5});
    adamw->exclude_from_weight_decay({"bias"});
    Model m = make_mlp();
    m.set_weights(initial_weights());
    m.compile(adamw, "mse", {}, {.strategy = strategy});
    m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
    return m;
  };
  const Model one = train(nullptr);
  const Model mirrored = train(std::make_shared<MirroredStrategy>(virtual_devices(2)));
  EXPECT_LE(max_relative_difference(mirrored.get_weights(), one.get_weights()), 1e-5);
}

TEST(StrategyTest, MixingStrategyScopesIsAnError) {
  MirroredStrategy mirrored(virtual_devices(2));
  CentralStorageStrategy central(virtual_devices(2));
  auto outer = mirrored.scope();
  try {
    auto inner = central.scope();
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "CentralStorageStrategy.scope(): a MirroredStrategy scope is already open"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(train::current_strategy()->name(),
            "MirroredStrategy");  // the failed scope left it as it was
}

TEST(StrategyTest, WeightsSetBetweenFitsReachEveryReplica) {
  // fit once (replicas created), reset the weights, fit again: as if the first fit never happened.
  const auto s = std::make_shared<MirroredStrategy>(virtual_devices(2));
  Model m = make_mlp();
  m.set_weights(initial_weights());
  m.compile("sgd", "mse", {}, {.strategy = s});
  m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  m.set_weights(initial_weights());
  m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  const Model once = train_20_steps(s, "sgd");
  // SGD without momentum has no state besides the step counter, so the second fit repeats the
  // first.
  EXPECT_EQ(max_abs_difference(m.get_weights(), once.get_weights()), 0.0);
}

TEST(StrategyTest, SaveUnderMirroredLoadWithoutAStrategyGivesIdenticalPredictions) {
  const Model m = train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(2)), "adam");
  const auto dir = (std::filesystem::temp_directory_path() / "osprey_distribute_save").string();
  std::filesystem::remove_all(dir);
  m.save(dir);
  Model loaded = load_model(dir);
  EXPECT_EQ(loaded.trainer().strategy().name(), "SingleDevice");
  Model copy = m;
  // The same weights bit for bit. Predictions: the mirrored model splits each batch between its 2
  // replicas, the loaded one does not, so oneDNN sums in another blocking: within float32's
  // reordered sums (testing/rounding.h), and bitwise equal once the split is the same (below).
  EXPECT_EQ(max_abs_difference(copy.get_weights(), loaded.get_weights()), 0.0);
  const Tensor p_mirrored = copy.predict(data_x(), {.verbose = 0});
  const Tensor p_loaded = loaded.predict(data_x(), {.verbose = 0});
  EXPECT_LE(max(abs(sub(p_mirrored, p_loaded))).item(),
            osprey::testing::kFloat32ReorderedSums * max(abs(p_mirrored)).item());
  // Loading inside a strategy's scope mirrors the model, and it trains on as the saved one does.
  MirroredStrategy strategy(virtual_devices(2));
  Model mirrored_load;
  {
    auto scope = strategy.scope();
    mirrored_load = load_model(dir);
  }
  EXPECT_EQ(mirrored_load.trainer().strategy().name(), "MirroredStrategy");
  EXPECT_EQ(sum(abs(sub(mirrored_load.predict(data_x(), {.verbose = 0}), p_mirrored))).item(), 0.0);
  const double a =
      copy.train_on_batch(data_x().narrow(0, 0, 8), data_y().narrow(0, 0, 8)).at("loss");
  const double b =
      mirrored_load.train_on_batch(data_x().narrow(0, 0, 8), data_y().narrow(0, 0, 8)).at("loss");
  EXPECT_EQ(a, b);
  EXPECT_EQ(max_abs_difference(copy.get_weights(), mirrored_load.get_weights()), 0.0);
  std::filesystem::remove_all(dir);
}

TEST(StrategyTest, Keras3DataParallelIsTheSameEngine) {
  EXPECT_EQ(distribution::list_devices().front(), "cpu:0");
  distribution::set_distribution(distribution::DataParallel(virtual_devices(4)));
  ASSERT_NE(distribution::distribution(), nullptr);
  Model m = make_mlp();
  m.set_weights(initial_weights());
  m.compile("adam", "mse");
  distribution::set_distribution(std::nullopt);
  EXPECT_EQ(distribution::distribution(), nullptr);
  EXPECT_EQ(m.trainer().strategy().name(), "MirroredStrategy");
  EXPECT_EQ(m.trainer().strategy().num_replicas_in_sync(), 4);
  m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  const Model mirrored =
      train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(4)), "adam");
  EXPECT_EQ(max_abs_difference(m.get_weights(), mirrored.get_weights()), 0.0);
  EXPECT_THROW(distribution::list_devices("gpu"), ValueError);
}

TEST(StrategyTest, DistributedEvaluateAndPredictMatchOneDevice) {
  // 4 replicas; batches of 7 rows do not divide: shares of 2, 2, 2, 1, concatenated in order.
  for (const StrategyPtr& s :
       {StrategyPtr(std::make_shared<MirroredStrategy>(virtual_devices(4))),
        StrategyPtr(std::make_shared<CentralStorageStrategy>(virtual_devices(4)))}) {
    Model one = train_20_steps(nullptr, "adam");
    Model dist = make_mlp();
    dist.set_weights(one.get_weights());
    dist.compile("adam", "mse", {"mae"}, {.strategy = s});
    Model ref = make_mlp();
    ref.set_weights(one.get_weights());
    ref.compile("adam", "mse", {"mae"});
    const Tensor p1 = ref.predict(data_x(), {.batch_size = 7});
    const Tensor p4 = dist.predict(data_x(), {.batch_size = 7});
    ASSERT_EQ(p4.shape(), p1.shape());
    EXPECT_LE(max(abs(sub(p4, p1))).item(), 1e-6 * max(abs(p1)).item()) << s->name();
    const auto e1 = ref.evaluate(data_x(), data_y(), {.batch_size = 7});
    const auto e4 = dist.evaluate(data_x(), data_y(), {.batch_size = 7});
    EXPECT_NEAR(e4.at("loss"), e1.at("loss"), 1e-6 * e1.at("loss")) << s->name();
    EXPECT_NEAR(e4.at("mae"), e1.at("mae"), 1e-6 * e1.at("mae")) << s->name();
  }
}

Model make_bn_model() {
  nn::clear_session();
  return Sequential({layers::Dense(4), layers::BatchNormalization({.momentum = 0.5})},
                    {.input_shape = {5}});
}

// One step at learning rate 0 (the weights stay put, so only the statistics move); returns the
// BatchNormalization layer's moving mean and variance.
std::pair<Tensor, Tensor> bn_moving_statistics_after_one_step(const StrategyPtr& s) {
  static const std::vector<Tensor> init = make_bn_model().get_weights();
  Model m = make_bn_model();
  m.set_weights(init);
  m.compile(std::make_shared<optim::SGD>(optim::SGDOptions{.learning_rate = 0.0}), "mse", {},
            {.strategy = s});
  // Rows 4..7 shifted by 3: the two replicas' shares have different statistics.
  Tensor x = data_x().narrow(0, 0, 8).clone();  // a copy: data_x() is shared by the tests
  for (int i = 20; i < 40; ++i) x.data<float>()[i] += 3.0f;
  m.train_on_batch(x, random_normal({8, 4}, {.seed = 5}));
  auto bn = std::dynamic_pointer_cast<nn::BatchNormalization>(m.layers()[1]);
  return {bn->moving_mean().value().clone(), bn->moving_variance().value().clone()};
}

TEST(StrategyTest, BatchNormUsesPerReplicaStatisticsAndAveragesTheMovingOnes) {
  const auto [mean1, var1] = bn_moving_statistics_after_one_step(nullptr);
  const auto [mean2, var2] =
      bn_moving_statistics_after_one_step(std::make_shared<MirroredStrategy>(virtual_devices(2)));
  // The moving mean is linear in the batch mean: the mean of the replicas' equals one device's.
  EXPECT_LE(max(abs(sub(mean2, mean1))).item(), 1e-6 * std::max(1.0, max(abs(mean1)).item()));
  // Each replica normalizes with its own share's variance, smaller than the whole batch's here
  // (the shift between the shares is within-batch variance only for one device).
  EXPECT_GT(max(abs(sub(var2, var1))).item(), 1e-2);
  EXPECT_LT(sum(var2).item(), sum(var1).item());
  // CentralStorage averages the moving statistics to the host: the same values.
  const auto [mean_c, var_c] = bn_moving_statistics_after_one_step(
      std::make_shared<CentralStorageStrategy>(virtual_devices(2)));
  EXPECT_EQ(max(abs(sub(mean_c, mean2))).item(), 0.0);
  EXPECT_EQ(max(abs(sub(var_c, var2))).item(), 0.0);
}

TEST(StrategyTest, BadDeviceListsAreNamed) {
  try {
    MirroredStrategy s({"cpu:0", "cpu:0"});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("MirroredStrategy: device \"cpu:0\" is listed twice"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(CentralStorageStrategy({"tpu:0"}), ValueError);
}

}  // namespace
}  // namespace osprey::distribute
