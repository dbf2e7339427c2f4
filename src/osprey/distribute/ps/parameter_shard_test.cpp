// ParameterShard: sync k-of-n aggregation (weighted means, late, duplicate and abandoned shares),
// async staleness control (drop, down-weight, staleness-aware learning rate), the optimizer's
// slots on the shard, re-registration, validation messages, checkpoints and the histogram.
// Every expected number is computed by hand in the comment above it.
#include "osprey/distribute/ps/parameter_shard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "osprey/comm/rpc/not_found_error.h"
#include "osprey/core/error.h"
#include "osprey/io/safetensors.h"
#include "osprey/io/temporary_directory.h"
#include "osprey/optim/adam.h"
#include "osprey/optim/factory.h"
#include "osprey/optim/sgd.h"
#include "osprey/tensor/factory.h"

namespace osprey::distribute::ps {
namespace {

namespace fs = std::filesystem;

Tensor vec(std::vector<float> v) { return from_vector<float>(v); }

std::string sgd(double lr) { return optim::serialize(optim::SGD({.learning_rate = lr})).dump(); }

ShardConfig sync_config(int k, int n, double lr = 0.1) {
  return {.optimizer = sgd(lr), .mode = "sync", .replicas_to_aggregate = k, .total_replicas = n};
}

ShardConfig async_config(StalenessPolicy policy, double lr = 0.1) {
  return {.optimizer = sgd(lr), .mode = "async", .staleness = policy};
}

std::vector<float> value_of(const ParameterShard& shard, const std::string& name) {
  for (const auto& [n, t] : shard.variables()) {
    if (n == name) return t.to_vector<float>();
  }
  ADD_FAILURE() << "no variable " << name;
  return {};
}

void expect_values(const ParameterShard& shard, const std::string& name,
                   const std::vector<float>& expected) {
  const std::vector<float> got = value_of(shard, name);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6) << i;
}

PushArgs sync_push(int64_t step, int share, double weight, std::vector<float> g) {
  return {.step = step, .share = share, .weight = weight, .gradients = {{"w", vec(std::move(g))}}};
}

PushArgs async_push(int64_t base_version, std::vector<float> g) {
  return {.base_version = base_version, .gradients = {{"w", vec(std::move(g))}}};
}

template <class E, class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}

TEST(ParameterShardTest, SyncAveragesTheFirstKSharesWeightedByRows) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({1, 2})}}, {}, sync_config(2, 3), false);
  // Shares of 1 and 3 rows: mean = (1*[1, 1] + 3*[5, -3]) / 4 = [4, -2];
  // SGD lr 0.1: [1, 2] - 0.1*[4, -2] = [0.6, 2.2].
  EXPECT_EQ(shard.push(sync_push(0, 0, 1, {1, 1})).outcome, PushOutcome::aggregating);
  expect_values(shard, "w", {1, 2});
  const PushResult r = shard.push(sync_push(0, 1, 3, {5, -3}));
  EXPECT_EQ(r.outcome, PushOutcome::applied);
  EXPECT_EQ(r.version, 1);
  expect_values(shard, "w", {0.6F, 2.2F});
  // The third share of step 0 arrives after the step was applied: dropped and counted.
  EXPECT_EQ(shard.push(sync_push(0, 2, 1, {100, 100})).outcome, PushOutcome::dropped_late);
  expect_values(shard, "w", {0.6F, 2.2F});
  const ShardStats s = shard.stats(false);
  EXPECT_EQ(s.version, 1);
  EXPECT_EQ(s.pushes, 3);
  EXPECT_EQ(s.applied, 2);
  EXPECT_EQ(s.dropped, 1);
}

TEST(ParameterShardTest, SyncWithOneShareAppliesItsGradientExactly) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({1, 2})}}, {}, sync_config(1, 1), false);
  // 0.3 rows: w*g/w in float could differ from g; the double accumulator gives g back, so the
  // update is bit-identical to SGD's own on g.
  shard.push(sync_push(0, 0, 0.3, {0.7F, -0.1F}));
  optim::SGD sgd({.learning_rate = 0.1});
  autograd::Variable w(vec({1, 2}), true, "w");
  w.set_grad(vec({0.7F, -0.1F}));
  sgd.apply({w});
  EXPECT_EQ(value_of(shard, "w"), w.value().to_vector<float>());
}

TEST(ParameterShardTest, SyncRepeatedShareIsADuplicateAndCountsOnce) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({0})}}, {}, sync_config(2, 2), false);
  EXPECT_EQ(shard.push(sync_push(0, 0, 1, {2})).outcome, PushOutcome::aggregating);
  // A re-run of share 0 (its first worker was thought dead) is ignored, whatever it carries.
  EXPECT_EQ(shard.push(sync_push(0, 0, 1, {50})).outcome, PushOutcome::duplicate);
  EXPECT_EQ(shard.version(), 0);
  // mean = (2 + 4) / 2 = 3; 0 - 0.1*3 = -0.3.
  EXPECT_EQ(shard.push(sync_push(0, 1, 1, {4})).outcome, PushOutcome::applied);
  expect_values(shard, "w", {-0.3F});
  EXPECT_EQ(shard.stats(false).dropped, 0);
}

TEST(ParameterShardTest, SyncNewerStepDiscardsThePartialStepAndItsStragglersAreLate) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({0})}}, {}, sync_config(2, 2), false);
  EXPECT_EQ(shard.push(sync_push(0, 0, 1, {1})).outcome, PushOutcome::aggregating);
  // Step 1 starts before step 0 completed: step 0's one share is dropped.
  EXPECT_EQ(shard.push(sync_push(1, 0, 1, {10})).outcome, PushOutcome::aggregating);
  EXPECT_EQ(shard.stats(false).dropped, 1);
  EXPECT_EQ(shard.push(sync_push(0, 1, 1, {1})).outcome, PushOutcome::dropped_late);
  EXPECT_EQ(shard.stats(false).dropped, 2);
  // mean of step 1 = (10 + 30) / 2 = 20; 0 - 0.1*20 = -2.
  EXPECT_EQ(shard.push(sync_push(1, 1, 1, {30})).outcome, PushOutcome::applied);
  expect_values(shard, "w", {-2});
  // A re-registration reports the last step applied.
  EXPECT_EQ(shard.register_variables({{"w", vec({0})}}, {}, sync_config(2, 2), false).last_step, 1);
}

TEST(ParameterShardTest, SyncShareOutsideTheStepsSharesIsRefused) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({0})}}, {}, sync_config(1, 2), false);
  EXPECT_EQ(error_of<ValueError>([&] { shard.push(sync_push(0, 2, 1, {1})); }),
            "ps: a sync push's share must be in [0, 2) (total_replicas=2). Received: share=2 "
            "from worker 0");
}

TEST(ParameterShardTest, SyncStateTakesTheLastAcceptedSharesValueWhenTheStepApplies) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({0})}}, {{"bn/moving_mean", vec({0, 0})}}, sync_config(2, 3),
                           false);
  PushArgs a = sync_push(0, 0, 1, {1});
  a.state = {{"bn/moving_mean", vec({1, 1})}};
  PushArgs b = sync_push(0, 2, 1, {1});
  b.state = {{"bn/moving_mean", vec({2, 3})}};
  shard.push(a);
  EXPECT_EQ(shard.state()[0].second.to_vector<float>(), (std::vector<float>{0, 0}));
  shard.push(b);
  EXPECT_EQ(shard.state()[0].second.to_vector<float>(), (std::vector<float>{2, 3}));
}

TEST(ParameterShardTest, AsyncDropsGradientsPastTheStalenessBound) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({1})}}, {}, async_config({.max_staleness = 1}), false);
  // Three gradients computed on version 0: staleness 0 and 1 apply (1 -> 0.9 -> 0.8), 2 drops.
  PushResult r = shard.push(async_push(0, {1}));
  EXPECT_EQ(r.outcome, PushOutcome::applied);
  EXPECT_EQ(r.staleness, 0);
  r = shard.push(async_push(0, {1}));
  EXPECT_EQ(r.outcome, PushOutcome::applied);
  EXPECT_EQ(r.staleness, 1);
  r = shard.push(async_push(0, {1}));
  EXPECT_EQ(r.outcome, PushOutcome::dropped_stale);
  EXPECT_EQ(r.staleness, 2);
  EXPECT_EQ(r.version, 2);
  expect_values(shard, "w", {0.8F});
  const ShardStats s = shard.stats(false);
  EXPECT_EQ(s.applied, 2);
  EXPECT_EQ(s.dropped, 1);
}

TEST(ParameterShardTest, AsyncDownWeightsGradientsPastTheBound) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({1})}}, {},
                           async_config({.max_staleness = 0, .down_weight_beyond = true}), false);
  shard.push(async_push(0, {1}));  // staleness 0: 1 - 0.1 = 0.9
  // staleness 1 > 0: the gradient is scaled by 1/(1+1): 0.9 - 0.1*0.5 = 0.85.
  const PushResult r = shard.push(async_push(0, {1}));
  EXPECT_EQ(r.outcome, PushOutcome::applied);
  expect_values(shard, "w", {0.85F});
  // staleness 2: 1/3: 0.85 - 0.1/3.
  shard.push(async_push(0, {1}));
  expect_values(shard, "w", {0.85F - 0.1F / 3});
}

TEST(ParameterShardTest, AsyncStalenessAwareLearningRateDividesByTheStaleness) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({1})}}, {}, async_config({.staleness_aware_lr = true}),
                           false);
  shard.push(async_push(0, {1}));  // staleness 0: lr 0.1 / max(1, 0): 1 -> 0.9
  shard.push(async_push(0, {1}));  // staleness 1: lr 0.1: 0.9 -> 0.8
  shard.push(async_push(0, {1}));  // staleness 2: lr 0.05: 0.8 -> 0.75
  expect_values(shard, "w", {0.75F});
  shard.push(async_push(0, {1}));  // staleness 3: lr 0.1/3
  expect_values(shard, "w", {0.75F - 0.1F / 3});
  // The optimizer's own rate is back: a fresh gradient uses 0.1 again.
  shard.push(async_push(shard.version(), {1}));
  expect_values(shard, "w", {0.65F - 0.1F / 3});
}

TEST(ParameterShardTest, StalenessHistogramPutsSixteenAndMoreInTheLastBucket) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({0})}}, {}, async_config({}, 0.0), false);
  // 18 gradients computed on version 0: staleness 0, 1, ..., 17.
  for (int i = 0; i < 18; ++i) shard.push(async_push(0, {1}));
  // A worker ahead of a restored shard: negative staleness counts as 0.
  shard.push(async_push(100, {1}));
  ShardStats s = shard.stats(true);
  ASSERT_EQ(s.staleness_histogram.size(), static_cast<size_t>(kStalenessBuckets));
  EXPECT_EQ(s.staleness_histogram[0], 2);
  for (int i = 1; i < 16; ++i) EXPECT_EQ(s.staleness_histogram[static_cast<size_t>(i)], 1) << i;
  EXPECT_EQ(s.staleness_histogram[16], 2);  // 16 and 17
  EXPECT_EQ(s.pushes, 19);
  EXPECT_EQ(s.variables, 1);
  EXPECT_EQ(s.parameters, 1);
  // reset: new counters, the version stays.
  s = shard.stats(false);
  EXPECT_EQ(s.pushes, 0);
  EXPECT_EQ(s.staleness_histogram[16], 0);
  EXPECT_EQ(s.version, 19);
}

TEST(ParameterShardTest, AdamSlotsLiveOnTheShardAndMatchOptimsOwnAdam) {
  io::TemporaryDirectory tmp("osprey-shard");
  ParameterShard shard({.checkpoint_dir = (tmp.path() / "ps0").string()});
  const optim::Adam reference_config({.learning_rate = 0.01});
  const ShardConfig config{.optimizer = optim::serialize(reference_config).dump(), .mode = "async"};
  const Tensor w0 = random_normal({3, 2}, {.seed = 7});
  shard.register_variables({{"dense/kernel", w0}}, {}, config, false);

  optim::Adam adam({.learning_rate = 0.01});
  autograd::Variable w(w0.clone(), true, "dense/kernel");
  for (uint64_t step = 0; step < 3; ++step) {
    const Tensor g = random_normal({3, 2}, {.seed = 100 + step});
    shard.push({.base_version = shard.version(), .gradients = {{"dense/kernel", g}}});
    w.set_grad(g.clone());
    adam.apply({w});
  }
  const std::vector<float> expected = w.value().to_vector<float>();
  const std::vector<float> got = value_of(shard, "dense/kernel");
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(got[i], expected[i]) << i;

  // The slots: read back from the shard's checkpoint.
  shard.checkpoint();
  const io::SafetensorsFile f = io::load_safetensors(tmp.path() / "ps0" / "shard.safetensors");
  for (const std::string slot : {"momentum", "velocity"}) {
    const std::vector<float> mine = f.at("optimizer/dense/kernel/" + slot).to_vector<float>();
    const std::vector<float> theirs = adam.slot("dense/kernel", slot).to_vector<float>();
    ASSERT_EQ(mine.size(), theirs.size());
    for (size_t i = 0; i < mine.size(); ++i) EXPECT_FLOAT_EQ(mine[i], theirs[i]) << slot << i;
  }
  EXPECT_EQ(f.at("optimizer/iterations").item(), 3);
}

TEST(ParameterShardTest, ReRegistrationKeepsValuesUnlessOverwrite) {
  ParameterShard shard;
  RegisterResult r = shard.register_variables({{"w", vec({1, 2})}}, {}, async_config({}), false);
  EXPECT_FALSE(r.kept_existing);
  shard.push(async_push(0, {1, 1}));  // [0.9, 1.9]
  r = shard.register_variables({{"w", vec({7, 7})}}, {}, async_config({}), false);
  EXPECT_TRUE(r.kept_existing);
  EXPECT_EQ(r.version, 1);
  expect_values(shard, "w", {0.9F, 1.9F});
  r = shard.register_variables({{"w", vec({7, 7})}}, {}, async_config({}), true);
  EXPECT_FALSE(r.kept_existing);
  EXPECT_EQ(r.version, 2);  // new values: the version moves on, never back
  expect_values(shard, "w", {7, 7});
}

TEST(ParameterShardTest, ReRegistrationWithAnotherShapeOrNameOrOptimizerIsRefused) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({1, 2})}}, {}, async_config({}), false);
  EXPECT_EQ(error_of<ValueError>([&] {
              shard.register_variables({{"w", vec({1, 2, 3})}}, {}, async_config({}), false);
            }),
            "ps: variable 'w' has shape [2] on this shard, but the registration has [3]");
  EXPECT_EQ(error_of<ValueError>([&] {
              shard.register_variables({{"v", vec({1, 2})}}, {}, async_config({}), false);
            }),
            "ps: registration names variable 'v', which this shard does not hold (it holds 1 "
            "variables registered earlier or restored); names must agree");
  ShardConfig adam = async_config({});
  adam.optimizer = optim::serialize(optim::Adam()).dump();
  EXPECT_EQ(error_of<ValueError>([&] {
              shard.register_variables({{"w", vec({1, 2})}}, {}, adam, false);
            }),
            "ps: this shard's optimizer is SGD (its slots live here), but the registration asks "
            "for Adam; register with overwrite to start a new job");
  expect_values(shard, "w", {1, 2});
}

TEST(ParameterShardTest, BadConfigsAreRefusedWithWhatWasReceived) {
  ParameterShard shard;
  const NamedTensors w = {{"w", vec({1})}};
  ShardConfig c = sync_config(3, 2);
  EXPECT_EQ(error_of<ValueError>([&] { shard.register_variables(w, {}, c, false); }),
            "ps: sync training needs 1 <= replicas_to_aggregate <= total_replicas. Received: "
            "replicas_to_aggregate=3, total_replicas=2");
  c = sync_config(1, 1);
  c.mode = "eventual";
  EXPECT_EQ(error_of<ValueError>([&] { shard.register_variables(w, {}, c, false); }),
            "ps: mode must be \"sync\" or \"async\". Received: mode=\"eventual\"");
  c = sync_config(1, 1);
  c.optimizer = "{not json";
  EXPECT_NE(error_of<ValueError>([&] {
              shard.register_variables(w, {}, c, false);
            }).find("ps: the optimizer config is not valid JSON"),
            std::string::npos);
  EXPECT_FALSE(shard.registered());
}

TEST(ParameterShardTest, UnknownVariableIsNotFoundAndChangesNothing) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({1})}}, {}, async_config({}), false);
  PushArgs args = async_push(0, {1});
  args.gradients.emplace_back("dense/bias", vec({1}));
  args.worker = 3;
  EXPECT_EQ(error_of<comm::rpc::NotFoundError>([&] { shard.push(args); }),
            "ps: worker 3 pushed a gradient for 'dense/bias', which is not one of this shard's 1 "
            "variables");
  expect_values(shard, "w", {1});
  EXPECT_EQ(shard.version(), 0);
  EXPECT_EQ(shard.stats(false).pushes, 0);
}

TEST(ParameterShardTest, WrongShapeNonFiniteGradientAndBadWeightAreRefused) {
  ParameterShard shard;
  shard.register_variables({{"w", vec({1, 2})}}, {}, async_config({}), false);
  EXPECT_EQ(error_of<ValueError>([&] {
              shard.push(async_push(0, {1, 2, 3}));
            }),
            "ps: the gradient of 'w' from worker 0 has shape [3], but the variable has shape [2]");
  EXPECT_EQ(error_of<ValueError>([&] {
              shard.push(async_push(0, {1, NAN}));
            }),
            "ps: the gradient of 'w' from worker 0 is not finite (nan at flat index 1); refused "
            "so that the shared parameters stay usable");
  PushArgs args = async_push(0, {1, 1});
  args.weight = 0;
  EXPECT_EQ(error_of<ValueError>([&] { shard.push(args); }),
            "ps: a push's weight (its rows) must be positive and finite. Received: weight=0 from "
            "worker 0");
  expect_values(shard, "w", {1, 2});
}

TEST(ParameterShardTest, PushBeforeRegistrationIsRefused) {
  ParameterShard shard({.name = "ps 2"});
  EXPECT_EQ(error_of<ValueError>([&] { shard.push(async_push(0, {1})); }),
            "ps 2: push before any variables were registered");
}

TEST(ParameterShardTest, CheckpointRestoresValuesSlotsVersionAndConfig) {
  io::TemporaryDirectory tmp("osprey-shard");
  const std::string dir = (tmp.path() / "ps0").string();
  ShardConfig config = sync_config(1, 2);
  config.optimizer = optim::serialize(optim::Adam({.learning_rate = 0.01})).dump();
  ParameterShard a({.checkpoint_dir = dir});
  a.register_variables(
      {{"dense/kernel", random_normal({4, 3}, {.seed = 1})}, {"dense/bias", vec({0.5F, -0.5F, 0})}},
      {{"bn/moving_mean", vec({3})}}, config, false);
  for (int step = 0; step < 3; ++step) {
    PushArgs p{.step = step,
               .weight = 8,
               .gradients = {{"dense/kernel", random_normal({4, 3}, {.seed = 10U + step})},
                             {"dense/bias", vec({0.1F, 0.2F, 0.3F})}},
               .state = {{"bn/moving_mean", vec({static_cast<float>(step)})}}};
    a.push(p);
  }
  EXPECT_TRUE(a.changed_since_checkpoint());
  int64_t version = -1;
  EXPECT_EQ(a.checkpoint(&version), dir);
  EXPECT_EQ(version, 3);
  EXPECT_FALSE(a.changed_since_checkpoint());

  ParameterShard b({.checkpoint_dir = dir});
  ASSERT_TRUE(b.registered());
  EXPECT_FALSE(b.changed_since_checkpoint());
  EXPECT_EQ(b.version(), 3);
  const auto va = a.variables(), vb = b.variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    EXPECT_EQ(va[i].first, vb[i].first);
    EXPECT_EQ(va[i].second.to_vector<float>(), vb[i].second.to_vector<float>());
  }
  EXPECT_EQ(b.state()[0].second.to_vector<float>(), (std::vector<float>{2}));
  // The restored shard knows step 2 was applied, and its Adam continues where a's did: the
  // same next gradient gives bit-identical values on both.
  EXPECT_EQ(b.push({.step = 2, .gradients = {{"dense/bias", vec({1, 1, 1})}}}).outcome,
            PushOutcome::dropped_late);
  const PushArgs next{.step = 3, .gradients = {{"dense/bias", vec({1, 1, 1})}}};
  a.push(next);
  b.push(next);
  EXPECT_EQ(value_of(a, "dense/bias"), value_of(b, "dense/bias"));
  // A re-registration of the restored shard keeps what it restored.
  const RegisterResult r =
      b.register_variables({{"dense/kernel", zeros({4, 3})}, {"dense/bias", zeros({3})}},
                           {{"bn/moving_mean", zeros({1})}}, config, false);
  EXPECT_TRUE(r.kept_existing);
  EXPECT_EQ(r.last_step, 3);
  EXPECT_EQ(value_of(a, "dense/bias"), value_of(b, "dense/bias"));
}

TEST(ParameterShardTest, DamagedCheckpointIsAnIoErrorNamingTheFile) {
  io::TemporaryDirectory tmp("osprey-shard");
  const fs::path dir = tmp.path() / "ps0";
  {
    ParameterShard a({.checkpoint_dir = dir.string()});
    a.register_variables({{"w", vec({1, 2, 3, 4})}}, {}, sync_config(1, 1), false);
    a.checkpoint();
  }
  const fs::path tensors = dir / "shard.safetensors";
  fs::resize_file(tensors, fs::file_size(tensors) - 4);  // a torn write
  std::string message =
      error_of<IoError>([&] { ParameterShard b({.checkpoint_dir = dir.string()}); });
  EXPECT_NE(message.find(tensors.string()), std::string::npos) << message;

  std::ofstream(dir / "manifest.json") << "{\"format\": ";
  message = error_of<IoError>([&] { ParameterShard b({.checkpoint_dir = dir.string()}); });
  EXPECT_NE(message.find((dir / "manifest.json").string()), std::string::npos) << message;

  fs::remove(dir / "manifest.json");
  message = error_of<IoError>([&] { ParameterShard b({.checkpoint_dir = dir.string()}); });
  EXPECT_NE(message.find("manifest.json is missing"), std::string::npos) << message;
}

TEST(ParameterShardTest, CheckpointNeedsADirectoryAndRegisteredVariables) {
  ParameterShard none;
  EXPECT_NE(error_of<ValueError>([&] { none.checkpoint(); }).find("needs a checkpoint directory"),
            std::string::npos);
  io::TemporaryDirectory tmp("osprey-shard");
  ParameterShard empty({.checkpoint_dir = (tmp.path() / "ps0").string()});
  EXPECT_FALSE(empty.registered());  // an absent directory holds no checkpoint
  EXPECT_EQ(error_of<ValueError>([&] { empty.checkpoint(); }),
            "ps: checkpoint() before any variables were registered");
}

}  // namespace
}  // namespace osprey::distribute::ps
