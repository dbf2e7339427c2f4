// Parameter-server training on a cluster of threads on loopback: in-process parameter servers
// (PsServer), worker tasks whose fit serves the chief's steps, and the chief, each with its own
// ParameterServerStrategy made from its own TF_CONFIG. Sync training without backup replicas
// must give the single-device weights for the same global batches.
#include "osprey/distribute/ps/parameter_server_strategy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "osprey/comm/rpc/rpc.h"
#include "osprey/comm/tcp_store.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/one_device_strategy.h"
#include "osprey/distribute/ps/ps.grpc.pb.h"
#include "osprey/distribute/ps/ps_server.h"
#include "osprey/distribute/strategy_fixture.h"
#include "osprey/distribute/weights_difference.h"
#include "osprey/optim/factory.h"

namespace osprey::distribute {
namespace {

using testing::data_x;
using testing::data_y;
using testing::initial_weights;
using testing::make_mlp;
using testing::max_abs_difference;
using testing::max_relative_difference;

std::string loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

// A cluster of threads: `num_ps` parameter servers (none: the chief hosts one), `workers`
// worker tasks, and the chief, which runs train(model) while the workers' fit serves it.
struct Cluster {
  std::vector<std::unique_ptr<ps::PsServer>> servers;
  nlohmann::json spec;

  Cluster(int workers, int num_ps) {
    spec["chief"] = {loopback(comm::free_loopback_port())};
    for (int i = 0; i < workers; ++i)
      spec["worker"].push_back(loopback(comm::free_loopback_port()));
    for (int i = 0; i < num_ps; ++i) {
      servers.push_back(std::make_unique<ps::PsServer>(
          ps::PsServerOptions{.listen = "127.0.0.1:0", .name = "ps " + std::to_string(i)}));
      spec["ps"].push_back(servers.back()->address());
    }
  }

  ClusterResolver task(const std::string& type, int index) const {
    const nlohmann::json config = {{"cluster", spec}, {"task", {{"type", type}, {"index", index}}}};
    return ClusterResolver::from_json(config.dump(), "test TF_CONFIG");
  }

  int num_workers() const { return static_cast<int>(spec["worker"].size()); }

  // Trains the fixture's MLP for one epoch of 20 global batches of 8 (as train_20_steps) on the
  // chief, every worker serving; returns the chief's model and its History's logs.
  Model train(const ParameterServerOptions& options, const std::string& optimizer,
              train::History* history = nullptr, int epochs = 1) {
    auto make = [&](const std::shared_ptr<ParameterServerStrategy>& s) {
      Model m = make_mlp();
      m.set_weights(initial_weights());
      m.compile(optimizer, "mse", {}, {.strategy = s});
      return m;
    };
    std::vector<std::shared_ptr<ParameterServerStrategy>> strategies;
    std::vector<Model> models;
    for (int i = 0; i < num_workers(); ++i) {
      strategies.push_back(std::make_shared<ParameterServerStrategy>(options, task("worker", i)));
      models.push_back(make(strategies.back()));
    }
    auto chief = std::make_shared<ParameterServerStrategy>(options, task("chief", 0));
    Model model = make(chief);
    std::vector<std::string> errors(models.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < models.size(); ++i) {
      threads.emplace_back([&, i] {
        try {
          models[i].fit(data_x(), data_y(),
                        {.batch_size = 8, .epochs = epochs, .verbose = 0, .shuffle = false});
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    }
    train::History h;
    try {
      h = model.fit(data_x(), data_y(),
                    {.batch_size = 8, .epochs = epochs, .verbose = 0, .shuffle = false});
    } catch (...) {
      for (auto& t : threads) t.join();
      throw;
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < errors.size(); ++i) EXPECT_EQ(errors[i], "") << "worker " << i;
    if (history) *history = h;
    return model;
  }
};

// The fixture's MLP trained for one epoch of 20 batches of 8 under `strategy`, in one process.
Model trained_with(std::shared_ptr<const train::Strategy> strategy, const std::string& optimizer) {
  Model m = make_mlp();
  m.set_weights(initial_weights());
  m.compile(optimizer, "mse", {}, {.strategy = std::move(strategy)});
  m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  return m;
}

Model one_device(const std::string& optimizer) {
  return trained_with(std::make_shared<OneDevice>("cpu:0"), optimizer);
}

// The loss of a model with `weights` on the fixture's data: training converges when it falls.
double loss_with(const std::vector<Tensor>& weights) {
  Model m = make_mlp();
  m.set_weights(weights);
  m.compile("sgd", "mse");
  return m.evaluate(data_x(), data_y(), {.batch_size = 160}).at("loss");
}

// How far the weights a cluster trains are from the reference's (relative).
double cluster_vs(const Model& reference, int workers, int num_ps, const ParameterServerOptions& o,
                  const std::string& optimizer) {
  return max_relative_difference(Cluster(workers, num_ps).train(o, optimizer).get_weights(),
                                 reference.get_weights());
}

TEST(ParameterServerStrategyTest, SyncWithoutBackupsMatchesOneDevice) {
  for (const std::string opt : {"sgd", "adam"}) {
    const Model one = one_device(opt);
    ASSERT_GT(max_abs_difference(one.get_weights(), initial_weights()), 1e-3) << opt;
    Cluster cluster(2, 2);
    train::History h;
    const Model ps = cluster.train({}, opt, &h);
    EXPECT_LE(max_relative_difference(ps.get_weights(), one.get_weights()), 1e-5) << opt;
    EXPECT_EQ(h.history.at("ps_aggregated").back(), 2.0);
    EXPECT_EQ(h.history.at("ps_replicas").back(), 2.0);
    EXPECT_EQ(h.history.at("ps_dropped").back(), 0.0);
  }
}

TEST(ParameterServerStrategyTest, SyncWithoutBackupsMatchesMirroredAtTheSameGlobalBatch) {
  const Model mirrored =
      trained_with(std::make_shared<MirroredStrategy>(virtual_devices(2)), "adam");
  EXPECT_LE(cluster_vs(mirrored, 2, 1, {}, "adam"), 1e-5);
}

TEST(ParameterServerStrategyTest, PartitionedAndBalancedVariablesGiveTheSameWeights) {
  ParameterServerOptions o;
  o.placement = ps::Placement::balanced;
  o.variable_partitioner = ps::fixed_shards_partitioner(3);
  EXPECT_LE(cluster_vs(one_device("adam"), 2, 3, o, "adam"), 1e-5);
}

TEST(ParameterServerStrategyTest, TheChiefHostsThePsWhenTheClusterListsNone) {
  EXPECT_LE(cluster_vs(one_device("sgd"), 2, 0, {}, "sgd"), 1e-5);
}

TEST(ParameterServerStrategyTest, Bf16GradientsStayCloseToFloat32) {
  const double diff = cluster_vs(one_device("sgd"), 2, 1, {.compression = "bf16"}, "sgd");
  EXPECT_GT(diff, 0.0);  // bf16 rounding did happen
  EXPECT_LE(diff, 2e-2);
}

TEST(ParameterServerStrategyTest, SyncWithABackupAppliesOneShareOfTwoPerStep) {
  Cluster cluster(2, 1);
  train::History h;
  const Model ps = cluster.train({.replicas_to_aggregate = 1}, "sgd", &h, 2);
  EXPECT_EQ(h.history.at("ps_aggregated").back(), 1.0);
  EXPECT_EQ(h.history.at("ps_replicas").back(), 2.0);
  // Every step dropped or cancelled the other share: 20 of the 40 shares of each epoch, all
  // counted in their own epoch (its late shares end before its logs).
  const auto& dropped = h.history.at("ps_dropped");
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0], 20.0);
  EXPECT_EQ(dropped[1], 20.0);
  EXPECT_LT(loss_with(ps.get_weights()), loss_with(initial_weights()));
}

// Seed 002's straggler: worker 1 slowed 10x (the steps here are a millisecond, much of it the
// chief's and the RPCs' share, which no slowdown scales; bench/ps_cluster.sh measures 3x on real
// steps). Without a backup every step waits for it; with one (1 of 2 applied per step) the step
// takes about the fast worker's time. The slow worker sleeps, so the ratio holds on a busy
// machine too.
TEST(ParameterServerStrategyTest, ABackupReplicaHidesASlowWorker) {
  setenv("OSPREY_PS_SLOWDOWN", "1:10", 1);
  auto seconds = [](const std::function<void()>& fn) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  train::History without, with;
  const double t_without = seconds([&] { Cluster(2, 1).train({}, "sgd", &without, 2); });
  Model trained;
  const double t_with = seconds(
      [&] { trained = Cluster(2, 1).train({.replicas_to_aggregate = 1}, "sgd", &with, 2); });
  unsetenv("OSPREY_PS_SLOWDOWN");
  EXPECT_LT(t_with, 0.7 * t_without) << "with a backup " << t_with << " s, without " << t_without;
  EXPECT_LT(loss_with(trained.get_weights()), loss_with(initial_weights()));
  EXPECT_GT(with.history.at("ps_dropped").back(), 0.0);
}

TEST(ParameterServerStrategyTest, AsyncTrainsAndReportsStaleness) {
  Cluster cluster(2, 1);
  train::History h;
  ParameterServerOptions o;
  o.mode = "async";
  o.staleness.max_staleness = 8;
  const Model ps = cluster.train(o, "sgd", &h, 3);
  ASSERT_EQ(h.history.at("loss").size(), 3u);
  EXPECT_LT(loss_with(ps.get_weights()), loss_with(initial_weights()));
  ASSERT_TRUE(h.history.count("ps_staleness"));
  EXPECT_GE(h.history.at("ps_staleness").back(), 0.0);
  EXPECT_LE(h.history.at("ps_staleness").back(), 8.0);
}

// Seed 002's warm-up: the first epoch on one worker, whose pulls and pushes alternate, so no
// gradient is stale; afterwards both workers push.
TEST(ParameterServerStrategyTest, AsyncWarmUpRunsTheFirstEpochsOnOneWorker) {
  Cluster cluster(2, 1);
  train::History h;
  ParameterServerOptions o;
  o.mode = "async";
  o.warmup_epochs = 1;
  cluster.train(o, "sgd", &h, 2);
  EXPECT_EQ(h.history.at("ps_staleness").at(0), 0.0);
  EXPECT_EQ(h.history.at("ps_dropped").at(0), 0.0);
}

TEST(ParameterServerStrategyTest, AsyncDropsGradientsPastTheBound) {
  Cluster cluster(2, 1);
  train::History h;
  ParameterServerOptions o;
  o.mode = "async";
  o.staleness.max_staleness = 0;  // only gradients computed on the newest weights count
  cluster.train(o, "sgd", &h, 2);
  double dropped = 0;
  for (double d : h.history.at("ps_dropped")) dropped += d;
  EXPECT_GT(dropped, 0.0);
  EXPECT_EQ(h.history.at("ps_staleness").back(), 0.0);  // of those applied
}

TEST(ParameterServerStrategyTest, RefusesClustersItCannotRun) {
  auto make = [](const std::string& json, ParameterServerOptions o = {}) {
    ParameterServerStrategy s(o, ClusterResolver::from_json(json, "TF_CONFIG"));
  };
  try {
    make(R"({"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]},
             "task": {"type": "worker", "index": 0}})");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "ParameterServerStrategy: the cluster (TF_CONFIG) must list one chief, the "
                 "coordinator; it lists 0");
  }
  try {
    make(R"({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],
             "ps": ["127.0.0.1:3"]}, "task": {"type": "ps", "index": 0}})");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "ParameterServerStrategy: this process is ps task 0 (TF_CONFIG); a ps task runs "
                 "`osprey ps --listen 127.0.0.1:3`, not the training program");
  }
  EXPECT_THROW(make(R"({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
                        "task": {"type": "chief", "index": 0}})",
                    {.replicas_to_aggregate = 2}),
               ValueError);
  EXPECT_THROW(make(R"({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
                        "task": {"type": "chief", "index": 0}})",
                    {.mode = "eventually"}),
               ValueError);
}

// A worker's step service: the token on every call, and UNAVAILABLE (try elsewhere) for a step
// that arrives outside fit.
TEST(ParameterServerStrategyTest, AWorkersStepServiceChecksTheTokenAndRefusesStepsOutsideFit) {
  Cluster cluster(1, 1);
  ParameterServerOptions o;
  o.token = "s3cret";
  const ParameterServerStrategy worker(o, cluster.task("worker", 0));
  auto stub = ps::Worker::NewStub(comm::rpc::make_channel(cluster.spec["worker"][0], 1 << 20));
  ps::PingRequest ping;
  ps::PingReply pong;
  {
    grpc::ClientContext c;
    const grpc::Status s = stub->Ping(&c, ping, &pong);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(s.error_message(), "missing token: this server requires OSPREY_PS_TOKEN");
  }
  {
    grpc::ClientContext c;
    comm::rpc::prepare(c, "s3cret", std::chrono::seconds(5));
    ASSERT_TRUE(stub->Ping(&c, ping, &pong).ok());
    EXPECT_FALSE(pong.in_fit());
  }
  grpc::ClientContext c;
  comm::rpc::prepare(c, "s3cret", std::chrono::seconds(5));
  ps::StepRequest step;
  ps::StepReply reply;
  const grpc::Status s = stub->RunStep(&c, step, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(s.error_message(),
            "worker 0 is not in fit (it has not reached fit yet, or its fit ended)");
}

TEST(ParameterServerStrategyTest, GlobalClipnormIsRefusedAcrossSeveralPs) {
  Cluster cluster(1, 2);
  auto chief =
      std::make_shared<ParameterServerStrategy>(ParameterServerOptions{}, cluster.task("chief", 0));
  Model m = make_mlp();
  m.compile(std::shared_ptr<optim::Optimizer>(optim::deserialize(
                {{"class_name", "SGD"}, {"config", {{"global_clipnorm", 1.0}}}})),
            "mse", {}, {.strategy = chief});
  try {
    m.fit(data_x(), data_y(), {.batch_size = 8, .epochs = 1, .verbose = 0});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("global_clipnorm needs every gradient in one place"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace osprey::distribute
