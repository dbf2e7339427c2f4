// Mixing strategies: weights and optimizer slots remember the strategy scope they were created
// under, and using them under another strategy is an error naming the variable and both
// strategies (the seeds warn that this mistake is otherwise hard to trace).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "osprey/distribute/data_parallel/central_storage_strategy.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/one_device_strategy.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/adam.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace osprey::distribute {
namespace {

Model make_mlp() {
  nn::clear_session();
  return Sequential({layers::Dense(4, "relu"), layers::Dense(2)}, {.input_shape = {3}});
}

const Tensor& data_x() {
  static const Tensor x = random_normal({8, 3}, {.seed = 21});
  return x;
}
const Tensor& data_y() {
  static const Tensor y = random_normal({8, 2}, {.seed = 22});
  return y;
}

// Runs fn, which must throw a ValueError whose message contains `expected`.
template <class Fn>
void expect_error(Fn&& fn, const std::string& expected) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected: " << expected;
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(StrategyScopeTest, WeightsRecordTheScopeTheyWereCreatedUnder) {
  MirroredStrategy strategy(virtual_devices(2));
  Model outside = make_mlp();
  EXPECT_EQ(outside.variables()[0].creation_scope(), "");
  Model inside;
  {
    auto scope = strategy.scope();
    inside = make_mlp();
  }
  // The label is the description and the strategy's id.
  EXPECT_EQ(strategy.scope_label(),
            fmt::format("MirroredStrategy(cpu:0, cpu:1) #{}", strategy.id()));
  for (const auto& v : inside.variables())
    EXPECT_EQ(v.creation_scope(), strategy.scope_label()) << v.name();
  // Built lazily by the first step of a model compiled for a strategy: that strategy's.
  nn::clear_session();
  Model lazy = Sequential({layers::Dense(4), layers::Dense(2)});
  const auto compiled_for = std::make_shared<MirroredStrategy>(virtual_devices(2));
  lazy.compile("sgd", "mse", {}, {.strategy = compiled_for});
  lazy.train_on_batch(data_x(), data_y());
  ASSERT_FALSE(lazy.variables().empty());
  for (const auto& v : lazy.variables())
    EXPECT_EQ(v.creation_scope(), compiled_for->scope_label()) << v.name();
}

TEST(StrategyScopeTest, AModelBuiltUnderOneStrategyCannotBeCompiledUnderAnother) {
  MirroredStrategy mirrored(virtual_devices(2));
  Model m;
  {
    auto scope = mirrored.scope();
    m = make_mlp();
  }
  CentralStorageStrategy central(virtual_devices(2));
  expect_error(
      [&] {
        auto scope = central.scope();
        m.compile("adam", "mse");
      },
      fmt::format(
          "compile: variable sequential/dense/kernel was created under {}'s scope, but model "
          "'sequential' is compiled for {}; mixing strategies is not supported: build, compile "
          "and fit the model under one strategy's scope",
          mirrored.scope_label(), central.scope_label()));
  // Another device list is another strategy; so is none at all.
  expect_error(
      [&] {
        m.compile("adam", "mse", {},
                  {.strategy = std::make_shared<MirroredStrategy>(virtual_devices(4))});
      },
      "is compiled for MirroredStrategy(cpu:0, cpu:1, cpu:2, cpu:3) #");
  expect_error(
      [&] { m.compile("adam", "mse"); },
      fmt::format("compile: variable sequential/dense/kernel was created under {}'s scope, but "
                  "model 'sequential' is compiled for no strategy",
                  mirrored.scope_label()));
  // A copy is the same strategy (scope() opens one).
  m.compile("adam", "mse", {}, {.strategy = mirrored.clone()});
  m.train_on_batch(data_x(), data_y());
}

// Strategies are told apart by identity, not by description: two MirroredStrategy objects on the
// same devices but with other bucket sizes describe themselves alike, and are still two.
TEST(StrategyScopeTest, TwoStrategiesThatDescribeThemselvesAlikeAreStillTwo) {
  MirroredStrategy small_buckets(virtual_devices(2),
                                 {.bucket_bytes = 1024, .first_bucket_bytes = 256});
  const auto big_buckets = std::make_shared<MirroredStrategy>(virtual_devices(2));
  ASSERT_EQ(small_buckets.describe(), big_buckets->describe());
  EXPECT_NE(small_buckets.id(), big_buckets->id());
  EXPECT_NE(small_buckets.scope_label(), big_buckets->scope_label());
  Model m;
  {
    auto scope = small_buckets.scope();
    m = make_mlp();
  }
  expect_error(
      [&] { m.compile("adam", "mse", {}, {.strategy = big_buckets}); },
      fmt::format(
          "compile: variable sequential/dense/kernel was created under {}'s scope, but model "
          "'sequential' is compiled for {}; mixing strategies is not supported",
          small_buckets.scope_label(), big_buckets->scope_label()));
  // Opening the other one's scope does not help either: compile binds to the scope's strategy.
  expect_error(
      [&] {
        auto scope = big_buckets->scope();
        m.compile("adam", "mse");
      },
      "mixing strategies is not supported");
  // A model compiled for one cannot run inside the other's scope.
  Model built_under_big;
  {
    auto scope = big_buckets->scope();
    built_under_big = make_mlp();
    built_under_big.compile("sgd", "mse");
  }
  expect_error(
      [&] {
        auto scope = small_buckets.scope();
        built_under_big.fit(data_x(), data_y(), {.batch_size = 8, .verbose = 0});
      },
      fmt::format("fit: called inside a {} scope, but model 'sequential' is compiled for {}",
                  small_buckets.scope_label(), big_buckets->scope_label()));
  // Its own strategy (a copy of it, as scope() opens) compiles and trains it.
  m.compile("adam", "mse", {}, {.strategy = small_buckets.clone()});
  m.train_on_batch(data_x(), data_y());
}

TEST(StrategyScopeTest, AModelCompiledForOneStrategyCannotRunInsideAnothersScope) {
  MirroredStrategy mirrored(virtual_devices(2));
  Model plain = make_mlp();
  plain.compile("sgd", "mse");
  expect_error(
      [&] {
        auto scope = mirrored.scope();
        plain.fit(data_x(), data_y(), {.batch_size = 8, .verbose = 0});
      },
      fmt::format(
          "fit: called inside a {} scope, but model 'sequential' is compiled for no strategy; its "
          "variable sequential/dense/kernel was created outside any strategy scope. A model runs "
          "under the strategy it was compiled with: build and compile it inside this scope, or "
          "call "
          "fit outside it",
          mirrored.scope_label()));
  OneDevice one("cpu:0");
  Model single;
  {
    auto scope = one.scope();
    single = make_mlp();
    single.compile("sgd", "mse");
  }
  expect_error(
      [&] {
        auto scope = mirrored.scope();
        single.predict(data_x(), {.verbose = 0});
      },
      fmt::format("predict: called inside a {} scope, but model 'sequential' is compiled for {}; "
                  "its variable "
                  "sequential/dense/kernel was created under {}'s scope",
                  mirrored.scope_label(), one.scope_label(), one.scope_label()));
  expect_error(
      [&] {
        auto scope = mirrored.scope();
        single.evaluate(data_x(), data_y(), {.verbose = 0});
      },
      fmt::format("evaluate: called inside a {} scope", mirrored.scope_label()));
  // Inside its own strategy's scope, or outside any, it runs.
  {
    auto scope = one.scope();
    single.fit(data_x(), data_y(), {.batch_size = 8, .verbose = 0});
  }
  single.fit(data_x(), data_y(), {.batch_size = 8, .verbose = 0});
}

TEST(StrategyScopeTest, AnOptimizerWhoseSlotsBelongToAnotherStrategyIsRefused) {
  MirroredStrategy mirrored(virtual_devices(2));
  auto adam = std::make_shared<optim::Adam>();
  Model a;
  {
    auto scope = mirrored.scope();
    a = make_mlp();
    a.compile(adam, "mse");
  }
  a.fit(data_x(), data_y(),
        {.batch_size = 8, .verbose = 0});  // outside the scope: still Mirrored's
  EXPECT_EQ(adam->slot_origin().scope, mirrored.scope_label());
  Model b = make_mlp();
  expect_error(
      [&] { b.compile(adam, "mse"); },
      fmt::format(
          "compile: optimizer 'adam' already holds slots created under {}'s scope (the first for "
          "variable sequential/dense/kernel), but model 'sequential' is compiled for no strategy; "
          "mixing strategies is not supported: create the optimizer under the scope of the "
          "strategy it trains with",
          mirrored.scope_label()));
  // Nor can a strategy that describes itself alike take them over.
  Model e = make_mlp();
  expect_error(
      [&] {
        e.compile(adam, "mse", {},
                  {.strategy = std::make_shared<MirroredStrategy>(virtual_devices(2))});
      },
      fmt::format("compile: optimizer 'adam' already holds slots created under {}'s scope",
                  mirrored.scope_label()));
  // Slots made outside any scope are adopted, as weights are.
  auto plain = std::make_shared<optim::Adam>();
  Model c = make_mlp();
  c.compile(plain, "mse");
  c.train_on_batch(data_x(), data_y());
  EXPECT_EQ(plain->slot_origin().scope, "");
  EXPECT_EQ(plain->slot_origin().variable, "sequential/dense/kernel");
  Model d = make_mlp();
  d.compile(plain, "mse", {}, {.strategy = std::make_shared<MirroredStrategy>(virtual_devices(2))});
}

}  // namespace
}  // namespace osprey::distribute
