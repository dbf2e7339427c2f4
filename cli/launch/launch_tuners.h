// `osprey launch --tuners N -- PROGRAM ARGS...`: a distributed tuning study on this host
// (launch_tuners.cpp).
#pragma once

#include <string>
#include <vector>

namespace osprey::cli {

struct TunerStudyArgs {
  int num_tuners = 1;
  int threads_per_tuner = 0;   // 0: this host's cores / the tuners
  int trials_per_process = 1;  // 0: a worker process runs trials until the study ends
  int max_restarts = 3;        // per task, after a failure
  std::vector<std::string> command;
};

// Starts the chief (OSPREY_TUNER_ID=chief, serving the oracle on a free loopback port) and N
// workers tuner0..tuner{N-1} of PROGRAM, each pinned to its own group of cores with that many
// kernel threads. A worker process runs trials_per_process trials and exits (kExitNextTrial) for
// a fresh one to take its place, so memory never grows across trials. A worker that fails is
// restarted (its trial resumes from its last epoch backup); so is a chief that fails, with
// OSPREY_TUNER_RESTARTED=1 so that it resumes its directory even when the program says
// overwrite; never after exit 2 (a usage error), 126 or 127 (cannot run). Returns the chief's
// exit code.
int run_tuner_study(const TunerStudyArgs& args);

// The cores of worker `index` of `workers`: an equal share of `available` (in its order), at
// least one, wrapping around when there are more workers than cores.
std::vector<int> core_group(const std::vector<int>& available, int index, int workers,
                            int threads_per_worker);

}  // namespace osprey::cli
