#include "osprey/distribute/data_parallel/replica_workers.h"

#include <algorithm>

#include "osprey/core/error.h"
#include "osprey/core/parallel.h"

namespace osprey::distribute {

ReplicaWorkers::ReplicaWorkers(int count, int threads_per_replica)
    : count_(count),
      threads_per_replica_(threads_per_replica),
      errors_(static_cast<size_t>(std::max(count, 1))) {
  OSPREY_CHECK(count_ >= 1,
               "ReplicaWorkers: the number of replicas must be at least 1. Received: {}", count_);
  OSPREY_CHECK(threads_per_replica_ >= 0,
               "ReplicaWorkers: threads_per_replica must be at least 0 (0: num_threads() / "
               "replicas). Received: {}",
               threads_per_replica_);
}

ReplicaWorkers::~ReplicaWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

int ReplicaWorkers::threads_per_replica() const noexcept {
  return threads_per_replica_ > 0 ? threads_per_replica_ : std::max(1, num_threads() / count_);
}

void ReplicaWorkers::work(int r) {
  uint64_t seen = 0;
  int applied = 0;
  for (;;) {
    const std::function<void(int)>* fn = nullptr;
    int share = 1;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
      share = share_;
    }
    if (share != applied) {
      set_thread_limit(share);
      applied = share;
    }
    std::exception_ptr error;
    try {
      (*fn)(r);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      errors_[static_cast<size_t>(r)] = error;
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ReplicaWorkers::run(const std::function<void(int)>& fn) {
  const int share = threads_per_replica();
  if (count_ == 1) {
    if (share == num_threads()) return fn(0);
    ThreadLimitGuard limit(share);
    return fn(0);
  }
  if (threads_.empty()) {
    threads_.reserve(static_cast<size_t>(count_ - 1));
    for (int r = 1; r < count_; ++r) threads_.emplace_back([this, r] { work(r); });
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    share_ = share;
    pending_ = count_ - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  std::exception_ptr error0;
  try {
    ThreadLimitGuard limit(share);
    fn(0);
  } catch (...) {
    error0 = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  errors_[0] = error0;
  for (auto& e : errors_) {
    if (e) {
      std::exception_ptr first = std::move(e);
      std::fill(errors_.begin(), errors_.end(), nullptr);
      std::rethrow_exception(first);
    }
  }
}

}  // namespace osprey::distribute
