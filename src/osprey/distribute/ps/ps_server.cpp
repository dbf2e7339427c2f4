// PsServer (ps_server.h): ps.proto's ParameterServer service over a ParameterShard. Each handler
// runs under comm::rpc::serve (the token first, then exceptions to statuses: an unknown variable is
// NOT_FOUND, a bad shape or a malformed tensor INVALID_ARGUMENT); gRPC itself refuses messages
// over max_message_bytes with RESOURCE_EXHAUSTED before a handler sees them.
#include "osprey/distribute/ps/ps_server.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "osprey/comm/rpc/rpc.h"
#include "osprey/distribute/ps/internal/wire.h"
#include "osprey/distribute/ps/ps.grpc.pb.h"

namespace osprey::distribute::ps {

namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(5);

PushReply::Outcome to_proto(PushOutcome o) {
  switch (o) {
    case PushOutcome::applied:
      return PushReply::APPLIED;
    case PushOutcome::aggregating:
      return PushReply::AGGREGATING;
    case PushOutcome::dropped_late:
      return PushReply::DROPPED_LATE;
    case PushOutcome::dropped_stale:
      return PushReply::DROPPED_STALE;
    case PushOutcome::duplicate:
      return PushReply::DUPLICATE;
  }
  return PushReply::APPLIED;
}

NamedTensors from_wire_all(const google::protobuf::RepeatedPtrField<TensorData>& tensors,
                           const std::string& what) {
  NamedTensors out;
  out.reserve(static_cast<size_t>(tensors.size()));
  for (const TensorData& d : tensors) out.emplace_back(d.name(), from_wire(d, what));
  return out;
}

// "127.0.0.1:0" with port 5001 -> "127.0.0.1:5001".
std::string with_port(const std::string& listen, int port) {
  return fmt::format("{}:{}", listen.substr(0, listen.rfind(':')), port);
}

class Service final : public ParameterServer::Service {
 public:
  Service(ParameterShard& shard, const PsServerOptions& options)
      : shard_(shard),
        token_(options.token),
        name_(options.name),
        has_checkpoint_dir_(!options.checkpoint_dir.empty()) {}

  grpc::Status Register(grpc::ServerContext* context, const RegisterRequest* request,
                        RegisterReply* reply) override {
    return serve(*context, *request, *reply, [&] {
      const std::string what = fmt::format("Register on {}", name_);
      ShardConfig config{.optimizer = request->optimizer(),
                         .mode = request->mode(),
                         .replicas_to_aggregate = request->replicas_to_aggregate(),
                         .total_replicas = request->total_replicas(),
                         .staleness = {
                             .max_staleness = request->staleness().max_staleness(),
                             .down_weight_beyond = request->staleness().down_weight_beyond(),
                             .staleness_aware_lr = request->staleness().staleness_aware_lr(),
                         }};
      const RegisterResult r = shard_.register_variables(from_wire_all(request->variables(), what),
                                                         from_wire_all(request->state(), what),
                                                         config, request->overwrite());
      reply->set_kept_existing(r.kept_existing);
      reply->set_version(r.version);
      reply->set_last_step(r.last_step);
    });
  }

  grpc::Status Pull(grpc::ServerContext* context, const PullRequest* request,
                    PullReply* reply) override {
    return serve(*context, *request, *reply, [&] {
      const ParameterShard::Values v = shard_.pull();
      for (const auto& [name, t] : v.variables) to_wire(t, name, reply->add_variables());
      for (const auto& [name, t] : v.state) to_wire(t, name, reply->add_state());
      reply->set_version(v.version);
    });
  }

  grpc::Status Push(grpc::ServerContext* context, const PushRequest* request,
                    PushReply* reply) override {
    return serve(*context, *request, *reply, [&] {
      const std::string what = fmt::format("Push from worker {} to {}", request->worker(), name_);
      PushArgs args{.step = request->step(),
                    .share = request->share(),
                    .base_version = request->base_version(),
                    .weight = request->weight(),
                    .gradients = {},
                    .state = from_wire_all(request->state(), what),
                    .worker = request->worker()};
      args.gradients.reserve(static_cast<size_t>(request->gradients_size()));
      for (const TensorData& d : request->gradients()) {
        args.gradients.emplace_back(d.name(), floats_from_wire(d, what));
      }
      const PushResult r = shard_.push(args);
      reply->set_outcome(to_proto(r.outcome));
      reply->set_version(r.version);
      reply->set_staleness(r.staleness);
    });
  }

  grpc::Status Stats(grpc::ServerContext* context, const StatsRequest* request,
                     StatsReply* reply) override {
    // Counted before answering, so the reply includes this request (not its own size).
    bytes_received_ += static_cast<int64_t>(request->ByteSizeLong());
    return comm::rpc::serve(*context, token_, [&] {
      const ShardStats s = shard_.stats(request->reset());
      reply->set_version(s.version);
      reply->set_pushes(s.pushes);
      reply->set_applied(s.applied);
      reply->set_dropped(s.dropped);
      for (const int64_t n : s.staleness_histogram) reply->add_staleness_histogram(n);
      reply->set_bytes_received(bytes_received_.load());
      reply->set_bytes_sent(bytes_sent_.load());
      reply->set_variables(s.variables);
      reply->set_parameters(s.parameters);
      if (request->reset()) bytes_received_ = bytes_sent_ = 0;
      bytes_sent_ += static_cast<int64_t>(reply->ByteSizeLong());
    });
  }

  grpc::Status Checkpoint(grpc::ServerContext* context, const CheckpointRequest* request,
                          CheckpointReply* reply) override {
    return serve(*context, *request, *reply, [&] {
      // A ps without a directory answers with an empty path: a job whose servers are mixed can
      // ask all of them.
      if (!has_checkpoint_dir_) {
        reply->set_version(shard_.version());
        return;
      }
      int64_t version = 0;
      reply->set_path(shard_.checkpoint(&version));
      reply->set_version(version);
    });
  }

 private:
  // comm::rpc::serve with the bytes counted (the request's as it arrives, the reply's when it is
  // OK).
  template <class Request, class Reply, class Fn>
  grpc::Status serve(const grpc::ServerContext& context, const Request& request, Reply& reply,
                     Fn&& fn) {
    bytes_received_ += static_cast<int64_t>(request.ByteSizeLong());
    grpc::Status status = comm::rpc::serve(context, token_, fn);
    if (status.ok()) bytes_sent_ += static_cast<int64_t>(reply.ByteSizeLong());
    return status;
  }

  ParameterShard& shard_;
  std::string token_;
  std::string name_;
  bool has_checkpoint_dir_;
  std::atomic<int64_t> bytes_received_{0}, bytes_sent_{0};
};

}  // namespace

struct PsServer::Impl {
  PsServerOptions options;
  ParameterShard shard;
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool shut_down = false;
  std::thread checkpointer;

  explicit Impl(PsServerOptions o)
      : options(std::move(o)),
        shard({.checkpoint_dir = options.checkpoint_dir, .name = options.name}) {}

  // Writes a checkpoint when there is a directory and something changed; false after reporting
  // a failure on stderr.
  bool checkpoint_if_changed(std::string_view why) {
    if (options.checkpoint_dir.empty() || !shard.registered() ||
        !shard.changed_since_checkpoint()) {
      return true;
    }
    try {
      shard.checkpoint();
      return true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s checkpoint failed (the shard keeps serving): %s\n",
                   options.name.c_str(), std::string(why).c_str(), e.what());
      return false;
    }
  }

  void checkpoint_loop() {
    const auto period = std::chrono::duration<double>(options.checkpoint_every_seconds);
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, period, [&] { return stopping; })) {
      lock.unlock();
      checkpoint_if_changed("periodic");
      lock.lock();
    }
  }
};

PsServer::PsServer(PsServerOptions options) {
  const std::string what = fmt::format("{} (--listen {})", options.name, options.listen);
  comm::rpc::check_address(options.listen, what);
  OSPREY_CHECK(options.max_message_bytes > 0,
               "{}: max_message_bytes must be positive. Received: {}", options.name,
               options.max_message_bytes);
  OSPREY_CHECK(options.checkpoint_every_seconds >= 0,
               "{}: checkpoint_every_seconds must be >= 0 (0: only on request). Received: {}",
               options.name, options.checkpoint_every_seconds);
  OSPREY_CHECK(options.checkpoint_every_seconds == 0 || !options.checkpoint_dir.empty(),
               "{}: periodic checkpoints (every {} s) need a checkpoint directory", options.name,
               options.checkpoint_every_seconds);
  impl_ = std::make_unique<Impl>(std::move(options));  // restores the shard
  Impl& s = *impl_;
  s.service = std::make_unique<Service>(s.shard, s.options);
  s.server = comm::rpc::start_server(s.options.listen, {s.service.get()},
                                     s.options.max_message_bytes, &s.port, s.options.name);
  if (s.options.checkpoint_every_seconds > 0) {
    s.checkpointer = std::thread([&s] { s.checkpoint_loop(); });
  }
}

PsServer::~PsServer() {
  try {
    shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: shutdown: %s\n", impl_->options.name.c_str(), e.what());
  }
}

int PsServer::port() const { return impl_->port; }

std::string PsServer::address() const { return with_port(impl_->options.listen, impl_->port); }

void PsServer::wait() { impl_->server->Wait(); }

void PsServer::shutdown() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    if (s.shut_down) return;
    s.shut_down = true;
    s.stopping = true;
  }
  s.cv.notify_all();
  s.server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  if (s.checkpointer.joinable()) s.checkpointer.join();
  if (!s.options.checkpoint_dir.empty() && s.shard.registered() &&
      s.shard.changed_since_checkpoint()) {
    s.shard.checkpoint();  // the last one: a failure here is the caller's to see
  }
}

ParameterShard& PsServer::shard() { return impl_->shard; }

}  // namespace osprey::distribute::ps
