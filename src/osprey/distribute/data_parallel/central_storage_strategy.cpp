#include "osprey/distribute/data_parallel/central_storage_strategy.h"

#include "osprey/core/error.h"
#include "osprey/distribute/batch_split.h"
#include "osprey/distribute/data_parallel/communicator_replica_context.h"
#include "osprey/distribute/data_parallel/replicas.h"
#include "osprey/distribute/devices.h"

namespace osprey::distribute {

namespace {

class CentralStorageExecutor final : public train::StepExecutor {
 public:
  CentralStorageExecutor(std::shared_ptr<models::Network> network,
                         std::shared_ptr<optim::Optimizer> optimizer, int n)
      : replicas_(std::move(network), n, "CentralStorageStrategy"),
        contexts_(n),
        optimizer_(std::move(optimizer)) {}

  std::vector<train::ReplicaOutput> train_step(const Tensor& x, const Tensor& y,
                                               const train::ReplicaStep& step) override {
    const Shards shards = split_batch(x, y, replicas_.size(), "CentralStorageStrategy");
    if (!replicas_.ready()) replicas_.create(shards.x);
    replicas_.copy_from_primary();  // replicas read the host's variables
    std::vector<train::ReplicaOutput> out(static_cast<size_t>(replicas_.size()));
    abort_.run(replicas_, [&](int r) {
      const auto i = static_cast<size_t>(r);
      nn::ReplicaContextGuard context(contexts_.get(r));  // synchronized BatchNormalization
      out[i] = step(replicas_.network(r), replicas_.trainable(r), shards.x[i], shards.y[i]);
    });
    reduce_to_host();
    optimizer_->apply(replicas_.trainable(0));
    average_state_to_host();
    return out;
  }

  std::vector<train::ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                                const train::ReplicaForward& forward) override {
    replicas_.copy_from_primary();
    return replicas_.forward(x, y, forward);
  }

 private:
  // The host's (replica 0's) gradient becomes the mean over replicas, summed in replica order.
  void reduce_to_host() {
    const int n = replicas_.size();
    if (n == 1) return;
    const auto& host = replicas_.trainable(0);
    const auto fn = static_cast<float>(n);
    for (size_t i = 0; i < host.size(); ++i) {
      if (!host[i].has_grad()) continue;
      const Tensor& g0 = host[i].grad();
      OSPREY_CHECK(g0.dtype() == DType::float32 && g0.is_contiguous(),
                   "CentralStorageStrategy: the gradient of variable {} must be contiguous float32 "
                   "to be reduced",
                   host[i].name());
      float* acc = g0.data<float>();
      const int64_t len = g0.numel();
      for (int r = 1; r < n; ++r) {
        const autograd::Variable& v = replicas_.trainable(r)[i];
        OSPREY_CHECK(
            v.has_grad() && v.grad().dtype() == DType::float32 && v.grad().is_contiguous(),
            "CentralStorageStrategy: variable {} has no contiguous float32 gradient on replica {}",
            v.name(), r);
        const float* g = v.grad().data<float>();
        for (int64_t k = 0; k < len; ++k) acc[k] += g[k];
      }
      for (int64_t k = 0; k < len; ++k) acc[k] /= fn;
    }
  }

  // Non-trainable float32 state (BatchNormalization's moving statistics, updated by each
  // replica from its share) becomes the mean over replicas on the host, as MirroredStrategy.
  void average_state_to_host() {
    const int n = replicas_.size();
    if (n == 1) return;
    const auto& host = replicas_.non_trainable(0);
    const auto fn = static_cast<float>(n);
    for (size_t i = 0; i < host.size(); ++i) {
      const Tensor& h = host[i].value();
      if (h.dtype() != DType::float32 || !h.is_contiguous()) continue;
      float* acc = h.data<float>();
      for (int r = 1; r < n; ++r) {
        const float* v = replicas_.non_trainable(r)[i].value().data<float>();
        for (int64_t k = 0; k < h.numel(); ++k) acc[k] += v[k];
      }
      for (int64_t k = 0; k < h.numel(); ++k) acc[k] /= fn;
    }
  }

  Replicas replicas_;
  InProcessReplicaContexts contexts_;
  CollectiveAbort abort_{{&contexts_.group()}};
  std::shared_ptr<optim::Optimizer> optimizer_;
};

}  // namespace

CentralStorageStrategy::CentralStorageStrategy(const std::vector<std::string>& devices)
    : StrategyBase(resolve_devices(devices, "CentralStorageStrategy")) {}

std::unique_ptr<train::StepExecutor> CentralStorageStrategy::make_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer) const {
  return std::make_unique<CentralStorageExecutor>(std::move(network), std::move(optimizer),
                                                  num_replicas_in_sync());
}

}  // namespace osprey::distribute
