// ReplicaWorkers: the persistent worker threads behind a data-parallel strategy's virtual CPU
// devices. A virtual device is a worker thread with its own share of the thread pool: replica r
// (r >= 1) always runs on worker r, created on the first run and joined on destruction, so a
// step starts no thread; replica 0 runs on the caller's thread. Each runs with a thread limit of
// threads_per_replica (parallel.h), by default num_threads() / replicas (at least 1), so the
// replicas together use the threads one device would instead of each taking the whole machine.
//   ReplicaWorkers workers(2);                        // 2 replicas, auto share
//   workers.run([&](int r) { step(replica[r]); });   // r = 0 here, 1 on the worker
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace osprey::distribute {

class ReplicaWorkers {
 public:
  // threads_per_replica 0: num_threads() / count at each run, at least 1.
  ReplicaWorkers(int count, int threads_per_replica = 0);
  ~ReplicaWorkers();
  ReplicaWorkers(const ReplicaWorkers&) = delete;
  ReplicaWorkers& operator=(const ReplicaWorkers&) = delete;

  int size() const noexcept { return count_; }
  // The thread limit each replica gets now (reads num_threads() on the calling thread).
  int threads_per_replica() const noexcept;
  // Calls fn(r) for every replica on its thread, waits for all, then rethrows the lowest
  // replica's error. Not reentrant: fn must not call run.
  void run(const std::function<void(int)>& fn);

 private:
  void work(int r);

  int count_, threads_per_replica_;
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  uint64_t generation_ = 0;  // one per run: a worker runs each generation once
  int pending_ = 0, share_ = 1;
  bool stop_ = false;
  const std::function<void(int)>* fn_ = nullptr;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

}  // namespace osprey::distribute
