// WorkerService: the Worker service of ps.proto, served by a parameter-server worker task from
// the moment its strategy is made: Ping answers whether the worker is in fit, RunStep runs one
// step through the handler fit installs (serve()), EndFit ends serve(). Steps run one at a time.
// Outside serve() a step is refused with UNAVAILABLE, which the coordinator treats as "not ready
// yet, try elsewhere"; a step that fails for its own reasons is refused with a lasting status.
// Internal to distribute/ (gRPC types).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "osprey/distribute/ps/ps.grpc.pb.h"

namespace osprey::distribute::ps {

class WorkerService final : public Worker::Service {
 public:
  using Handler = std::function<void(const StepRequest&, StepReply*)>;
  WorkerService(int task_index, std::string token)
      : task_index_(task_index), token_(std::move(token)) {}

  grpc::Status RunStep(grpc::ServerContext* context, const StepRequest* request,
                       StepReply* reply) override;
  grpc::Status Ping(grpc::ServerContext* context, const PingRequest* request,
                    PingReply* reply) override;
  grpc::Status EndFit(grpc::ServerContext* context, const EndFitRequest* request,
                      EndFitReply* reply) override;

  // Runs steps through `handler` until the coordinator ends fit. Throws DistributedError when
  // the coordinator's fit failed (its message), or when nothing came from the coordinator for
  // `idle_timeout` (it died). Returns after the last step in flight finished.
  void serve(Handler handler, std::chrono::milliseconds idle_timeout);

 private:
  int task_index_;
  std::string token_;
  std::mutex step_mutex_;  // one step at a time
  std::mutex mutex_;       // the fields below
  std::condition_variable changed_;
  Handler handler_;
  bool ended_ = false;
  bool running_ = false;  // a step is running
  std::string error_;
  std::chrono::steady_clock::time_point last_call_;
};

}  // namespace osprey::distribute::ps
