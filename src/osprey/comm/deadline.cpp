#include "osprey/comm/deadline.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace osprey::comm {

std::chrono::milliseconds liveness_grace(std::chrono::milliseconds timeout) {
  using std::chrono::milliseconds;
  return std::clamp(timeout / 2, milliseconds(1000), milliseconds(15000));
}

std::string describe_call(std::string_view call, std::string_view communicator, int64_t sequence) {
  return fmt::format("{} on '{}' (call {})", call, communicator, sequence);
}

namespace {

// The communicator named in describe_call's text.
std::string_view communicator_of(std::string_view where) {
  const size_t open = where.find(" on '");
  if (open == std::string_view::npos) return {};
  const size_t close = where.find('\'', open + 5);
  return close == std::string_view::npos ? std::string_view{}
                                         : where.substr(open + 5, close - open - 5);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += i + 1 == ranks.size() ? " and " : ", ";
    out += std::to_string(ranks[i]);
  }
  return out;
}

}  // namespace

std::string describe_failure(std::string_view backend, std::string_view where, int rank,
                             std::chrono::milliseconds timeout, std::span<const PeerState> peers,
                             bool timed_out) {
  std::vector<int> silent, gone;
  std::vector<std::string> waiting;
  bool same_call = true;
  std::vector<int> diverged;  // waiting on this communicator, in another call
  for (size_t q = 0; q < peers.size(); ++q) {
    if (static_cast<int>(q) == rank) continue;
    switch (peers[q].kind) {
      case PeerState::Kind::silent:
        silent.push_back(static_cast<int>(q));
        break;
      case PeerState::Kind::gone:
        gone.push_back(static_cast<int>(q));
        break;
      case PeerState::Kind::waiting:
        waiting.push_back(fmt::format("rank {} is waiting in {}", q, peers[q].where));
        same_call = same_call && peers[q].where == where;
        if (peers[q].where != where && communicator_of(peers[q].where) == communicator_of(where))
          diverged.push_back(static_cast<int>(q));
        break;
    }
  }
  std::vector<std::string> parts;
  if (!gone.empty()) parts.push_back(rank_list(gone) + " died or left the job");
  if (!silent.empty()) {
    parts.push_back(fmt::format(
        "{} did not respond within {} ms (stopped, hung, or busy outside any collective)",
        rank_list(silent), liveness_grace(timeout).count()));
  }
  if (!diverged.empty()) {
    parts.push_back(
        fmt::format("{} called something else on this communicator (the ranks' "
                    "programs diverged)",
                    rank_list(diverged)));
  } else if (gone.empty() && silent.empty() && !waiting.empty()) {
    parts.emplace_back(same_call ? "every peer is waiting in the same call (a message was lost)"
                                 : "every peer is alive and waiting on another communicator");
  }
  for (std::string& w : waiting) parts.push_back(std::move(w));
  std::string detail;
  for (const std::string& p : parts) detail += (detail.empty() ? "" : "; ") + p;
  const std::string how =
      timed_out ? fmt::format("passed its deadline of {} ms", timeout.count()) : "failed";
  return fmt::format("{} {} {} on rank {} of {}: {}", backend, where, how, rank, peers.size(),
                     detail);
}

}  // namespace osprey::comm
