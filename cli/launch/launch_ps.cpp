#include "cli/launch/launch_ps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/launch/launch_util.h"
#include "cli/launch/local_cluster.h"
#include "osprey/comm/tcp_store.h"
#include "osprey/core/error.h"
#include "osprey/io/subprocess.h"

namespace osprey::cli {

int run_ps_cluster(const PsClusterArgs& a) {
  OSPREY_CHECK(
      a.num_ps >= 0 && a.num_workers >= 1,
      "osprey launch: --workers must be at least 1 and --ps at least 0. Received: {} and {}",
      a.num_workers, a.num_ps);
  const std::string host = "127.0.0.1";
  nlohmann::json cluster;
  cluster["chief"] = {fmt::format("{}:{}", host, comm::free_loopback_port())};
  for (int i = 0; i < a.num_workers; ++i)
    cluster["worker"].push_back(fmt::format("{}:{}", host, comm::free_loopback_port()));
  for (int i = 0; i < a.num_ps; ++i)
    cluster["ps"].push_back(fmt::format("{}:{}", host, comm::free_loopback_port()));
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int threads =
      a.threads_per_worker > 0 ? a.threads_per_worker : std::max(1, cores / a.num_workers);
  const std::string self = io::self_executable();
  std::vector<LocalTask> tasks;
  auto add = [&](const std::string& type, int index, std::vector<std::string> argv, int n) {
    LocalTask t;
    t.type = type;
    t.index = index;
    t.label = type == "chief" ? "[chief]" : fmt::format("[{} {}]", type, index);
    t.argv = std::move(argv);
    const nlohmann::json config = {{"cluster", cluster},
                                   {"task", {{"type", type}, {"index", index}}}};
    EnvVars env =
        worker_environment(n, std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"));
    env.emplace_back("OSPREY_CONFIG", config.dump());
    t.env = io::environment_with(env);
    t.restarts_left = a.max_restarts;
    t.primary = type == "chief";
    t.serves_others = type == "ps";
    tasks.push_back(std::move(t));
  };
  if (!a.checkpoint_dir.empty()) std::filesystem::create_directories(a.checkpoint_dir);
  for (int i = 0; i < a.num_ps; ++i) {
    std::vector<std::string> argv = {self, "ps", "--listen", cluster["ps"][static_cast<size_t>(i)]};
    if (!a.checkpoint_dir.empty()) {
      const std::string dir = (std::filesystem::path(a.checkpoint_dir) / fmt::format("ps-{}", i));
      argv.insert(argv.end(), {"--checkpoint-dir", dir});
    }
    add("ps", i, std::move(argv), 1);
  }
  const std::vector<std::string> command = a.command;
  for (int i = 0; i < a.num_workers; ++i) add("worker", i, command, threads);
  add("chief", 0, command, 1);
  fmt::print(stderr, "osprey launch: a chief, {} workers and {} ps on {} ({})\n", a.num_workers,
             a.num_ps, host, cluster.dump());
  // Workers that outlive a chief that succeeded get a minute to finish (their fit has ended); after
  // a chief's failure everyone is stopped at once. A ps writes its last checkpoint on SIGTERM: it
  // gets 10 s before SIGKILL.
  return supervise(std::move(tasks), {.finish_grace_seconds = 60, .stop_grace_seconds = 10});
}

}  // namespace osprey::cli
