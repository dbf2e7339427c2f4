#include "osprey/distribute/data_parallel/mirrored_executor.h"

#include <algorithm>
#include <cstring>

#include "osprey/comm/hierarchical.h"
#include "osprey/comm/in_process.h"
#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/distribute/batch_split.h"
#include "osprey/distribute/data_parallel/communicator_replica_context.h"
#include "osprey/distribute/data_parallel/replicas.h"

namespace osprey::distribute {

namespace {

// The reduced gradients are only right when every replica had the same variables with and
// without a gradient (a missing one counts as zeros): checked after the step.
void check_gradients(const Replicas& reps, const std::string& who) {
  const auto& vars0 = reps.trainable(0);
  for (size_t i = 0; i < vars0.size(); ++i) {
    const bool has = vars0[i].has_grad();
    for (int r = 1; r < reps.size(); ++r) {
      const autograd::Variable& v = reps.trainable(r)[i];
      OSPREY_CHECK(v.has_grad() == has,
                   "{}: variable {} has {} gradient on replica 0 but {} on replica {}", who,
                   v.name(), has ? "a" : "no", has ? "none" : "one", r);
    }
  }
}

// A tensor's bytes as floats, for collectives that only copy (broadcast, all-gather): any dtype
// travels bit for bit. Padded to whole floats.
int64_t float_words(const Tensor& t) {
  return static_cast<int64_t>((t.nbytes() + sizeof(float) - 1) / sizeof(float));
}

class MirroredExecutor final : public train::StepExecutor {
 public:
  MirroredExecutor(std::shared_ptr<models::Network> network,
                   std::shared_ptr<optim::Optimizer> optimizer, MirroredExecutorConfig config)
      : config_(std::move(config)),
        workers_(config_.workers ? config_.workers->size() : 1),
        worker_(config_.workers ? config_.workers->rank() : 0),
        replicas_(std::move(network), config_.replicas, config_.owner,
                  config_.options.threads_per_replica),
        group_(config_.replicas),
        layer_group_(config_.replicas) {
    optimizers_.push_back(std::move(optimizer));
    const int n = config_.replicas;
    for (int r = 0; r < n && n * workers_ > 1; ++r) {
      comm::Communicator* grads = r == 0 && workers_ > 1 ? config_.workers->gradients() : nullptr;
      comm::Communicator* layers = r == 0 && workers_ > 1 ? config_.workers->layers() : nullptr;
      comms_.push_back(std::make_unique<comm::HierarchicalCommunicator>(
          group_.rank(r), grads, worker_, workers_, config_.compress));
      layer_comms_.push_back(std::make_unique<comm::HierarchicalCommunicator>(
          layer_group_.rank(r), layers, worker_, workers_, false));
      contexts_.push_back(std::make_unique<CommunicatorReplicaContext>(*layer_comms_.back()));
    }
  }

  std::vector<train::ReplicaOutput> train_step(const Tensor& x, const Tensor& y,
                                               const train::ReplicaStep& step) override {
    const int n = replicas_.size();
    // Global batches (every worker holds the same one and keeps its rows) or, with per-worker
    // inputs, this worker's own share.
    const Shards all =
        config_.per_worker_inputs ? Shards{} : split_batch(x, y, n * workers_, config_.owner);
    Shards shards = config_.per_worker_inputs ? split_batch(x, y, n, config_.owner) : Shards{};
    for (int r = 0; !config_.per_worker_inputs && r < n; ++r) {
      const size_t k =
          static_cast<size_t>(worker_) * static_cast<size_t>(n) + static_cast<size_t>(r);
      shards.x.push_back(all.x[k]);
      shards.y.push_back(all.y[k]);
    }
    if (!replicas_.ready()) create(shards);
    // Callbacks (ReduceLROnPlateau, LearningRateScheduler) change the rate of the primary
    // optimizer, the only one they see, between any two steps; the replicas' optimizers follow
    // it. A LearningRate is a number or a pointer to an immutable, shared schedule, so this copies
    // a double and a shared_ptr (no config, nothing allocated); a schedule then gives every
    // replica the same rate, as each counts the same iterations().
    for (size_t r = 1; r < optimizers_.size(); ++r) {
      optimizers_[r]->set_learning_rate(optimizers_[0]->learning_rate_option());
    }
    std::vector<train::ReplicaOutput> out(static_cast<size_t>(n));
    abort_.run(replicas_, [&](int r) {
      const auto i = static_cast<size_t>(r);
      if (reducers_.empty()) {
        out[i] = step(replicas_.network(r), replicas_.trainable(r), shards.x[i], shards.y[i]);
        return;
      }
      GradientReducer& reducer = *reducers_[i];
      nn::ReplicaContextGuard context(contexts_[i].get());  // synchronized BatchNormalization
      reducer.begin_step();
      try {
        out[i] = step(replicas_.network(r), replicas_.trainable(r), shards.x[i], shards.y[i]);
      } catch (...) {
        // Abort first: the others may be waiting in a layer's collective this replica never
        // reaches. Its own buckets then end at once; their (aborted) error is not the one to
        // report.
        abort_.fail(r);
        try {
          reducer.finish_step();
        } catch (...) {
        }
        throw;
      }
      reducer.finish_step();
    });
    check_gradients(replicas_, config_.owner);
    abort_.run(replicas_, [&](int r) {
      optimizers_[static_cast<size_t>(r)]->apply(replicas_.trainable(r));
      if (!comms_.empty()) average_state(r);
    });
    if (workers_ == 1) return out;
    return gather_outputs(out, all.y);
  }

  std::vector<train::ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                                const train::ReplicaForward& forward) override {
    // Inference stays inside the process: every worker holds the same weights and the same
    // batch, so each computes the same predictions without a collective.
    const int n = replicas_.size();
    if (!replicas_.ready() && x.defined() && x.ndim() >= 1 && x.size(0) >= n) {
      create(split_batch(x.narrow(0, 0, x.size(0) / n * n), Tensor(), n, config_.owner));
    }
    return replicas_.forward(x, y, forward);
  }

  void sync_replicas() override { replicas_.copy_from_primary(); }

 private:
  // Non-trainable float32 state (BatchNormalization's moving mean and variance, each replica
  // updated from its own share of the batch) becomes the mean over replicas, so every copy, and
  // the primary that predict and save see, holds the same values (tf.distribute's ON_READ/MEAN
  // aggregation). The moving mean then equals single-device training's; the moving variance is
  // the mean of per-replica variances (per-replica statistics, as TF by default). Synchronized
  // BatchNormalization's statistics are already the global batch's, equal on every replica.
  void average_state(int r) {
    comm::Communicator& c = *comms_[static_cast<size_t>(r)];
    for (const autograd::Variable& v : replicas_.non_trainable(r)) {
      if (v.dtype() != DType::float32 || !v.value().is_contiguous())
        continue;  // same on every replica
      const Tensor& t = v.value();
      c.all_reduce(t.data<float>(), t.numel(),
                   comm::ReduceOp::mean);  // full precision, never compressed
    }
  }

  void create(const Shards& shards) {
    replicas_.create(shards.x);
    if (workers_ > 1) {
      verify_same_model();
      broadcast_from_chief();
    }
    // Each replica's optimizer: the primary's class and options, built once (with its slots and
    // step count when the primary has trained already, e.g. a resumed model).
    for (int r = 1; r < replicas_.size(); ++r) {
      std::shared_ptr<optim::Optimizer> o = optimizers_[0]->fresh_copy();
      if (optimizers_[0]->iterations() > 0) o->load_state(optimizers_[0]->state());
      optimizers_.push_back(std::move(o));
    }
    if (!comms_.empty()) {
      const MirroredOptions& mo = config_.options;
      const ReducerOptions ro{.bucket_bytes = mo.bucket_bytes,
                              .first_bucket_bytes = mo.first_bucket_bytes,
                              .reduce_on = mo.reduce_on.value_or(automatic_reduce_on())};
      std::lock_guard<std::mutex> lock(config_.registry->mutex);
      for (int r = 0; r < replicas_.size(); ++r) {
        reducers_.push_back(std::make_shared<GradientReducer>(replicas_.trainable(r),
                                                              *comms_[static_cast<size_t>(r)], ro));
        config_.registry->live.push_back(reducers_.back());
      }
    }
  }

  // The gradient buckets all-reduce without a per-call check (worker_group.h): they match across
  // workers when the models do, which is checked here once, on a checked communicator. Each
  // worker's trainable variables as (dtype, shape) hashes; a worker whose model differs gets a
  // ValueError naming the first variable that differs, and so does every other worker.
  void verify_same_model() {
    comm::Communicator& c = *config_.workers->outputs();
    const auto& vars = replicas_.trainable(0);
    std::vector<uint64_t> mine;
    for (const autograd::Variable& v : vars) {
      uint64_t h = 1469598103934665603ull;  // FNV-1a over the dtype and the shape
      const auto mix = [&h](uint64_t x) {
        for (int b = 0; b < 8; ++b, x >>= 8) h = (h ^ (x & 0xff)) * 1099511628211ull;
      };
      mix(static_cast<uint64_t>(v.dtype()));
      for (int d = 0; d < v.value().ndim(); ++d) mix(static_cast<uint64_t>(v.value().size(d)));
      mine.push_back(h);
    }
    std::vector<float> counts(static_cast<size_t>(workers_));
    float count = static_cast<float>(mine.size());
    c.all_gather(&count, counts.data(), 1);
    for (int w = 0; w < workers_; ++w) {
      OSPREY_CHECK(counts[static_cast<size_t>(w)] == count,
                   "{}: worker {} built a model with {} trainable variables, worker {} one with "
                   "{}: every worker must "
                   "build the same model",
                   config_.owner, w, counts[static_cast<size_t>(w)], worker_, mine.size());
    }
    const int64_t words = static_cast<int64_t>(mine.size() * 2);  // a uint64 is two floats' bytes
    std::vector<float> all(static_cast<size_t>(words * workers_));
    c.all_gather(reinterpret_cast<const float*>(mine.data()), all.data(), words);
    for (int w = 0; w < workers_; ++w) {
      const char* theirs =
          reinterpret_cast<const char*>(all.data() + static_cast<size_t>(w * words));
      for (size_t i = 0; i < mine.size(); ++i) {
        uint64_t h = 0;
        std::memcpy(&h, theirs + i * sizeof(uint64_t), sizeof h);
        OSPREY_CHECK(h == mine[i],
                     "{}: trainable variable {} differs between worker {} and worker {} (here {} "
                     "{}{}): every worker "
                     "must build the same model",
                     config_.owner, i, w, worker_, vars[i].name(), dtype_name(vars[i].dtype()),
                     vars[i].value().shape().to_string());
      }
    }
  }

  // Every worker starts from the chief's weights (its own initialization or loaded state), as
  // tf.distribute's multi-worker strategy does: the primary's variables are broadcast from worker
  // 0, then copied into this worker's replicas.
  void broadcast_from_chief() {
    comm::Communicator& c = *config_.workers->outputs();
    for (const autograd::Variable& v : replicas_.network(0).variables()) {
      Tensor t = v.value();
      OSPREY_ASSERT(t.is_contiguous(), "variable {} is not contiguous", v.name());
      const int64_t words = float_words(t);
      words_.assign(static_cast<size_t>(words), 0.0f);
      std::memcpy(words_.data(), t.raw_data(), t.nbytes());
      c.broadcast(words_.data(), words, 0);
      std::memcpy(t.raw_data(), words_.data(), t.nbytes());
    }
    replicas_.copy_from_primary();
  }

  // Every replica's loss and predictions, from every worker, in global replica order: one
  // all-gather of [loss (a double's two words), y_pred's bytes, y's bytes] per local replica.
  // Targets travel only with per-worker inputs; otherwise every worker holds the global batch's
  // (global_y). Workers whose shares differ in size fail in the all-gather's count check.
  std::vector<train::ReplicaOutput> gather_outputs(const std::vector<train::ReplicaOutput>& local,
                                                   const std::vector<Tensor>& global_y) {
    const int n = replicas_.size();
    const Tensor& p0 = local[0].y_pred;
    const Tensor& y0 = local[0].y;
    const int64_t pred_words = p0.defined() ? float_words(p0) : 0;
    const int64_t y_words = global_y.empty() && y0.defined() ? float_words(y0) : 0;
    // The predictions' mask (a sequence model's padded steps), as 0/1 floats after y.
    const Tensor& m0 = local[0].mask;
    const int64_t mask_words = pred_words > 0 && m0.defined() ? m0.numel() : 0;
    const int64_t per = 2 + pred_words + y_words + mask_words;
    words_.assign(static_cast<size_t>(per * n), 0.0f);
    for (int r = 0; r < n; ++r) {
      const train::ReplicaOutput& o = local[static_cast<size_t>(r)];
      float* slot = words_.data() + static_cast<size_t>(per * r);
      std::memcpy(slot, &o.loss, sizeof(double));
      if (pred_words == 0) continue;
      OSPREY_CHECK(
          o.y_pred.defined() && o.y_pred.shape() == p0.shape() && o.y_pred.dtype() == p0.dtype(),
          "{}: replicas returned predictions of different shapes or dtypes", config_.owner);
      const Tensor c = o.y_pred.contiguous();
      std::memcpy(slot + 2, c.raw_data(), c.nbytes());
      if (mask_words > 0) {
        OSPREY_CHECK(o.mask.defined() && o.mask.shape() == m0.shape(),
                     "{}: replicas returned predictions with masks of different shapes",
                     config_.owner);
        const Tensor cm = o.mask.to(DType::float32).contiguous();
        std::memcpy(slot + 2 + pred_words + y_words, cm.raw_data(), cm.nbytes());
      }
      if (y_words == 0) continue;
      OSPREY_CHECK(o.y.shape() == y0.shape() && o.y.dtype() == y0.dtype(),
                   "{}: replicas returned targets of different shapes or dtypes", config_.owner);
      const Tensor cy = o.y.contiguous();
      std::memcpy(slot + 2 + pred_words, cy.raw_data(), cy.nbytes());
    }
    gathered_.resize(static_cast<size_t>(per * n * workers_));
    config_.workers->outputs()->all_gather(words_.data(), gathered_.data(), per * n);
    std::vector<train::ReplicaOutput> out(static_cast<size_t>(n * workers_));
    for (int g = 0; g < n * workers_; ++g) {
      train::ReplicaOutput& o = out[static_cast<size_t>(g)];
      const float* slot = gathered_.data() + static_cast<size_t>(per * g);
      std::memcpy(&o.loss, slot, sizeof(double));
      if (g / n == worker_) {
        o.y_pred = local[static_cast<size_t>(g % n)].y_pred;
        o.y = local[static_cast<size_t>(g % n)].y;
        o.mask = local[static_cast<size_t>(g % n)].mask;
        continue;
      }
      if (pred_words > 0) {
        o.y_pred = Tensor::empty(p0.shape(), {.dtype = p0.dtype()});
        std::memcpy(o.y_pred.raw_data(), slot + 2, p0.nbytes());
      }
      if (mask_words > 0) {
        Tensor m = Tensor::empty(m0.shape(), {.dtype = DType::float32});
        std::memcpy(m.raw_data(), slot + 2 + pred_words + y_words, m.nbytes());
        o.mask = m.to(DType::boolean);
      }
      if (!global_y.empty()) {
        o.y = global_y[static_cast<size_t>(g)];
      } else if (y_words > 0) {
        o.y = Tensor::empty(y0.shape(), {.dtype = y0.dtype()});
        std::memcpy(o.y.raw_data(), slot + 2 + pred_words, y0.nbytes());
      }
    }
    return out;
  }

  // A communication thread only hides the reduction when it has a core the replicas' kernels do
  // not use; otherwise it takes one from backward and adds a hand-off per bucket, so the replica
  // thread reduces each bucket itself.
  ReduceOn automatic_reduce_on() const {
    const int n = replicas_.size();
    const int t = config_.options.threads_per_replica;
    const int share = t > 0 ? t : std::max(1, num_threads() / n);
    return n * share < num_threads() ? ReduceOn::communication_thread : ReduceOn::backward_thread;
  }

  MirroredExecutorConfig config_;
  int workers_, worker_;
  Replicas replicas_;
  comm::InProcessGroup group_;        // gradients and state averaging
  comm::InProcessGroup layer_group_;  // layers' collectives (synchronized BatchNormalization)
  // Per local replica, over the groups above (and across workers from replica 0); empty for a
  // single replica of a single worker, where nothing is reduced.
  std::vector<std::unique_ptr<comm::HierarchicalCommunicator>> comms_, layer_comms_;
  std::vector<std::unique_ptr<CommunicatorReplicaContext>> contexts_;
  CollectiveAbort abort_{{&group_, &layer_group_}};
  std::vector<std::shared_ptr<optim::Optimizer>> optimizers_;  // [0] is the compiled one
  std::vector<float> words_, gathered_;  // output and weight staging, grown once
  // Destroyed before the communicators (declared after them): their threads use them.
  std::vector<std::shared_ptr<GradientReducer>> reducers_;
};

}  // namespace

std::unique_ptr<train::StepExecutor> make_mirrored_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer,
    MirroredExecutorConfig config) {
  return std::make_unique<MirroredExecutor>(std::move(network), std::move(optimizer),
                                            std::move(config));
}

}  // namespace osprey::distribute
