// Parameter-server throughput (issue 21): updates per second of one ps holding the Fashion-MNIST
// MLP (784-512-256-10, 535,818 float32 parameters, SGD), asynchronous pushes from 1, 2, 4 and 8
// client threads over gRPC on loopback (pull + push per update, as a worker's step), against the
// same updates applied by the shard in-process (ParameterShard::push, no network): the ratio is
// what the RPC layer costs.
//   bench_ps [--seconds 3] [--bf16]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/distribute/ps/internal/ps_client.h"
#include "osprey/distribute/ps/parameter_shard.h"
#include "osprey/distribute/ps/ps_server.h"
#include "osprey/distribute/ps/variable_sharding.h"
#include "osprey/tensor/factory.h"
#include "ps_bench_model.h"

namespace ps = osprey::distribute::ps;
using osprey::Shape;
using osprey::Tensor;
using Clock = std::chrono::steady_clock;

namespace {

const auto& kMlp = osprey::bench::ps_mlp_variables();

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"parameter-server updates per second"};
  double seconds = 3.0;
  bool bf16 = false;
  app.add_option("--seconds", seconds, "Duration of each measurement");
  app.add_flag("--bf16", bf16, "Push bfloat16 gradients");
  CLI11_PARSE(app, argc, argv);

  ps::NamedTensors values, grads;
  for (const auto& [name, shape] : kMlp) {
    values.emplace_back(name, osprey::random_normal(shape, {.seed = 1}));
    grads.emplace_back(name, osprey::random_normal(shape, {.seed = 2}));
  }
  // In-process: the shard's own cost per update (validation, SGD over 535,818 parameters).
  ps::ParameterShard shard;
  shard.register_variables(values, {}, osprey::bench::ps_async_sgd_config(), true);
  int64_t local = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < seconds) {
    shard.push({.base_version = shard.version(), .weight = 32, .gradients = grads});
    ++local;
  }
  const double local_rate = static_cast<double>(local) / seconds_since(t0);
  fmt::print("in-process shard: {:.0f} updates/s ({:.3f} ms each)\n", local_rate, 1e3 / local_rate);

  ps::PsServer server({.listen = "127.0.0.1:0"});
  const ps::ShardingPlan plan = ps::plan_sharding(kMlp, 1);
  for (int clients : {1, 2, 4, 8}) {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(clients));
    std::atomic<int64_t> updates{0}, bytes{0};
    std::atomic<bool> go{false};
    Clock::time_point start;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        ps::PsClient client({.addresses = {server.address()}, .bf16_gradients = bf16});
        std::vector<osprey::autograd::Variable> vars;
        for (const auto& [name, v] : values) {
          osprey::autograd::Variable var(v.clone(), true, name);
          var.set_grad(grads[vars.size()].second.clone());
          vars.push_back(var);
        }
        client.bind(plan, vars, {});
        if (c == 0) client.register_model(osprey::bench::ps_async_sgd_config(), true);
        while (!go) std::this_thread::yield();
        while (seconds_since(start) < seconds) {
          const std::vector<int64_t> versions = client.pull();
          const ps::PushSummary s = client.push({.base_versions = versions, .weight = 32});
          ++updates;
          bytes += s.bytes + client.last_pull_bytes();
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // connected and registered
    start = Clock::now();
    go = true;
    for (auto& t : threads) t.join();
    const double elapsed = seconds_since(start);
    const double rate = static_cast<double>(updates) / elapsed;
    fmt::print(
        "gRPC, {} client{}: {:.0f} updates/s ({:.2f} of in-process), {:.2f} GB/s through the ps, "
        "{:.2f} MB per update\n",
        clients, clients > 1 ? "s" : "", rate, rate / local_rate,
        static_cast<double>(bytes) / elapsed / 1e9,
        static_cast<double>(bytes) / static_cast<double>(updates) / 1e6);
  }
}
