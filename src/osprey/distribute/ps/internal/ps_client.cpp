#include "osprey/distribute/ps/internal/ps_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "osprey/comm/rpc/rpc.h"
#include "osprey/core/error.h"
#include "osprey/core/thread_sanitizer.h"
#include "osprey/core/trace.h"
#include "osprey/distribute/ps/internal/wire.h"

namespace osprey::distribute::ps {

namespace {

using Clock = std::chrono::steady_clock;

// The bound variable v, rows [begin, end) of axis 0 (all of a scalar).
Tensor rows_of(const Tensor& v, const VariablePart& part) {
  if (v.ndim() == 0) return v;
  return v.narrow(0, part.row_begin, part.row_end - part.row_begin);
}

}  // namespace

PsClient::PsClient(PsClientOptions options) : options_(std::move(options)) {
  OSPREY_CHECK(!options_.addresses.empty(),
               "ParameterServerStrategy: the cluster lists no ps task");
  for (size_t i = 0; i < options_.addresses.size(); ++i) {
    comm::rpc::check_address(options_.addresses[i], fmt::format("ps {}'s address", i));
    stubs_.push_back(ParameterServer::NewStub(
        comm::rpc::make_channel(options_.addresses[i], options_.max_message_bytes)));
  }
}

std::string PsClient::describe(int ps) const {
  return fmt::format("ps {} at {}", ps, options_.addresses[static_cast<size_t>(ps)]);
}

void PsClient::bind(ShardingPlan plan, std::vector<autograd::Variable> trainable,
                    std::vector<autograd::Variable> state) {
  OSPREY_CHECK(plan.num_ps == num_ps(),
               "ParameterServerStrategy: the sharding plan places variables on {} ps tasks, but "
               "the cluster lists {}",
               plan.num_ps, num_ps());
  OSPREY_CHECK(plan.variables.size() == trainable.size() + state.size(),
               "ParameterServerStrategy: the sharding plan covers {} variables; the model has {}",
               plan.variables.size(), trainable.size() + state.size());
  size_t i = 0;
  for (const auto* list : {&trainable, &state}) {
    for (const autograd::Variable& v : *list) {
      const Tensor& t = v.value();
      OSPREY_CHECK(t.dtype() == DType::float32 && t.is_contiguous(),
                   "ParameterServerStrategy: variable {} is {}; parameter servers hold "
                   "contiguous float32 variables",
                   v.name(), dtype_name(t.dtype()));
      OSPREY_CHECK(plan.variables[i].path == v.name() && plan.variables[i].shape == t.shape(),
                   "ParameterServerStrategy: the sharding plan's variable {} is {} {}, the "
                   "model's is {} {}",
                   i, plan.variables[i].path, plan.variables[i].shape.to_string(), v.name(),
                   t.shape().to_string());
      ++i;
    }
  }
  plan_ = std::move(plan);
  trainable_ = std::move(trainable);
  state_ = std::move(state);
}

template <class Request, class Reply, class Start>
void PsClient::call_all(const char* method, const std::vector<Request>& requests,
                        std::vector<Reply>& replies, Start start) {
  // The profiler's span of one round of RPCs to every parameter server: bytes sent, the peers.
  trace::Span span(trace::Category::collective, method, [&](trace::Args& a) {
    size_t bytes = 0;
    for (const Request& r : requests) bytes += r.ByteSizeLong();
    std::string peers;
    for (int i = 0; i < num_ps(); ++i) {
      if (!peers.empty()) peers += ", ";
      peers += describe(i);
    }
    a.emplace_back("bytes", std::to_string(bytes));
    a.emplace_back("peer", std::move(peers));
    a.emplace_back("backend", "grpc");
  });
  const auto deadline = Clock::now() + options_.timeout;
  std::vector<int> pending(static_cast<size_t>(num_ps()));
  for (int i = 0; i < num_ps(); ++i) pending[static_cast<size_t>(i)] = i;
  auto backoff = std::chrono::milliseconds(50);
  while (!pending.empty()) {
    std::vector<grpc::Status> status(stubs_.size());
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts(stubs_.size());
    std::mutex mutex;
    std::condition_variable cv;
    size_t outstanding = pending.size();
    const auto left =
        std::max(std::chrono::milliseconds(1),
                 std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    for (int i : pending) {
      const auto k = static_cast<size_t>(i);
      contexts[k] = std::make_unique<grpc::ClientContext>();
      comm::rpc::prepare(*contexts[k], options_.token, left);
      replies[k].Clear();
      // gRPC's completion thread runs the callback after its uninstrumented core has finished the
      // call: TSan is told that what this thread wrote for it comes first (thread_sanitizer.h).
      happens_before(&mutex);
      start(*stubs_[k], contexts[k].get(), &requests[k], &replies[k], [&, k](grpc::Status s) {
        happens_after(&mutex);
        std::lock_guard lock(mutex);
        status[k] = std::move(s);
        if (--outstanding == 0) cv.notify_all();
      });
    }
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return outstanding == 0; });
    }
    std::vector<int> retry;
    for (int i : pending) {
      const grpc::Status& s = status[static_cast<size_t>(i)];
      if (s.ok()) continue;
      if (comm::rpc::is_transient(s) && Clock::now() < deadline) {
        retry.push_back(i);
        continue;
      }
      comm::rpc::throw_status(s, fmt::format("{} to {}", method, describe(i)));
    }
    if (!retry.empty()) {
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
    pending = std::move(retry);
  }
  if (span.recording()) {
    size_t bytes = 0;
    for (const Reply& r : replies) bytes += r.ByteSizeLong();
    span.add_arg("reply_bytes", std::to_string(bytes));
  }
}

std::vector<RegisterReply> PsClient::register_model(const ShardConfig& config, bool overwrite) {
  OSPREY_ASSERT(bound(), "PsClient::register_model before bind");
  std::vector<RegisterRequest> requests(stubs_.size());
  for (auto& r : requests) {
    r.set_optimizer(config.optimizer);
    r.set_mode(config.mode);
    r.set_replicas_to_aggregate(config.replicas_to_aggregate);
    r.set_total_replicas(config.total_replicas);
    r.mutable_staleness()->set_max_staleness(config.staleness.max_staleness);
    r.mutable_staleness()->set_down_weight_beyond(config.staleness.down_weight_beyond);
    r.mutable_staleness()->set_staleness_aware_lr(config.staleness.staleness_aware_lr);
    r.set_overwrite(overwrite);
  }
  for (size_t i = 0; i < plan_.variables.size(); ++i) {
    const bool trainable = i < trainable_.size();
    const Tensor& value = trainable ? trainable_[i].value() : state_[i - trainable_.size()].value();
    for (const VariablePart& part : plan_.variables[i].parts) {
      RegisterRequest& r = requests[static_cast<size_t>(part.ps)];
      to_wire(rows_of(value, part), part.name, trainable ? r.add_variables() : r.add_state());
    }
  }
  std::vector<RegisterReply> replies(stubs_.size());
  call_all("Register", requests, replies,
           [](ParameterServer::Stub& stub, grpc::ClientContext* c, const RegisterRequest* q,
              RegisterReply* p, std::function<void(grpc::Status)> done) {
             stub.async()->Register(c, q, p, std::move(done));
           });
  return replies;
}

std::vector<int64_t> PsClient::pull() {
  OSPREY_ASSERT(bound(), "PsClient::pull before bind");
  const std::vector<PullRequest> requests(stubs_.size());
  std::vector<PullReply> replies(stubs_.size());
  call_all(
      "Pull", requests, replies,
      [](ParameterServer::Stub& stub, grpc::ClientContext* c, const PullRequest* q, PullReply* p,
         std::function<void(grpc::Status)> done) { stub.async()->Pull(c, q, p, std::move(done)); });
  // Index each reply's tensors by name, then copy every part into its rows.
  std::vector<std::map<std::string, const TensorData*>> by_name(stubs_.size());
  last_pull_bytes_ = 0;
  for (size_t k = 0; k < replies.size(); ++k) {
    last_pull_bytes_ += static_cast<int64_t>(replies[k].ByteSizeLong());
    for (const TensorData& d : replies[k].variables()) by_name[k][d.name()] = &d;
    for (const TensorData& d : replies[k].state()) by_name[k][d.name()] = &d;
  }
  for (size_t i = 0; i < plan_.variables.size(); ++i) {
    const bool trainable = i < trainable_.size();
    const Tensor& value = trainable ? trainable_[i].value() : state_[i - trainable_.size()].value();
    for (const VariablePart& part : plan_.variables[i].parts) {
      const auto k = static_cast<size_t>(part.ps);
      const auto it = by_name[k].find(part.name);
      OSPREY_CHECK_T(DistributedError, it != by_name[k].end(),
                     "ParameterServerStrategy: {} does not hold variable {} (it holds {} others): "
                     "was it restarted without its --checkpoint-dir, or started for another "
                     "model?",
                     describe(part.ps), part.name, by_name[k].size());
      Tensor rows = rows_of(value, part);
      read_floats(*it->second, rows.data<float>(), rows.numel(),
                  fmt::format("Pull from {}", describe(part.ps)));
    }
  }
  std::vector<int64_t> versions;
  versions.reserve(replies.size());
  for (const PullReply& r : replies) versions.push_back(r.version());
  return versions;
}

PushSummary PsClient::push(const PushCall& call) {
  OSPREY_ASSERT(bound(), "PsClient::push before bind");
  std::vector<PushRequest> requests(stubs_.size());
  for (size_t k = 0; k < requests.size(); ++k) {
    PushRequest& r = requests[k];
    r.set_step(call.step);
    r.set_share(call.share);
    r.set_base_version(k < call.base_versions.size() ? call.base_versions[k] : 0);
    r.set_weight(call.weight);
    r.set_worker(call.worker);
  }
  for (size_t i = 0; i < plan_.variables.size(); ++i) {
    const bool trainable = i < trainable_.size();
    if (trainable && !trainable_[i].has_grad()) continue;  // no gradient: not updated
    const Tensor& t = trainable ? trainable_[i].grad() : state_[i - trainable_.size()].value();
    OSPREY_CHECK(t.dtype() == DType::float32,
                 "ParameterServerStrategy: the gradient of variable {} is {}; float32 expected",
                 plan_.variables[i].path, dtype_name(t.dtype()));
    const Tensor c = t.contiguous();
    for (const VariablePart& part : plan_.variables[i].parts) {
      PushRequest& r = requests[static_cast<size_t>(part.ps)];
      if (trainable) {
        to_wire(rows_of(c, part), part.name, r.add_gradients(), options_.bf16_gradients);
      } else {
        to_wire(rows_of(c, part), part.name, r.add_state());
      }
    }
  }
  std::vector<PushReply> replies(stubs_.size());
  call_all(
      "Push", requests, replies,
      [](ParameterServer::Stub& stub, grpc::ClientContext* c, const PushRequest* q, PushReply* p,
         std::function<void(grpc::Status)> done) { stub.async()->Push(c, q, p, std::move(done)); });
  PushSummary summary;
  for (size_t k = 0; k < replies.size(); ++k) {
    summary.bytes += static_cast<int64_t>(requests[k].ByteSizeLong());
    summary.max_staleness = std::max(summary.max_staleness, replies[k].staleness());
    switch (replies[k].outcome()) {
      case PushReply::AGGREGATING:
        ++summary.aggregating;
        break;
      case PushReply::DROPPED_LATE:
      case PushReply::DROPPED_STALE:
        ++summary.dropped;
        break;
      default:
        ++summary.applied;
    }
  }
  return summary;
}

std::vector<StatsReply> PsClient::stats(bool reset) {
  std::vector<StatsRequest> requests(stubs_.size());
  for (auto& r : requests) r.set_reset(reset);
  std::vector<StatsReply> replies(stubs_.size());
  call_all("Stats", requests, replies,
           [](ParameterServer::Stub& stub, grpc::ClientContext* c, const StatsRequest* q,
              StatsReply* p, std::function<void(grpc::Status)> done) {
             stub.async()->Stats(c, q, p, std::move(done));
           });
  return replies;
}

std::vector<CheckpointReply> PsClient::checkpoint() {
  const std::vector<CheckpointRequest> requests(stubs_.size());
  std::vector<CheckpointReply> replies(stubs_.size());
  call_all("Checkpoint", requests, replies,
           [](ParameterServer::Stub& stub, grpc::ClientContext* c, const CheckpointRequest* q,
              CheckpointReply* p, std::function<void(grpc::Status)> done) {
             stub.async()->Checkpoint(c, q, p, std::move(done));
           });
  return replies;
}

}  // namespace osprey::distribute::ps
