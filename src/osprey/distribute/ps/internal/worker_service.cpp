#include "osprey/distribute/ps/internal/worker_service.h"

#include <fmt/format.h>

#include "osprey/comm/rpc/rpc.h"
#include "osprey/core/error.h"

namespace osprey::distribute::ps {

grpc::Status WorkerService::RunStep(grpc::ServerContext* context, const StepRequest* request,
                                    StepReply* reply) {
  return comm::rpc::serve(*context, token_, [&] {
    std::lock_guard step(step_mutex_);
    Handler handler;
    {
      std::lock_guard lock(mutex_);
      last_call_ = std::chrono::steady_clock::now();
      handler = handler_;
    }
    // DistributedError becomes UNAVAILABLE: the coordinator tries the step elsewhere.
    OSPREY_CHECK_T(DistributedError, handler != nullptr,
                   "worker {} is not in fit (it has not reached fit yet, or its fit ended)",
                   task_index_);
    struct Running {  // a long step is activity too: the idle timeout counts from its end
      WorkerService& self;
      explicit Running(WorkerService& s) : self(s) { set(true); }
      ~Running() { set(false); }
      void set(bool on) {
        std::lock_guard lock(self.mutex_);
        self.running_ = on;
        self.last_call_ = std::chrono::steady_clock::now();
      }
    } running(*this);
    try {
      handler(*request, reply);
    } catch (const ValueError&) {
      throw;  // INVALID_ARGUMENT: the step's own fault
    } catch (const std::exception& e) {
      // Anything else (a ps unreachable past the timeout, a kernel failure) would fail again
      // on another worker: a lasting status, not UNAVAILABLE.
      throw Error(fmt::format("worker {}: step {} share {} failed: {}", task_index_,
                              request->step(), request->share(), e.what()));
    }
  });
}

grpc::Status WorkerService::Ping(grpc::ServerContext* context, const PingRequest*,
                                 PingReply* reply) {
  return comm::rpc::serve(*context, token_, [&] {
    std::lock_guard lock(mutex_);
    last_call_ = std::chrono::steady_clock::now();
    reply->set_task_index(task_index_);
    reply->set_in_fit(handler_ != nullptr && !ended_);
  });
}

grpc::Status WorkerService::EndFit(grpc::ServerContext* context, const EndFitRequest* request,
                                   EndFitReply*) {
  return comm::rpc::serve(*context, token_, [&] {
    std::lock_guard lock(mutex_);
    ended_ = true;
    error_ = request->error();
    changed_.notify_all();
  });
}

void WorkerService::serve(Handler handler, std::chrono::milliseconds idle_timeout) {
  std::unique_lock lock(mutex_);
  handler_ = std::move(handler);
  ended_ = false;
  error_.clear();
  last_call_ = std::chrono::steady_clock::now();
  bool idle = false;
  while (!ended_) {
    if (!running_ && std::chrono::steady_clock::now() - last_call_ > idle_timeout) {
      idle = true;
      break;
    }
    changed_.wait_for(lock, std::chrono::milliseconds(200));
  }
  handler_ = nullptr;
  const std::string error = error_;
  lock.unlock();
  { std::lock_guard step(step_mutex_); }  // the step in flight, if any, finishes first
  OSPREY_CHECK_T(DistributedError, !idle,
                 "worker {}: nothing came from the chief (the coordinator) for {} s: it died or "
                 "ended without telling this worker",
                 task_index_, idle_timeout.count() / 1000.0);
  OSPREY_CHECK_T(DistributedError, error.empty(), "worker {}: the chief's fit failed: {}",
                 task_index_, error);
}

}  // namespace osprey::distribute::ps
