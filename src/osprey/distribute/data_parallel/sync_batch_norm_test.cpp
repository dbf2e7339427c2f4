// Synchronized BatchNormalization under MirroredStrategy against one device on the whole global
// batch, per-replica statistics against synchronized ones, and the option's config round trip.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "osprey/comm/in_process.h"
#include "osprey/distribute/data_parallel/central_storage_strategy.h"
#include "osprey/distribute/data_parallel/communicator_replica_context.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/one_device_strategy.h"
#include "osprey/distribute/weights_difference.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/sgd.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"

namespace osprey::distribute {
namespace {

using StrategyPtr = std::shared_ptr<const train::Strategy>;
using testing::max_abs_difference;
using testing::max_relative_difference;

Model make_bn_model(bool synchronized) {
  nn::clear_session();
  return Sequential({layers::Dense(4),
                     layers::BatchNormalization({.momentum = 0.5, .synchronized = synchronized}),
                     layers::Dense(3)},
                    {.input_shape = {5}});
}

const std::vector<Tensor>& initial_weights() {
  static const std::vector<Tensor> w = make_bn_model(true).get_weights();
  return w;
}

// Row i of every batch of 8 shifted by 0.5 * (i % 8): each replica's share has its own mean.
const Tensor& data_x() {
  static const Tensor x = [] {
    Tensor t = random_normal({160, 5}, {.seed = 21});
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<float>()[i] += 0.5f * static_cast<float>((i / 5) % 8);
    return t;
  }();
  return x;
}
const Tensor& data_y() {
  static const Tensor y = random_normal({160, 3}, {.seed = 22});
  return y;
}

struct Trained {
  Model model;
  std::vector<double> losses;
};

// 20 steps of global batch 8, in order, from the same initial weights.
Trained train_20_steps(const StrategyPtr& strategy, bool synchronized) {
  Model m = make_bn_model(synchronized);
  m.set_weights(initial_weights());
  m.compile(std::make_shared<optim::SGD>(optim::SGDOptions{.learning_rate = 0.05}), "mse", {},
            {.strategy = strategy});
  auto h =
      m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  return {m, h.history.at("loss")};
}

std::shared_ptr<nn::BatchNormalization> bn_of(const Model& m) {
  return std::dynamic_pointer_cast<nn::BatchNormalization>(m.layers()[1]);
}

double max_relative(const Tensor& a, const Tensor& b) { return max_relative_difference({a}, {b}); }

TEST(SyncBatchNormTest, MirroredWith2And4DevicesAndCentralStorageMatchOneDeviceOnTheGlobalBatch) {
  Trained one = train_20_steps(std::make_shared<OneDevice>("cpu:0"), true);
  // Training moved the weights and the statistics, so agreeing is not agreeing on the start.
  ASSERT_GT(max_abs_difference(one.model.get_weights(), initial_weights()), 1e-2);
  const Tensor one_pred = one.model.predict(data_x(), {.verbose = 0});
  // 2 and 4: Mirrored on 2 and 4 virtual devices; 3: CentralStorage on 2.
  for (int n : {2, 4, 3}) {
    const StrategyPtr s =
        n == 3 ? StrategyPtr(std::make_shared<CentralStorageStrategy>(virtual_devices(2)))
               : StrategyPtr(std::make_shared<MirroredStrategy>(virtual_devices(n)));
    Trained mirrored = train_20_steps(s, true);
    // Every weight, the moving mean and variance included (non-trainable weights), but the
    // first Dense's bias [1]: BatchNormalization subtracts the mean, so its gradient is 0 in
    // exact arithmetic and both runs leave it at rounding noise (about 5e-9).
    const std::vector<Tensor> w = mirrored.model.get_weights(), w1 = one.model.get_weights();
    ASSERT_EQ(w.size(), 8u);
    for (size_t i = 0; i < w.size(); ++i) {
      if (i == 1) {
        EXPECT_LE(max(abs(w[i])).item(), 1e-7) << n;
      } else {
        EXPECT_LE(max_relative(w[i], w1[i]), 1e-5) << n << " weight " << i;
      }
    }
    EXPECT_LE(max_relative(bn_of(mirrored.model)->moving_variance().value(),
                           bn_of(one.model)->moving_variance().value()),
              1e-5)
        << n;
    // Training-mode forward outputs (the step losses) and inference outputs.
    ASSERT_EQ(mirrored.losses.size(), one.losses.size());
    for (size_t i = 0; i < one.losses.size(); ++i) {
      EXPECT_NEAR(mirrored.losses[i], one.losses[i], 1e-5 * std::abs(one.losses[i]))
          << n << " step " << i;
    }
    EXPECT_LE(max_relative(mirrored.model.predict(data_x(), {.verbose = 0}), one_pred), 1e-5) << n;
  }
}

// One step at learning rate 0 (only the statistics move); the layer's moving mean and variance.
std::pair<Tensor, Tensor> moving_statistics_after_one_step(const StrategyPtr& s,
                                                           bool synchronized) {
  Model m = make_bn_model(synchronized);
  m.set_weights(initial_weights());
  m.compile(std::make_shared<optim::SGD>(optim::SGDOptions{.learning_rate = 0.0}), "mse", {},
            {.strategy = s});
  m.train_on_batch(data_x().narrow(0, 0, 8), data_y().narrow(0, 0, 8));
  return {bn_of(m)->moving_mean().value().clone(), bn_of(m)->moving_variance().value().clone()};
}

TEST(SyncBatchNormTest, PerReplicaStatisticsGiveTheSameMovingMeanButASmallerMovingVariance) {
  const auto [mean1, var1] =
      moving_statistics_after_one_step(std::make_shared<OneDevice>("cpu:0"), false);
  const auto mirrored = std::make_shared<MirroredStrategy>(virtual_devices(2));
  const auto [mean_sync, var_sync] = moving_statistics_after_one_step(mirrored, true);
  const auto [mean_local, var_local] = moving_statistics_after_one_step(mirrored, false);
  // Synchronized: the global batch's statistics, as one device.
  EXPECT_LE(max_relative(mean_sync, mean1), 1e-5);
  EXPECT_LE(max_relative(var_sync, var1), 1e-5);
  // Per replica: the moving mean is linear in the batch mean, so the average of the replicas'
  // is one device's; the variance is the mean of within-share variances, which leaves out the
  // spread between the shares' means.
  EXPECT_LE(max_relative(mean_local, mean1), 1e-5);
  EXPECT_GT(max(abs(sub(var_local, var1))).item(), 1e-2);
  EXPECT_LT(sum(var_local).item(), sum(var1).item());
}

TEST(SyncBatchNormTest, OutsideAnyStrategySynchronizedIsOrdinaryBatchNormBitwise) {
  for (const StrategyPtr& s :
       {StrategyPtr(), StrategyPtr(std::make_shared<OneDevice>("cpu:0")),
        StrategyPtr(std::make_shared<MirroredStrategy>(virtual_devices(1)))}) {
    Trained sync = train_20_steps(s, true);
    Trained plain = train_20_steps(s, false);
    EXPECT_EQ(max_abs_difference(sync.model.get_weights(), plain.model.get_weights()), 0.0);
    EXPECT_EQ(sync.losses, plain.losses);
  }
}

TEST(SyncBatchNormTest, SynchronizedSurvivesConfigAndSaveLoad) {
  EXPECT_FALSE(nn::BatchNormalization().options().synchronized);
  nn::BatchNormalization bn({.synchronized = true});
  const nlohmann::json config = bn.get_config();
  EXPECT_EQ(config.at("synchronized"), true);
  EXPECT_TRUE(
      std::dynamic_pointer_cast<nn::BatchNormalization>(nn::BatchNormalization::from_config(config))
          ->options()
          .synchronized);
  EXPECT_FALSE(std::dynamic_pointer_cast<nn::BatchNormalization>(
                   nn::BatchNormalization::from_config(nn::BatchNormalization().get_config()))
                   ->options()
                   .synchronized);
  Trained t = train_20_steps(std::make_shared<MirroredStrategy>(virtual_devices(2)), true);
  const auto dir = (std::filesystem::temp_directory_path() / "osprey_sync_bn_save").string();
  std::filesystem::remove_all(dir);
  t.model.save(dir);
  Model loaded = load_model(dir);
  EXPECT_TRUE(bn_of(loaded)->options().synchronized);
  EXPECT_EQ(max_abs_difference(loaded.get_weights(), t.model.get_weights()), 0.0);
  std::filesystem::remove_all(dir);
}

TEST(SyncBatchNormTest, ReplicaContextSumsFloat64ExactlyAndFloat32InRankOrder) {
  comm::InProcessGroup group(2);
  CommunicatorReplicaContext c0(group.rank(0)), c1(group.rank(1));
  EXPECT_EQ(c1.num_replicas(), 2);
  EXPECT_EQ(c1.replica_id(), 1);
  // 1 + 1e-12 is not a float32: only a float64 sum keeps the small part.
  Tensor a = Tensor::empty({2}, {DType::float64}), b = Tensor::empty({2}, {DType::float64});
  a.data<double>()[0] = 1.0 + 1e-12;
  a.data<double>()[1] = -3.5;
  b.data<double>()[0] = 2.0;
  b.data<double>()[1] = 1e-300;
  Tensor f0 = full({3}, 1.5f), f1 = full({3}, 0.25f);
  std::thread t([&] {
    c1.all_reduce_sum(b);
    c1.all_reduce_sum(f1);
  });
  c0.all_reduce_sum(a);
  c0.all_reduce_sum(f0);
  t.join();
  for (const Tensor& r : {a, b}) {
    EXPECT_EQ(r.data<double>()[0], (1.0 + 1e-12) + 2.0);
    EXPECT_EQ(r.data<double>()[1], -3.5 + 1e-300);
  }
  EXPECT_EQ(f0.data<float>()[2], 1.75f);
  EXPECT_EQ(f1.data<float>()[0], 1.75f);
  Tensor i = Tensor::empty({2}, {DType::int32});
  try {
    c0.all_reduce_sum(i);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("ReplicaContext: all_reduce_sum needs a contiguous "
                                         "float32 or float64 tensor. Received: int32[2]"),
              std::string::npos)
        << e.what();
  }
}

// Passes its input through, but throws on the replica whose rows hold the marker 1000 in the
// first column: one replica fails before the BatchNormalization collective the others wait in.
class FailOnMarker final : public nn::SingleInputLayer {
 public:
  FailOnMarker() : SingleInputLayer("FailOnMarker", {}) {}
  static void register_class() {
    nn::register_layer("FailOnMarker",
                       [](const nlohmann::json&) { return std::make_shared<FailOnMarker>(); });
  }

 protected:
  autograd::Variable call_single(const autograd::Variable& x, bool) override {
    const std::vector<float> v = x.value().contiguous().to_vector<float>();
    const int64_t cols = x.value().size(1);
    for (int64_t i = 0; i < x.value().size(0); ++i) {
      if (v[static_cast<size_t>(i * cols)] == 1000.0f)
        OSPREY_THROW(ValueError, "FailOnMarker: row {} holds the marker", i);
    }
    return x;
  }
};

TEST(SyncBatchNormTest, AReplicaThatFailsBeforeACollectiveStopsTheStepWithItsOwnErrorNotAHang) {
  FailOnMarker::register_class();
  // first_step: the replicas are built on the failing batch (the failure comes from building
  // replica 1); otherwise replica 1 fails in a step while replica 0 waits in the BatchNormalization
  // all-reduce.
  for (const bool central : {false, true}) {
    for (const bool first_step : {true, false}) {
      nn::clear_session();
      Model m = Sequential({std::make_shared<FailOnMarker>(), layers::Dense(4),
                            layers::BatchNormalization({.synchronized = true}), layers::Dense(3)},
                           {.input_shape = {5}});
      const StrategyPtr strategy =
          central ? StrategyPtr(std::make_shared<CentralStorageStrategy>(virtual_devices(2)))
                  : StrategyPtr(std::make_shared<MirroredStrategy>(virtual_devices(2)));
      m.compile(std::make_shared<optim::SGD>(optim::SGDOptions{.learning_rate = 0.05}), "mse", {},
                {.strategy = strategy});
      const Tensor y = data_y().narrow(0, 0, 8);
      if (!first_step) m.train_on_batch(data_x().narrow(0, 0, 8), y);
      Tensor x = data_x().narrow(0, 0, 8).clone();
      x.data<float>()[5 * 5] = 1000.0f;  // row 5: replica 1's share of the global batch of 8
      const std::string where = fmt::format("central {}, first step {}", central, first_step);
      try {
        m.train_on_batch(x, y);
        ADD_FAILURE() << "no exception; " << where;
      } catch (const ValueError& e) {
        EXPECT_EQ(std::string(e.what()), "FailOnMarker: row 1 holds the marker") << where;
      }
      // The replicas and their collectives work again: the next steps train.
      auto h =
          m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
      ASSERT_EQ(h.history.at("loss").size(), 1u) << where;
      EXPECT_TRUE(std::isfinite(h.history.at("loss")[0])) << where;
    }
  }
}

}  // namespace
}  // namespace osprey::distribute
