#include "osprey/train/strategy.h"

#include <atomic>
#include <mutex>

#include "osprey/autograd/creation_scope.h"

namespace osprey::train {

namespace {

thread_local std::shared_ptr<const Strategy> g_current;
thread_local std::string g_current_label;
std::mutex g_global_mutex;
std::shared_ptr<const Strategy> g_global;
std::atomic<uint64_t> g_next_id{1};  // Strategy::id()

class SingleDeviceExecutor final : public StepExecutor {
 public:
  SingleDeviceExecutor(std::shared_ptr<models::Network> network,
                       std::shared_ptr<optim::Optimizer> optimizer)
      : network_(std::move(network)), optimizer_(std::move(optimizer)) {}

  std::vector<ReplicaOutput> train_step(const Tensor& x, const Tensor& y,
                                        const ReplicaStep& step) override {
    if (trainable_.empty()) trainable_ = network_->trainable_variables();
    std::vector<ReplicaOutput> out;
    out.push_back(step(*network_, trainable_, x, y));
    if (trainable_.empty()) trainable_ = network_->trainable_variables();  // built by this call
    optimizer_->apply(trainable_);
    return out;
  }

  std::vector<ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                         const ReplicaForward& forward) override {
    std::vector<ReplicaOutput> out;
    out.push_back(forward(*network_, x, y));
    return out;
  }

 private:
  std::shared_ptr<models::Network> network_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  std::vector<autograd::Variable> trainable_;
};

class SingleDevice final : public Strategy {
 public:
  std::string name() const override { return "SingleDevice"; }
  int num_replicas_in_sync() const override { return 1; }
  std::unique_ptr<StepExecutor> make_executor(
      std::shared_ptr<models::Network> network,
      std::shared_ptr<optim::Optimizer> optimizer) const override {
    return std::make_unique<SingleDeviceExecutor>(std::move(network), std::move(optimizer));
  }
};

}  // namespace

std::shared_ptr<const Strategy> single_device_strategy() {
  static const std::shared_ptr<const Strategy> s = std::make_shared<SingleDevice>();
  return s;
}

Strategy::Strategy() noexcept : id_(g_next_id.fetch_add(1, std::memory_order_relaxed)) {}

std::string Strategy::scope_label() const { return describe() + " #" + std::to_string(id_); }

const std::string& scope_strategy_label() noexcept { return g_current_label; }

std::shared_ptr<const Strategy> current_strategy() {
  return g_current ? g_current : global_strategy();
}

void set_global_strategy(std::shared_ptr<const Strategy> strategy) {
  std::lock_guard<std::mutex> lock(g_global_mutex);
  g_global = std::move(strategy);
}

std::shared_ptr<const Strategy> global_strategy() {
  std::lock_guard<std::mutex> lock(g_global_mutex);
  return g_global;
}

std::shared_ptr<const Strategy> exchange_current_strategy(
    std::shared_ptr<const Strategy> strategy) {
  // Only the thread's own scope: the global default is not "previous" to restore.
  std::swap(g_current, strategy);
  g_current_label = g_current ? g_current->scope_label() : std::string();
  autograd::exchange_creation_scope(g_current ? &g_current_label : nullptr);
  return strategy;
}

}  // namespace osprey::train
