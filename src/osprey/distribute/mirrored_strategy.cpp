#include "osprey/distribute/mirrored_strategy.h"

#include <algorithm>
#include <mutex>

#include "osprey/comm/in_process.h"
#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/distribute/batch_split.h"
#include "osprey/distribute/communicator_replica_context.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/replicas.h"
#include "osprey/optim/factory.h"

namespace osprey::distribute {

struct MirroredStrategy::Reducers {
  std::mutex mutex;
  std::vector<std::weak_ptr<GradientReducer>> live;
};

namespace {

// The reduced gradients are only right when every replica had the same variables with and
// without a gradient (a missing one counts as zeros): checked after the step.
void check_gradients(const Replicas& reps, const char* who) {
  const auto& vars0 = reps.trainable(0);
  for (size_t i = 0; i < vars0.size(); ++i) {
    const bool has = vars0[i].has_grad();
    for (int r = 1; r < reps.size(); ++r) {
      const autograd::Variable& v = reps.trainable(r)[i];
      OSPREY_CHECK(v.has_grad() == has, "{}: variable {} has {} gradient on replica 0 but {} on replica {}", who,
                   v.name(), has ? "a" : "no", has ? "none" : "one", r);
    }
  }
}

class MirroredExecutor final : public train::StepExecutor {
 public:
  MirroredExecutor(std::shared_ptr<models::Model> network, std::shared_ptr<optim::Optimizer> optimizer, int n,
                   MirroredOptions options, std::shared_ptr<MirroredStrategy::Reducers> registry)
      : replicas_(std::move(network), n, "MirroredStrategy", options.threads_per_replica),
        group_(n),
        contexts_(n),
        options_(options),
        registry_(std::move(registry)) {
    optimizers_.push_back(std::move(optimizer));
  }

  std::vector<train::ReplicaOutput> train_step(const Tensor& x, const Tensor& y,
                                               const train::ReplicaStep& step) override {
    const Shards shards = split_batch(x, y, replicas_.size(), "MirroredStrategy");
    if (!replicas_.ready()) create(shards);
    // A callback may have changed the primary optimizer's rate (ReduceLROnPlateau): follow it.
    for (size_t r = 1; r < optimizers_.size(); ++r) {
      optimizers_[r]->set_learning_rate(optimizers_[0]->learning_rate_option());
    }
    std::vector<train::ReplicaOutput> out(static_cast<size_t>(replicas_.size()));
    abort_.run(replicas_, [&](int r) {
      const auto i = static_cast<size_t>(r);
      if (reducers_.empty()) {
        out[i] = step(replicas_.network(r), replicas_.trainable(r), shards.x[i], shards.y[i]);
        return;
      }
      GradientReducer& reducer = *reducers_[i];
      nn::ReplicaContextGuard context(contexts_.get(r));  // synchronized BatchNormalization
      reducer.begin_step();
      try {
        out[i] = step(replicas_.network(r), replicas_.trainable(r), shards.x[i], shards.y[i]);
      } catch (...) {
        // Abort first: the others may be waiting in a layer's collective this replica never
        // reaches. Its own buckets then end at once; their (aborted) error is not the one to report.
        abort_.fail(r);
        try {
          reducer.finish_step();
        } catch (...) {
        }
        throw;
      }
      reducer.finish_step();
    });
    check_gradients(replicas_, "MirroredStrategy");
    abort_.run(replicas_, [&](int r) {
      optimizers_[static_cast<size_t>(r)]->apply(replicas_.trainable(r));
      if (replicas_.size() > 1) average_state(r);
    });
    return out;
  }

  std::vector<train::ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                                const train::ReplicaForward& forward) override {
    if (!replicas_.ready() && x.defined() && x.ndim() >= 1 && x.size(0) >= replicas_.size()) {
      create(split_batch(x.narrow(0, 0, x.size(0) / replicas_.size() * replicas_.size()), Tensor(),
                         replicas_.size(), "MirroredStrategy"));
    }
    return replicas_.forward(x, y, forward);
  }

  void sync_replicas() override { replicas_.copy_from_primary(); }

  // Non-trainable float32 state (BatchNormalization's moving mean and variance, each replica
  // updated from its own share of the batch) becomes the mean over replicas, so every copy, and
  // the primary that predict and save see, holds the same values (tf.distribute's ON_READ/MEAN
  // aggregation). The moving mean then equals single-device training's; the moving variance is
  // the mean of per-replica variances (per-replica statistics, as TF by default). Synchronized
  // BatchNormalization's statistics are already the global batch's, equal on every replica.
  void average_state(int r) {
    comm::Communicator& c = group_.rank(r);
    for (const autograd::Variable& v : replicas_.non_trainable(r)) {
      if (v.dtype() != DType::float32 || !v.value().is_contiguous()) continue;  // same on every replica
      Tensor t = v.value();
      c.all_reduce(t, comm::ReduceOp::mean);
    }
  }

 private:
  void create(const Shards& shards) {
    replicas_.create(shards.x);
    const nlohmann::json config = optim::serialize(*optimizers_[0]);
    for (int r = 1; r < replicas_.size(); ++r) {
      std::shared_ptr<optim::Optimizer> o = optim::deserialize(config);
      if (optimizers_[0]->iterations() > 0) o->load_state(optimizers_[0]->state());
      optimizers_.push_back(std::move(o));
    }
    if (replicas_.size() > 1) {
      const ReducerOptions ro{.bucket_bytes = options_.bucket_bytes,
                              .first_bucket_bytes = options_.first_bucket_bytes,
                              .reduce_on = options_.reduce_on.value_or(automatic_reduce_on())};
      std::lock_guard<std::mutex> lock(registry_->mutex);
      for (int r = 0; r < replicas_.size(); ++r) {
        reducers_.push_back(std::make_shared<GradientReducer>(replicas_.trainable(r), group_.rank(r), ro));
        registry_->live.push_back(reducers_.back());
      }
    }
  }

  // A communication thread only hides the reduction when it has a core the replicas' kernels do
  // not use; otherwise it takes one from backward and adds a hand-off per bucket, so the replica
  // thread reduces each bucket itself.
  ReduceOn automatic_reduce_on() const {
    const int n = replicas_.size();
    const int share = options_.threads_per_replica > 0 ? options_.threads_per_replica : std::max(1, num_threads() / n);
    return n * share < num_threads() ? ReduceOn::communication_thread : ReduceOn::backward_thread;
  }

  Replicas replicas_;
  comm::InProcessGroup group_;
  // Layers' collectives (synchronized BatchNormalization) on the replica threads, in graph order.
  InProcessReplicaContexts contexts_;
  CollectiveAbort abort_{{&group_, &contexts_.group()}};
  MirroredOptions options_;
  std::vector<std::shared_ptr<optim::Optimizer>> optimizers_;  // [0] is the compiled one
  std::shared_ptr<MirroredStrategy::Reducers> registry_;
  // Destroyed before group_ (declared after it): their threads use its communicators.
  std::vector<std::shared_ptr<GradientReducer>> reducers_;
};

}  // namespace

MirroredStrategy::MirroredStrategy(const std::vector<std::string>& devices, MirroredOptions options)
    : StrategyBase(resolve_devices(devices, "MirroredStrategy")),
      options_(options),
      reducers_(std::make_shared<Reducers>()) {
  OSPREY_CHECK(options_.bucket_bytes >= 1, "MirroredStrategy: bucket_bytes must be at least 1. Received: {}",
               options_.bucket_bytes);
  OSPREY_CHECK(options_.first_bucket_bytes >= 1,
               "MirroredStrategy: first_bucket_bytes must be at least 1. Received: {}", options_.first_bucket_bytes);
  OSPREY_CHECK(options_.threads_per_replica >= 0,
               "MirroredStrategy: threads_per_replica must be at least 0 (0: num_threads() / replicas). Received: {}",
               options_.threads_per_replica);
}

std::unique_ptr<train::StepExecutor> MirroredStrategy::make_executor(std::shared_ptr<models::Model> network,
                                                                     std::shared_ptr<optim::Optimizer> optimizer) const {
  return std::make_unique<MirroredExecutor>(std::move(network), std::move(optimizer), num_replicas_in_sync(),
                                            options_, reducers_);
}

MirroredStrategy::ReducerStats MirroredStrategy::reducer_stats() const {
  ReducerStats out;
  std::lock_guard<std::mutex> lock(reducers_->mutex);
  auto& live = reducers_->live;
  live.erase(std::remove_if(live.begin(), live.end(), [](const auto& w) { return w.expired(); }), live.end());
  for (const auto& w : live) {
    const auto r = w.lock();
    if (!r) continue;
    out += r->stats();
    out.ceiling = r->overlap_ceiling();  // the same buckets on every replica
    out.buckets = static_cast<int64_t>(r->buckets().size());
  }
  return out;
}

void MirroredStrategy::reset_reducer_stats() const {
  std::lock_guard<std::mutex> lock(reducers_->mutex);
  for (const auto& w : reducers_->live) {
    if (const auto r = w.lock()) r->reset_stats();
  }
}

}  // namespace osprey::distribute
