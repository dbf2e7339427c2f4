// InProcessGroup: a Communicator backend for N ranks that are threads of one process (the
// virtual CPU devices of MirroredStrategy). Ranks exchange pointers, not copies: each collective
// publishes every rank's buffer, waits for all ranks, then rank r reduces (or copies) block r of
// the result for everyone, in rank order 0..N-1, so sums are deterministic and the work is
// split N ways. Arguments are checked across ranks after they arrive, so a mismatch (different
// collective, count, op or root) throws the same ValueError on every rank rather than hanging.
// A rank that fails between collectives would leave the others waiting for it forever: abort()
// makes every rank blocked in (or entering) a collective or recv throw DistributedError instead,
// until reset().
//   InProcessGroup group(2);
//   std::thread t([&] { group.rank(1).all_reduce(b, n, ReduceOp::sum); });
//   group.rank(0).all_reduce(a, n, ReduceOp::sum);  t.join();   // a == b == a + b
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "osprey/comm/call_check.h"
#include "osprey/comm/communicator.h"

namespace osprey::comm {

class InProcessGroup {
 public:
  // size >= 1 ranks; ValueError otherwise.
  explicit InProcessGroup(int size);
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;
  ~InProcessGroup();

  int size() const noexcept { return size_; }
  // The communicator of rank r (0 <= r < size(); ValueError naming r and size otherwise). Each
  // must be used by one thread at a time.
  Communicator& rank(int r);

  // Every rank waiting in a collective or recv, and every later call, throws DistributedError
  // "InProcessGroup: the collective was aborted: <reason>" until reset(). Callable from any
  // thread; the first reason is kept.
  void abort(const std::string& reason);
  // Makes the group usable again after abort(). Only while no rank is inside a call.
  void reset();
  bool aborted() const noexcept;

  class Rank;  // the per-rank Communicator (in_process.cpp)

 private:
  friend class Rank;
  // What each rank publishes for the current collective.
  struct Post {
    const float* send = nullptr;
    float* recv = nullptr;
  };
  // Waits until every rank has arrived (a central barrier), or throws once the group is aborted.
  void wait_all();
  [[noreturn]] void throw_aborted() const;

  int size_;
  std::vector<Post> posts_;
  std::vector<CallDescriptor> calls_;  // what each rank called, checked alike by all (call_check.h)
  // The barrier: bit 0 is "aborted", the rest counts completed barriers; a waiter sleeps until
  // the word changes (atomic wait: a short spin, then the futex).
  std::atomic<uint64_t> word_{0};
  std::atomic<int> arrived_{0};
  mutable std::mutex abort_mutex_;
  std::string abort_reason_;
  std::vector<std::unique_ptr<Communicator>> ranks_;
  // Point to point: queued messages per (source, destination, tag).
  std::mutex mailbox_mutex_;
  std::condition_variable mailbox_cv_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<float>>> mailbox_;
};

}  // namespace osprey::comm
