#include "cli/launch/launch_tuners.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>

#include "cli/launch/launch_util.h"
#include "cli/launch/local_cluster.h"
#include "osprey/comm/tcp_store.h"
#include "osprey/core/error.h"
#include "osprey/io/subprocess.h"
#include "osprey/tune/oracle_service.h"

namespace osprey::cli {

std::vector<int> core_group(const std::vector<int>& available, int index, int workers,
                            int threads_per_worker) {
  OSPREY_CHECK(!available.empty() && workers >= 1 && index >= 0 && index < workers,
               "core_group: {} cores, worker {} of {}", available.size(), index, workers);
  const int n = static_cast<int>(available.size());
  const int size = threads_per_worker > 0 ? threads_per_worker : std::max(1, n / workers);
  std::vector<int> out;
  out.reserve(static_cast<size_t>(size));
  for (int k = 0; k < size; ++k)
    out.push_back(available[static_cast<size_t>((index * size + k) % n)]);
  return out;
}

int run_tuner_study(const TunerStudyArgs& a) {
  OSPREY_CHECK(a.num_tuners >= 1, "osprey launch: --tuners must be at least 1. Received: {}",
               a.num_tuners);
  std::vector<int> available;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &mine)) available.push_back(c);
    }
  }
  if (available.empty()) available.push_back(0);
  const std::string host = "127.0.0.1";
  const int port = comm::free_loopback_port();
  const std::vector<std::string> command = a.command;
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin_count = std::getenv("GOMP_SPINCOUNT");
  auto role_env = [&](const std::string& id, int threads) {
    EnvVars env = worker_environment(threads, wait_policy, spin_count);
    env.emplace_back("OSPREY_TUNER_ID", id);
    env.emplace_back("OSPREY_ORACLE_IP", host);
    env.emplace_back("OSPREY_ORACLE_PORT", std::to_string(port));
    return env;
  };
  std::vector<LocalTask> tasks;
  std::vector<std::string> groups;
  for (int i = 0; i < a.num_tuners; ++i) {
    const std::vector<int> cores = core_group(available, i, a.num_tuners, a.threads_per_tuner);
    LocalTask t;
    t.type = "tuner";
    t.index = i;
    t.label = fmt::format("[tuner{}]", i);
    t.argv = command;
    EnvVars env = role_env(fmt::format("tuner{}", i), static_cast<int>(cores.size()));
    env.emplace_back("OSPREY_TUNER_TRIALS_PER_PROCESS", std::to_string(a.trials_per_process));
    t.env = io::environment_with(env);
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const int c : cores) CPU_SET(c, &set);
    t.cpus = set;
    t.restarts_left = a.max_restarts;
    t.respawn_code = tune::kExitNextTrial;
    tasks.push_back(std::move(t));
    groups.push_back(fmt::format("tuner{}: cores {}", i, fmt::join(cores, ",")));
  }
  LocalTask chief;
  chief.type = "chief";
  chief.label = "[chief]";
  chief.argv = command;
  chief.env = io::environment_with(role_env("chief", 1));
  chief.restarts_left = a.max_restarts;
  chief.primary = true;
  chief.restart_primary = true;
  chief.restart_env = {{"OSPREY_TUNER_RESTARTED", "1"}};
  tasks.push_back(std::move(chief));
  fmt::print(stderr, "osprey launch: a tuning chief on {}:{} and {} tuner workers ({})\n", host,
             port, a.num_tuners, fmt::join(groups, "; "));
  std::fflush(stderr);
  // Workers still running when the chief ends were told the study is over; half a minute to go.
  return supervise(std::move(tasks), {.finish_grace_seconds = 30, .stop_grace_seconds = 30});
}

}  // namespace osprey::cli
