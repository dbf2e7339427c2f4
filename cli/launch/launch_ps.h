// `osprey launch --ps N --workers M -- PROGRAM ARGS...`: a whole parameter-server cluster on this
// host (launch_ps.cpp).
#pragma once

#include <string>
#include <vector>

namespace osprey::cli {

struct PsClusterArgs {
  int num_ps = 1;
  int num_workers = 1;
  std::string checkpoint_dir;  // each ps checkpoints to DIR/ps-<i> ('' none)
  int max_restarts = 3;        // per worker or ps task
  int threads_per_worker = 0;  // 0: this host's cores / the workers
  std::vector<std::string> command;
};

// Starts N `osprey ps` tasks, the chief and M workers of PROGRAM on free loopback ports, each
// with its OSPREY_CONFIG; prefixes their output lines with "[chief]", "[worker i]", "[ps i]".
// A worker or ps that fails while the chief runs is restarted (up to max_restarts times each):
// a worker rejoins, a ps restores its shard from its checkpoint; one that exits 2 (a usage error),
// 126 or 127 (cannot run) is not, the same command would fail again. When the chief succeeds, the
// workers get a minute to finish (their fit has ended) and the ps are stopped once they are done;
// when it fails, every task is stopped at once (SIGTERM, SIGKILL 10 s later). Returns the chief's
// exit code (128 + signal when killed by one).
int run_ps_cluster(const PsClusterArgs& args);

}  // namespace osprey::cli
