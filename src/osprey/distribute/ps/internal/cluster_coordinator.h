// ClusterCoordinator: how the chief of a parameter-server job runs training steps on its workers
// (tf.distribute.experimental.coordinator.ClusterCoordinator): schedule() queues a step, a
// closure, and returns its RemoteValue; whichever worker is free runs it next (one dispatcher
// thread per worker sends it with the Worker service's RunStep). A worker that fails (killed,
// restarting, not in fit yet) has its closure put back at the head of the queue for another
// worker, and is probed until it answers again: then it rejoins. A closure that fails for its
// own reasons (a bad batch, a ps refusing its gradients) fails its RemoteValue instead, since it
// would fail the same way anywhere. Idle workers are pinged, so a worker can tell a live
// coordinator from a dead one. Internal to distribute/ (gRPC types); not installed.
//   ClusterCoordinator c({.workers = {"127.0.0.1:5001", "127.0.0.1:5002"}});
//   auto v = c.schedule(request);          // StepRequest: a step's share of the batch
//   c.wait_for({v}, 1);  v->reply().loss;
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "osprey/distribute/ps/ps.grpc.pb.h"

namespace osprey::distribute::ps {

// A scheduled step's result (TF's RemoteValue).
class RemoteValue {
 public:
  enum class State { queued, running, done, failed, cancelled };
  State state() const;
  bool finished() const;  // done, failed or cancelled
  // The reply of a done closure (InternalError otherwise: wait first).
  const StepReply& reply() const;
  const StepRequest& request() const { return request_; }
  int worker() const;  // the worker that ran it last; -1 before any

 private:
  friend class ClusterCoordinator;
  explicit RemoteValue(StepRequest request, int only_worker)
      : request_(std::move(request)), only_worker_(only_worker) {}
  StepRequest request_;
  int only_worker_;  // -1: any worker
  // Written under the coordinator's mutex. The state is atomic so that its owner may read it
  // (and, once it reads done or failed, the reply or the error, which are written before the
  // state is published) without taking the coordinator's lock.
  std::atomic<State> state_{State::queued};
  StepReply reply_;
  std::exception_ptr error_;
  std::atomic<int> worker_{-1};
};
using RemoteValuePtr = std::shared_ptr<RemoteValue>;

struct CoordinatorOptions {
  std::vector<std::string> workers;  // HOST:PORT of each worker task, by task index
  std::string token{};
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  int64_t max_message_bytes = int64_t{256} << 20;
  std::chrono::milliseconds heartbeat = std::chrono::seconds(2);
};

class ClusterCoordinator {
 public:
  explicit ClusterCoordinator(CoordinatorOptions options);
  ~ClusterCoordinator();  // stops the dispatchers (a running RunStep is cancelled)
  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;

  int num_workers() const { return static_cast<int>(workers_.size()); }
  // Queues the step; only_worker >= 0 runs it on that worker alone (warm-up on one worker).
  RemoteValuePtr schedule(StepRequest request, int only_worker = -1);
  // Removes a closure that no worker has started; false when it already started or finished.
  bool cancel(const RemoteValuePtr& value);
  // Waits until `count` of `values` are done; rethrows the first failure among them. Throws
  // DistributedError naming every worker's state when no closure anywhere finishes for the
  // timeout (every worker dead or stuck).
  void wait_for(const std::vector<RemoteValuePtr>& values, size_t count);
  // Waits until every scheduled closure finished (TF's join); rethrows the first failure.
  void join();
  // Tells every reachable worker that fit ended (error: empty, or why it failed), so their own
  // fit returns (or throws). Best effort: a worker that is down learns it by its idle timeout.
  void end_fit(const std::string& error);
  // Closures put back after their worker failed, since the start.
  int64_t rescheduled() const { return rescheduled_.load(); }
  // "worker 0 at 127.0.0.1:5001: running step 4 share 0 for 3.2 s; worker 1 ...: down for
  // 12.0 s (UNAVAILABLE: failed to connect)".
  std::string describe_workers() const;

 private:
  struct WorkerSlot {
    std::string address;
    std::unique_ptr<Worker::Stub> stub;
    bool up = false;      // answered a ping that said it is in fit
    bool joined = false;  // was up during this fit: coming up again is a rejoin
    std::chrono::steady_clock::time_point since;  // of the current state
    std::string last_error;
    RemoteValuePtr running;
    grpc::ClientContext* call = nullptr;  // the RunStep in flight, to cancel on shutdown
  };
  void dispatch(int w);
  bool probe(int w);  // a ping: true when the worker is in fit
  RemoteValuePtr take(int w, std::unique_lock<std::mutex>& lock);
  void finish(const RemoteValuePtr& value, RemoteValue::State state, std::exception_ptr error);

  CoordinatorOptions options_;
  std::vector<WorkerSlot> workers_;
  mutable std::mutex mutex_;
  std::condition_variable work_;      // dispatchers: a closure was queued, or stopping
  std::condition_variable finished_;  // waiters: a closure finished
  std::deque<RemoteValuePtr> queue_;
  std::vector<RemoteValuePtr> outstanding_;  // scheduled and not finished
  std::chrono::steady_clock::time_point last_progress_;
  bool stopping_ = false;
  std::atomic<int64_t> rescheduled_{0};
  std::vector<std::thread> threads_;
};

}  // namespace osprey::distribute::ps
