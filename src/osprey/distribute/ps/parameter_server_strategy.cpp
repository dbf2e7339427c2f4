#include "osprey/distribute/ps/parameter_server_strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "osprey/autograd/creation_scope.h"
#include "osprey/autograd/grad_mode.h"
#include "osprey/comm/rpc/rpc.h"
#include "osprey/core/error.h"
#include "osprey/distribute/batch_split.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/ps/internal/cluster_coordinator.h"
#include "osprey/distribute/ps/internal/ps_client.h"
#include "osprey/distribute/ps/internal/wire.h"
#include "osprey/distribute/ps/internal/worker_service.h"
#include "osprey/distribute/ps/ps_server.h"
#include "osprey/io/crc32c.h"
#include "osprey/optim/factory.h"

namespace osprey::distribute {

struct ParameterServerStrategy::Runtime {
  std::vector<std::string> ps_addresses, worker_addresses;
  std::string token;
  // A worker task: its step service, listening from construction on.
  std::unique_ptr<ps::WorkerService> service;
  std::unique_ptr<grpc::Server> server;
  // The chief of a cluster without ps tasks hosts the one ps.
  std::unique_ptr<ps::PsServer> local_ps;

  ~Runtime() {
    if (server) server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
};

namespace {

constexpr const char* kWho = "ParameterServerStrategy";

// What the chief's and the workers' executors share: the model bound to the parameter servers.
class PsExecutorBase : public train::StepExecutor {
 public:
  PsExecutorBase(const ParameterServerStrategy& strategy,
                 std::shared_ptr<ParameterServerStrategy::Runtime> runtime,
                 std::shared_ptr<models::Network> network,
                 std::shared_ptr<optim::Optimizer> optimizer)
      : options_(strategy.options()),
        runtime_(std::move(runtime)),
        network_(std::move(network)),
        optimizer_(std::move(optimizer)),
        client_({.addresses = runtime_->ps_addresses,
                 .token = runtime_->token,
                 .timeout = options_.timeout,
                 .max_message_bytes = options_.max_message_bytes,
                 .bf16_gradients = options_.compression == "bf16"}) {}

 protected:
  // Builds the network on x when it has no weights yet, and binds its variables to the plan.
  void ensure_bound(const Tensor& x) {
    if (client_.bound()) return;
    if (network_->variables().empty()) {
      autograd::NoGradGuard no_grad;
      (*network_)(autograd::Variable(x), false);
    }
    trainable_ = network_->trainable_variables();
    state_.clear();
    for (const autograd::Variable& v : network_->non_trainable_variables()) {
      // Other state (integer counters, seeds) stays with each process.
      if (v.value().dtype() == DType::float32 && v.value().is_contiguous()) state_.push_back(v);
    }
    std::vector<std::pair<std::string, Shape>> vars;
    for (const auto* list : {&trainable_, &state_}) {
      for (const autograd::Variable& v : *list) vars.emplace_back(v.name(), v.value().shape());
    }
    ps::ShardingPlan plan = ps::plan_sharding(
        vars, client_.num_ps(),
        {.placement = options_.placement, .partitioner = options_.variable_partitioner});
    check_optimizer(plan);
    client_.bind(std::move(plan), trainable_, state_);
  }

  // Clipping by norm needs whole gradients: refused where the ps see only parts of them.
  void check_optimizer(const ps::ShardingPlan& plan) const {
    const optim::OptimizerOptions& o = optimizer_->options();
    const bool split = std::any_of(plan.variables.begin(), plan.variables.end(),
                                   [](const auto& v) { return v.parts.size() > 1; });
    OSPREY_CHECK(!o.global_clipnorm || plan.num_ps == 1,
                 "{}: global_clipnorm needs every gradient in one place, but the variables are "
                 "spread over {} parameter servers, each applying its own: use clipnorm or "
                 "clipvalue, or one ps",
                 kWho, plan.num_ps);
    OSPREY_CHECK(!o.clipnorm || !split,
                 "{}: clipnorm clips each variable's whole gradient, but the variable_partitioner "
                 "splits variables across parameter servers: use clipvalue, or no partitioner",
                 kWho);
  }

  std::vector<train::ReplicaOutput> local_forward(const Tensor& x, const Tensor& y,
                                                  const train::ReplicaForward& forward) {
    return {forward(*network_, x, y)};
  }

  ParameterServerOptions options_;
  std::shared_ptr<ParameterServerStrategy::Runtime> runtime_;
  std::shared_ptr<models::Network> network_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  ps::PsClient client_;
  std::vector<autograd::Variable> trainable_, state_;
};

// The chief: splits each batch into the workers' shares and has the coordinator run them.
class ChiefExecutor final : public PsExecutorBase {
 public:
  ChiefExecutor(const ParameterServerStrategy& strategy,
                std::shared_ptr<ParameterServerStrategy::Runtime> runtime,
                std::shared_ptr<models::Network> network,
                std::shared_ptr<optim::Optimizer> optimizer)
      : PsExecutorBase(strategy, std::move(runtime), std::move(network), std::move(optimizer)),
        n_(strategy.num_replicas_in_sync()),
        k_(strategy.replicas_to_aggregate()) {}

  std::vector<train::ReplicaOutput> train_step(const Tensor& x, const Tensor& y,
                                               const train::ReplicaStep&) override {
    const Shards shards = split_batch(x, y, n_, kWho);
    ensure_bound(shards.x[0]);
    if (!registered_) register_model();
    if (!coordinator_) {
      coordinator_ = std::make_unique<ps::ClusterCoordinator>(
          ps::CoordinatorOptions{.workers = runtime_->worker_addresses,
                                 .token = runtime_->token,
                                 .timeout = options_.timeout,
                                 .max_message_bytes = options_.max_message_bytes});
    }
    if (new_epoch_) {
      epoch_dropped_ = epoch_applied_ = epoch_staleness_ = 0;
      new_epoch_ = false;
    }
    count_late();
    const bool async = options_.mode == "async";
    const int only = async && epoch_ < options_.warmup_epochs ? 0 : -1;
    std::vector<ps::RemoteValuePtr> values;
    for (int i = 0; i < n_; ++i) {
      ps::StepRequest request;
      request.set_step(step_);
      request.set_share(i);
      ps::to_wire(shards.x[static_cast<size_t>(i)], "x", request.mutable_x());
      ps::to_wire(shards.y[static_cast<size_t>(i)], "y", request.mutable_y());
      values.push_back(coordinator_->schedule(std::move(request), only));
    }
    ++step_;
    return async ? async_step(values, shards) : sync_step(values, shards);
  }

  std::vector<train::ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                                const train::ReplicaForward& forward) override {
    ensure_bound(x);
    return local_forward(x, y, forward);
  }

  // Weights set on the chief since the last pull go to the ps; otherwise the ps's come here.
  void sync_replicas() override {
    if (!registered_) return;
    if (fingerprint() != fingerprint_) {
      register_model();
    } else {
      pull();
    }
  }

  std::vector<train::ReplicaOutput> finish_epoch() override {
    std::vector<train::ReplicaOutput> out;
    if (!coordinator_) return out;
    if (options_.mode == "async") {
      std::vector<ps::RemoteValuePtr> values;
      for (const auto& f : in_flight_) values.push_back(f.value);
      coordinator_->wait_for(values, values.size());
      out = collect_finished();
    }
    // Sync: the epoch's late shares end before its counts are final (one wait an epoch for the
    // straggler at most), so the epoch's logs and its line count every share of its steps.
    coordinator_->wait_for(late_, late_.size());
    count_late();
    pull();
    report_epoch();
    ++epoch_;
    return out;
  }

  void end_fit(const std::string& error) override {
    if (!coordinator_) return;
    if (error.empty()) coordinator_->join();  // late shares still running finish first
    coordinator_->end_fit(error);
    in_flight_.clear();
    late_.clear();
  }

  void add_logs(train::Logs& logs) const override {
    if (options_.mode == "sync") {
      logs.set("ps_aggregated", k_);
      logs.set("ps_replicas", n_);
    } else if (epoch_applied_ > 0) {
      logs.set("ps_staleness",
               static_cast<double>(epoch_staleness_) / static_cast<double>(epoch_applied_));
    }
    logs.set("ps_dropped", static_cast<double>(epoch_dropped_));
  }

 private:
  // Copies the ps's values into the network, and remembers them (sync_replicas compares).
  void pull() {
    client_.pull();
    fingerprint_ = fingerprint();
  }

  // A checksum of the network's values: tells whether the user set weights since the last pull.
  // Only the chief needs it (workers never take weights from their user), once per epoch.
  uint32_t fingerprint() const {
    uint32_t crc = 0;
    for (const auto* list : {&trainable_, &state_}) {
      for (const autograd::Variable& v : *list) {
        const Tensor& t = v.value();
        crc = io::crc32c(t.data<float>(), static_cast<size_t>(t.numel()) * sizeof(float), crc);
      }
    }
    return crc;
  }

  struct InFlight {
    ps::RemoteValuePtr value;
    Tensor y;  // its share of the targets (owned: the batch is gone by the time it finishes)
  };

  void register_model() {
    ps::ShardConfig config{.optimizer = optim::serialize(*optimizer_).dump(),
                           .mode = options_.mode,
                           .replicas_to_aggregate = k_,
                           .total_replicas = n_,
                           .staleness = options_.staleness};
    client_.register_model(config, /*overwrite=*/true);
    registered_ = true;
    fingerprint_ = fingerprint();
  }

  // Sync: the step is done when k shares are; the others are cancelled, or (already running)
  // will be dropped by the ps as late.
  std::vector<train::ReplicaOutput> sync_step(const std::vector<ps::RemoteValuePtr>& values,
                                              const Shards& shards) {
    coordinator_->wait_for(values, static_cast<size_t>(k_));
    std::vector<train::ReplicaOutput> out;
    for (size_t i = 0; i < values.size(); ++i) {
      const ps::RemoteValuePtr& v = values[i];
      if (v->state() == ps::RemoteValue::State::done && static_cast<int>(out.size()) < k_) {
        out.push_back(output(v->reply(), shards.y[i]));
        ++(v->reply().dropped() > 0 ? epoch_dropped_ : epoch_applied_);
      } else if (coordinator_->cancel(v)) {
        ++epoch_dropped_;
      } else {
        late_.push_back(v);
      }
    }
    return out;
  }

  // Async: at most n - 1 shares stay in flight after a call, so every worker has work queued
  // and none waits for another; returns the shares that finished, whichever step they were of.
  std::vector<train::ReplicaOutput> async_step(const std::vector<ps::RemoteValuePtr>& values,
                                               const Shards& shards) {
    for (size_t i = 0; i < values.size(); ++i)
      in_flight_.push_back({values[i], shards.y[i].clone()});
    std::vector<ps::RemoteValuePtr> all;
    for (const auto& f : in_flight_) all.push_back(f.value);
    const auto keep = static_cast<size_t>(n_ - 1);
    if (all.size() > keep) coordinator_->wait_for(all, all.size() - keep);
    return collect_finished();
  }

  std::vector<train::ReplicaOutput> collect_finished() {
    std::vector<train::ReplicaOutput> out;
    std::vector<InFlight> still;
    for (InFlight& f : in_flight_) {
      if (f.value->state() != ps::RemoteValue::State::done) {
        still.push_back(std::move(f));
        continue;
      }
      const ps::StepReply& r = f.value->reply();
      if (r.dropped() > 0) {
        ++epoch_dropped_;
      } else {
        ++epoch_applied_;
        epoch_staleness_ += r.max_staleness();
      }
      out.push_back(output(r, f.y));
    }
    in_flight_ = std::move(still);
    return out;
  }

  // Late sync shares that finished since: dropped by the ps, or (a race) applied after all.
  void count_late() {
    std::vector<ps::RemoteValuePtr> still;
    for (const ps::RemoteValuePtr& v : late_) {
      if (!v->finished()) {
        still.push_back(v);
      } else if (v->state() != ps::RemoteValue::State::done || v->reply().dropped() > 0) {
        ++epoch_dropped_;
      } else {
        ++epoch_applied_;  // it reached every ps among the first k after all
      }
    }
    late_ = std::move(still);
  }

  static train::ReplicaOutput output(const ps::StepReply& reply, const Tensor& y) {
    const Tensor mask =
        reply.has_y_mask()
            ? ps::from_wire(reply.y_mask(), "a worker's step reply").to(DType::boolean)
            : Tensor();
    return {reply.loss(), ps::from_wire(reply.y_pred(), "a worker's step reply"), y, mask};
  }

  // One line per epoch on the chief, in shares (one worker's gradients for one step), as the
  // epoch's ps_dropped: a share is applied when every ps shard applied it, else dropped
  // (cancelled before it ran, late for its sync step, or past the staleness bound). Then the
  // ps's staleness histogram (async), counted per push to each shard.
  void report_epoch() {
    std::vector<int64_t> histogram(ps::kStalenessBuckets, 0);
    for (const ps::StatsReply& s : client_.stats(/*reset=*/true)) {
      for (int i = 0; i < s.staleness_histogram_size() && i < ps::kStalenessBuckets; ++i)
        histogram[static_cast<size_t>(i)] += s.staleness_histogram(i);
    }
    std::string line =
        fmt::format("osprey: {} epoch {}: {} of {} shares applied, {} dropped", kWho, epoch_ + 1,
                    epoch_applied_, epoch_applied_ + epoch_dropped_, epoch_dropped_);
    if (options_.mode == "sync") {
      line += fmt::format(" ({} of {} shares per step)", k_, n_);
    } else {
      std::string h;
      for (size_t i = 0; i < histogram.size(); ++i) {
        if (histogram[i] == 0) continue;
        h += fmt::format("{}{}{}:{}", h.empty() ? "" : " ", i, i + 1 == histogram.size() ? "+" : "",
                         histogram[i]);
      }
      line += fmt::format("; staleness histogram {}", h.empty() ? "(none)" : h);
    }
    if (coordinator_->rescheduled() > 0)
      line +=
          fmt::format("; {} steps re-scheduled after a worker failed", coordinator_->rescheduled());
    fmt::print(stderr, "{}\n", line);
    new_epoch_ = true;  // the counters stay for the epoch's logs, read after finish_epoch
    try {
      client_.checkpoint();  // each ps that has a --checkpoint-dir saves its shard
    } catch (const ValueError&) {
      // A ps without a checkpoint directory: nothing to save there.
    } catch (const Error& e) {
      // Training goes on; a ps restarted now would restore an older checkpoint.
      fmt::print(stderr, "osprey: {}: a parameter server could not save its checkpoint: {}\n", kWho,
                 e.what());
    }
  }

  int n_, k_;
  bool registered_ = false;
  uint32_t fingerprint_ = 0;
  bool new_epoch_ = false;
  int64_t step_ = 0;
  int epoch_ = 0;
  std::unique_ptr<ps::ClusterCoordinator> coordinator_;
  std::vector<InFlight> in_flight_;       // async
  std::vector<ps::RemoteValuePtr> late_;  // sync: started after their step was done
  int64_t epoch_dropped_ = 0, epoch_applied_ = 0, epoch_staleness_ = 0;
};

// A worker: fit serves the chief's steps.
class WorkerExecutor final : public PsExecutorBase {
 public:
  WorkerExecutor(const ParameterServerStrategy& strategy,
                 std::shared_ptr<ParameterServerStrategy::Runtime> runtime,
                 std::shared_ptr<models::Network> network,
                 std::shared_ptr<optim::Optimizer> optimizer)
      : PsExecutorBase(strategy, std::move(runtime), std::move(network), std::move(optimizer)),
        task_index_(strategy.cluster().task_index()) {
    // A test and benchmark hook (seed 002's straggler): OSPREY_PS_SLOWDOWN=1:3 makes worker 1's
    // steps take 3x as long, by sleeping twice each step's own time after it.
    if (const char* f = std::getenv("OSPREY_PS_SLOWDOWN"); f != nullptr && *f != '\0') {
      int worker = -1;
      double factor = 0.0;
      char tail = 0;
      OSPREY_CHECK(std::sscanf(f, "%d:%lf%c", &worker, &factor, &tail) == 2 && factor >= 1.0,
                   "{}: OSPREY_PS_SLOWDOWN must be WORKER:FACTOR with a factor of at least 1, "
                   "e.g. 1:3. Received: '{}'",
                   kWho, f);
      if (worker == task_index_) slowdown_ = factor;
    }
  }

  std::vector<train::ReplicaOutput> train_step(const Tensor&, const Tensor&,
                                               const train::ReplicaStep&) override {
    OSPREY_THROW(InternalError,
                 "{}: a worker's fit serves the chief's steps; train_step is the "
                 "chief's",
                 kWho);
  }

  bool serve_steps(const train::ReplicaStep& step) override {
    scope_ = autograd::creation_scope();  // the handler runs on gRPC's threads: reopen it there
    runtime_->service->serve(
        [&](const ps::StepRequest& request, ps::StepReply* reply) {
          const autograd::CreationScopeGuard creation(scope_.empty() ? nullptr : &scope_);
          run(step, request, reply);
        },
        options_.timeout);
    return true;
  }

  std::vector<train::ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                                const train::ReplicaForward& forward) override {
    ensure_bound(x);
    if (!pulled_) sync_replicas();
    return local_forward(x, y, forward);
  }

  void sync_replicas() override {
    if (!client_.bound()) return;
    client_.pull();
    pulled_ = true;
  }

 private:
  void run(const train::ReplicaStep& step, const ps::StepRequest& request, ps::StepReply* reply) {
    const std::string what =
        fmt::format("step {} share {} from the chief", request.step(), request.share());
    const auto start = std::chrono::steady_clock::now();
    const Tensor x = ps::from_wire(request.x(), what);
    const Tensor y = ps::from_wire(request.y(), what);
    ensure_bound(x);
    const std::vector<int64_t> versions = client_.pull();
    pulled_ = true;
    const train::ReplicaOutput out = step(*network_, trainable_, x, y);
    const ps::PushSummary pushed = client_.push({.step = request.step(),
                                                 .share = request.share(),
                                                 .base_versions = versions,
                                                 .weight = static_cast<double>(x.size(0)),
                                                 .worker = task_index_});
    if (slowdown_ > 1.0) {
      std::this_thread::sleep_for((std::chrono::steady_clock::now() - start) * (slowdown_ - 1.0));
    }
    reply->set_loss(out.loss);
    ps::to_wire(out.y_pred, "y_pred", reply->mutable_y_pred());
    if (out.mask.defined())
      ps::to_wire(out.mask.to(DType::float32), "y_mask", reply->mutable_y_mask());
    reply->set_dropped(pushed.dropped);
    reply->set_max_staleness(pushed.max_staleness);
  }

  int task_index_;
  double slowdown_ = 1.0;
  std::string scope_;
  bool pulled_ = false;
};

}  // namespace

ParameterServerStrategy::ParameterServerStrategy(ParameterServerOptions options,
                                                 std::optional<ClusterResolver> cluster)
    : StrategyBase(resolve_devices({"cpu:0"}, kWho)),
      options_(std::move(options)),
      cluster_(cluster ? std::move(*cluster) : ClusterResolver::from_environment()),
      runtime_(std::make_shared<Runtime>()) {
  const ParameterServerOptions& o = options_;
  OSPREY_CHECK(o.mode == "sync" || o.mode == "async",
               "{}: mode must be sync or async. Received: '{}'", kWho, o.mode);
  OSPREY_CHECK(o.compression == "none" || o.compression == "bf16",
               "{}: compression must be none or bf16. Received: '{}'", kWho, o.compression);
  OSPREY_CHECK(o.timeout.count() > 0, "{}: timeout must be positive. Received: {} ms", kWho,
               o.timeout.count());
  OSPREY_CHECK(o.warmup_epochs >= 0, "{}: warmup_epochs must be at least 0. Received: {}", kWho,
               o.warmup_epochs);
  OSPREY_CHECK(o.staleness.max_staleness >= -1,
               "{}: staleness.max_staleness must be -1 (no bound) or at least 0. Received: {}",
               kWho, o.staleness.max_staleness);
  OSPREY_CHECK(!o.staleness.down_weight_beyond || o.staleness.max_staleness >= 0,
               "{}: staleness.down_weight_beyond weights gradients past the bound, but no "
               "max_staleness is set",
               kWho);
  OSPREY_CHECK(o.max_message_bytes >= 1024,
               "{}: max_message_bytes must be at least 1024. Received: {}", kWho,
               o.max_message_bytes);
  const ClusterSpec& spec = cluster_.cluster_spec();
  const std::string& type = cluster_.task_type();
  OSPREY_CHECK(type != "ps",
               "{}: this process is ps task {} ({}); a ps task runs `osprey ps --listen {}`, not "
               "the training program",
               kWho, cluster_.task_index(), cluster_.source(), cluster_.task_address());
  OSPREY_CHECK(type == "chief" || type == "worker",
               "{}: task type '{}' ({}) takes no part in parameter-server training; the tasks "
               "are chief, worker and ps",
               kWho, type, cluster_.source());
  OSPREY_CHECK(spec.num_tasks("chief") == 1,
               "{}: the cluster ({}) must list one chief, the coordinator; it lists {}", kWho,
               cluster_.source(), spec.num_tasks("chief"));
  num_cluster_workers_ = spec.num_tasks("worker");
  OSPREY_CHECK(num_cluster_workers_ >= 1, "{}: the cluster ({}) lists no worker task", kWho,
               cluster_.source());
  OSPREY_CHECK(o.replicas_to_aggregate >= 0 && o.replicas_to_aggregate <= num_cluster_workers_,
               "{}: replicas_to_aggregate must be between 1 and the {} workers (0: all). "
               "Received: {}",
               kWho, num_cluster_workers_, o.replicas_to_aggregate);
  OSPREY_CHECK(o.mode == "sync" || o.replicas_to_aggregate == 0,
               "{}: replicas_to_aggregate is for sync training; async applies every gradient",
               kWho);
  rank_ = type == "chief" ? 0 : cluster_.task_index() + 1;
  Runtime& rt = *runtime_;
  rt.token = o.token;
  if (rt.token.empty()) {
    const char* env = std::getenv("OSPREY_PS_TOKEN");
    if (env != nullptr) rt.token = env;
  }
  rt.worker_addresses = spec.jobs.at("worker");
  if (spec.num_tasks("ps") > 0) {
    rt.ps_addresses = spec.jobs.at("ps");
  } else {
    rt.ps_addresses = {spec.task_address("chief", 0)};  // the chief hosts the one ps
    if (type == "chief") {
      rt.local_ps = std::make_unique<ps::PsServer>(
          ps::PsServerOptions{.listen = rt.ps_addresses[0],
                              .checkpoint_dir = "",
                              .token = rt.token,
                              .max_message_bytes = o.max_message_bytes,
                              .name = "the chief's ps"});
    }
  }
  if (type == "worker") {
    const std::string address = cluster_.task_address();
    comm::rpc::check_address(
        address, fmt::format("worker {}'s address ({})", cluster_.task_index(), cluster_.source()));
    rt.service = std::make_unique<ps::WorkerService>(cluster_.task_index(), rt.token);
    int port = 0;
    rt.server =
        comm::rpc::start_server(address, {rt.service.get()}, o.max_message_bytes, &port,
                                fmt::format("worker {}'s step service", cluster_.task_index()));
  }
}

int ParameterServerStrategy::replicas_to_aggregate() const noexcept {
  return options_.replicas_to_aggregate > 0 ? options_.replicas_to_aggregate : num_cluster_workers_;
}

std::string ParameterServerStrategy::describe() const {
  std::string role = cluster_.task_type() == "chief"
                         ? std::string("chief")
                         : fmt::format("worker {}", cluster_.task_index());
  return fmt::format("{}({}, {} workers, {} ps, {}{})", name(), role, num_cluster_workers_,
                     runtime_->ps_addresses.size(), options_.mode,
                     options_.mode == "sync"
                         ? fmt::format(" {} of {}", replicas_to_aggregate(), num_cluster_workers_)
                         : std::string());
}

std::unique_ptr<train::StepExecutor> ParameterServerStrategy::make_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer) const {
  if (cluster_.task_type() == "chief") {
    return std::make_unique<ChiefExecutor>(*this, runtime_, std::move(network),
                                           std::move(optimizer));
  }
  return std::make_unique<WorkerExecutor>(*this, runtime_, std::move(network),
                                          std::move(optimizer));
}

}  // namespace osprey::distribute
