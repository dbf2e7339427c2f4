// What the multi-worker profiler needs from a communicator: each rank's clock offset to rank
// 0's (trace::now_us, so traces of several processes line up on one time axis) and the
// gathering of every rank's trace text on rank 0. Both are collectives: every rank calls them.
//   ClockOffset o = estimate_clock_offset(comm);          // rank 0: {0, 0}
//   std::vector<std::string> all = gather_strings(comm, my_trace_json);  // rank order on 0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "osprey/comm/communicator.h"

namespace osprey::comm {

struct ClockOffset {
  int64_t offset_us = 0;      // add to this rank's trace::now_us() to get rank 0's
  double uncertainty_us = 0;  // half the round trip of the exchange the estimate came from
};

// Cristian's algorithm with several rounds: rank r sends a ping to rank 0 at t1 (its clock),
// rank 0 answers with its clock t0, rank r receives the answer at t2; then t0 - (t1 + t2) / 2
// is the offset, wrong by at most (t2 - t1) / 2. The round with the shortest round trip wins.
// Rank 0 serves ranks 1..n-1 in turn.
ClockOffset estimate_clock_offset(Communicator& c, int rounds = 8);

// Every rank's text, in rank order, on rank 0; an empty vector elsewhere. The bytes travel as
// floats (the communicators move floats), one byte per float.
std::vector<std::string> gather_strings(Communicator& c, const std::string& text);

}  // namespace osprey::comm
