#include "osprey/distribute/model_parallel_executor.h"

#include <map>

#include "osprey/autograd/grad_mode.h"
#include "osprey/comm/in_process.h"
#include "osprey/core/error.h"
#include "osprey/distribute/batch_split.h"
#include "osprey/distribute/communicator_replica_context.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/seed_states.h"
#include "osprey/optim/factory.h"

namespace osprey::distribute {

namespace {

using autograd::Variable;

// The view of `full` that one device holds.
Tensor slice_of(const Tensor& full, const ShardSlice& s) {
  Tensor t = full;
  for (size_t d = 0; d < s.start.size(); ++d)
    t = t.narrow(static_cast<int>(d), s.start[d], s.length[d]);
  return t;
}

class ModelParallelExecutor final : public train::StepExecutor {
 public:
  ModelParallelExecutor(std::shared_ptr<models::Network> network,
                        std::shared_ptr<optim::Optimizer> optimizer, const ModelParallel& strategy)
      : strategy_(strategy),
        primary_(std::move(network)),
        optimizer_(std::move(optimizer)),
        mesh_(strategy.device_mesh()),
        data_size_(strategy.num_replicas_in_sync()),
        model_size_(static_cast<int>(mesh_.size()) / data_size_),
        workers_(static_cast<int>(mesh_.size()), strategy.options().threads_per_device) {
    for (int d = 0; d < data_size_; ++d)
      model_groups_.push_back(std::make_unique<comm::InProcessGroup>(model_size_));
    for (int m = 0; m < model_size_; ++m)
      data_groups_.push_back(std::make_unique<comm::InProcessGroup>(data_size_));
    std::vector<comm::InProcessGroup*> all;
    for (auto& g : model_groups_) all.push_back(g.get());
    for (auto& g : data_groups_) all.push_back(g.get());
    abort_ = std::make_unique<CollectiveAbort>(all);
    const int batch_axis = mesh_.axis_index(strategy.batch_dim_name());
    const int model_axis = mesh_.axis_index(strategy.model_axis());
    for (int64_t i = 0; i < mesh_.size(); ++i) {
      const std::vector<int64_t> c = mesh_.coordinates(i);
      Device dev;
      dev.data = batch_axis >= 0 ? static_cast<int>(c[static_cast<size_t>(batch_axis)]) : 0;
      dev.model = model_axis >= 0 ? static_cast<int>(c[static_cast<size_t>(model_axis)]) : 0;
      devices_.push_back(std::move(dev));
    }
  }

  std::vector<train::ReplicaOutput> train_step(const Tensor& x, const Tensor& y,
                                               const train::ReplicaStep& step) override {
    const Shards shards = split_batch(x, y, data_size_, "ModelParallel");
    if (devices_[0].net == nullptr) create(shards.x);
    for (Device& dev : devices_)
      dev.optimizer->set_learning_rate(optimizer_->learning_rate_option());
    std::vector<train::ReplicaOutput> out(devices_.size());
    abort_->run(workers_, [&](int i) {
      Device& dev = devices_[static_cast<size_t>(i)];
      const auto d = static_cast<size_t>(dev.data);
      out[static_cast<size_t>(i)] = step(*dev.net, dev.trainable, shards.x[d], shards.y[d]);
    });
    check_gradients();
    abort_->run(workers_, [&](int i) {
      Device& dev = devices_[static_cast<size_t>(i)];
      if (data_size_ > 1) {
        comm::Communicator& c = data_groups_[static_cast<size_t>(dev.model)]->rank(dev.data);
        for (Variable& v : dev.trainable) {
          if (!v.has_grad()) continue;
          Tensor g = v.grad();
          if (!g.is_contiguous() || g.dtype() != DType::float32) {
            g = g.to(DType::float32).clone();
            v.set_grad(g);
          }
          c.all_reduce(g, comm::ReduceOp::mean);
        }
      }
      dev.optimizer->apply(dev.trainable);
    });
    return model_rank_zero(out);
  }

  std::vector<train::ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                                const train::ReplicaForward& forward) override {
    OSPREY_CHECK(x.defined() && x.ndim() >= 1,
                 "ModelParallel: the batch must be a tensor with a batch axis");
    const int64_t b = x.size(0);
    if (devices_[0].net == nullptr && b < data_size_) return {forward(*primary_, x, y)};
    // Data coordinate d gets rows [start(d), start(d + 1)): the first b % D one row more.
    const int64_t base = b / data_size_, extra = b % data_size_;
    auto start = [&](int d) { return d * base + std::min<int64_t>(d, extra); };
    std::vector<Tensor> xs, ys;
    for (int d = 0; d < data_size_; ++d) {
      const int64_t len = start(d + 1) - start(d);
      xs.push_back(len > 0 ? x.narrow(0, start(d), len) : Tensor());
      ys.push_back(len > 0 && y.defined() ? y.narrow(0, start(d), len) : Tensor());
    }
    if (devices_[0].net == nullptr) create(xs);
    std::vector<train::ReplicaOutput> out(devices_.size());
    abort_->run(workers_, [&](int i) {
      Device& dev = devices_[static_cast<size_t>(i)];
      const auto d = static_cast<size_t>(dev.data);
      if (xs[d].defined()) out[static_cast<size_t>(i)] = forward(*dev.net, xs[d], ys[d]);
    });
    std::vector<train::ReplicaOutput> kept;
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].model == 0 && xs[static_cast<size_t>(devices_[i].data)].defined())
        kept.push_back(std::move(out[i]));
    }
    return kept;
  }

  // Every device takes its shards of the host copy's variables (weights set or loaded between
  // fits reach the devices).
  void sync_replicas() override {
    if (devices_[0].net == nullptr) return;
    const nn::SeedStates seeds = nn::seed_states(*primary_);
    for (Device& dev : devices_) {
      nn::set_seed_states(*dev.net, seeds);
      for (const Shard& s : dev.shards) {
        Tensor dst = s.local.value();
        dst.copy_(slice_of(s.host.value(), s.slice));
      }
      scatter_optimizer_state(dev);
    }
  }

  std::vector<train::ReplicaOutput> finish_epoch() override {
    gather_to_host();
    return {};
  }
  void end_fit(const std::string& /*error*/) override { gather_to_host(); }

 private:
  struct Shard {
    Variable local, host;
    ShardSlice slice;
  };
  struct Device {
    int data = 0, model = 0;
    std::shared_ptr<models::Network> net;
    std::vector<Variable> trainable;
    std::vector<Shard> shards;  // every variable of net
    std::shared_ptr<optim::Optimizer> optimizer;
  };

  void create(const std::vector<Tensor>& xs) {
    autograd::NoGradGuard no_grad;
    if (primary_->variables().empty()) (*primary_)(Variable(xs[0]), false);
    const std::vector<LayerShardPlan> plans = strategy_.plan(*primary_);
    std::map<std::string, Variable> host;
    for (const Variable& v : primary_->variables()) host.emplace(v.name(), v);
    models::register_model_classes();
    const nlohmann::json config = primary_->get_config();
    const nlohmann::json opt_config = optim::serialize(*optimizer_);
    const nn::SeedStates seeds = nn::seed_states(*primary_);
    std::vector<Device> built = devices_;
    for (size_t i = 0; i < built.size(); ++i) {
      Device& dev = built[i];
      auto net = std::dynamic_pointer_cast<models::Network>(
          nn::layer_from_config(primary_->class_name(), config));
      OSPREY_CHECK(net != nullptr,
                   "ModelParallel: the model {} ({}) cannot be placed on the mesh: its config "
                   "does not rebuild a model",
                   primary_->name(), primary_->class_name());
      (*net)(Variable(xs[static_cast<size_t>(dev.data)]), false);
      comm::Communicator& group = model_groups_[static_cast<size_t>(dev.data)]->rank(dev.model);
      for (const LayerShardPlan& p : plans) {
        const std::shared_ptr<nn::Layer> original = net->get_layer(p.layer);
        net->replace_sublayer(p.layer, make_sharded_layer(*original, p.plan, group));
      }
      nn::set_seed_states(*net, seeds);
      for (const Variable& v : net->variables()) {
        auto it = host.find(v.name());
        OSPREY_ASSERT(it != host.end(), "device variable {} has no host variable", v.name());
        const Variable& h = it->second;
        const TensorLayout layout = strategy_.layout_for(h.name(), h.shape());
        Shard s{v, h, shard_slice(h.name(), h.shape(), layout, mesh_, static_cast<int64_t>(i))};
        OSPREY_ASSERT(Shape(s.slice.length) == v.shape(),
                      "device {} holds {} of shape {}, its layout {} asks for {}", i, v.name(),
                      v.shape().to_string(), layout.to_string(), Shape(s.slice.length).to_string());
        Tensor dst = v.value();
        dst.copy_(slice_of(h.value(), s.slice));
        dev.shards.push_back(std::move(s));
      }
      dev.trainable = net->trainable_variables();
      dev.net = std::move(net);
      dev.optimizer = optim::deserialize(opt_config);
      scatter_optimizer_state(dev);
    }
    devices_ = std::move(built);
  }

  // The shard of `key` ("optimizer/<variable path>/<slot>") on `dev`, or null for iterations.
  static const Shard* shard_of(const Device& dev, const std::string& key) {
    const size_t head = key.find('/'), tail = key.rfind('/');
    if (head == std::string::npos || tail <= head) return nullptr;
    const std::string path = key.substr(head + 1, tail - head - 1);
    for (const Shard& s : dev.shards)
      if (s.host.name() == path) return &s;
    return nullptr;
  }

  // A resumed (or loaded) optimizer's state reaches the devices: each takes its slices of every
  // slot, so its slots are sharded like its variables.
  void scatter_optimizer_state(Device& dev) const {
    if (optimizer_->iterations() == 0) return;
    std::vector<std::pair<std::string, Tensor>> mine;
    for (const auto& [key, tensor] : optimizer_->state()) {
      const Shard* s = shard_of(dev, key);
      mine.emplace_back(key, s != nullptr ? slice_of(tensor, s->slice).contiguous() : tensor);
    }
    dev.optimizer->load_state(mine);
  }

  // The host optimizer takes the devices' slots, whole, and their iteration count, so save()
  // writes the state an exact resume needs.
  void gather_optimizer_state() const {
    std::map<std::string, Tensor> whole;
    std::vector<std::string> order;
    for (const Device& dev : devices_) {
      if (dev.data != 0) continue;
      for (const auto& [key, tensor] : dev.optimizer->state()) {
        const Shard* s = shard_of(dev, key);
        auto [it, fresh] = whole.try_emplace(key);
        if (fresh) {
          order.push_back(key);
          it->second =
              s != nullptr ? Tensor::empty(s->host.shape(), {tensor.dtype()}) : tensor.clone();
        }
        if (s == nullptr) continue;
        Tensor dst = slice_of(it->second, s->slice);
        dst.copy_(tensor);
      }
    }
    std::vector<std::pair<std::string, Tensor>> state;
    state.reserve(order.size());
    for (const std::string& k : order) state.emplace_back(k, whole[k]);
    optimizer_->load_state(state);
  }

  // A variable with a gradient on one device of a data group but none on another would make their
  // all-reduces disagree.
  void check_gradients() const {
    for (const Device& a : devices_) {
      for (const Device& b : devices_) {
        if (b.model != a.model || b.data <= a.data) continue;
        for (size_t k = 0; k < a.trainable.size(); ++k) {
          OSPREY_CHECK(a.trainable[k].has_grad() == b.trainable[k].has_grad(),
                       "ModelParallel: variable {} has a gradient on batch shard {} but not on "
                       "batch shard {}",
                       a.trainable[k].name(), a.trainable[k].has_grad() ? a.data : b.data,
                       a.trainable[k].has_grad() ? b.data : a.data);
        }
      }
    }
  }

  // The outputs of the devices at model coordinate 0, in batch order: every row once.
  std::vector<train::ReplicaOutput> model_rank_zero(std::vector<train::ReplicaOutput>& out) const {
    std::vector<train::ReplicaOutput> kept(static_cast<size_t>(data_size_));
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].model == 0) kept[static_cast<size_t>(devices_[i].data)] = std::move(out[i]);
    }
    return kept;
  }

  // The host copy takes every device's shards (those of batch coordinate 0: the others hold the
  // same values).
  void gather_to_host() {
    if (devices_[0].net == nullptr) return;
    for (const Device& dev : devices_) {
      if (dev.data != 0) continue;
      for (const Shard& s : dev.shards) {
        Tensor dst = slice_of(s.host.value(), s.slice);
        dst.copy_(s.local.value());
      }
    }
    gather_optimizer_state();
  }

  const ModelParallel strategy_;
  std::shared_ptr<models::Network> primary_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  DeviceMesh mesh_;
  int data_size_, model_size_;
  ReplicaWorkers workers_;
  std::vector<std::unique_ptr<comm::InProcessGroup>> model_groups_, data_groups_;
  std::unique_ptr<CollectiveAbort> abort_;
  std::vector<Device> devices_;
};

}  // namespace

std::unique_ptr<train::StepExecutor> make_model_parallel_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer,
    const ModelParallel& strategy) {
  return std::make_unique<ModelParallelExecutor>(std::move(network), std::move(optimizer),
                                                 strategy);
}

}  // namespace osprey::distribute
