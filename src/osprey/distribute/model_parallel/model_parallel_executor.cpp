#include "osprey/distribute/model_parallel/model_parallel_executor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

#include "osprey/autograd/grad_mode.h"
#include "osprey/comm/in_process.h"
#include "osprey/core/error.h"
#include "osprey/distribute/batch_split.h"
#include "osprey/distribute/data_parallel/communicator_replica_context.h"
#include "osprey/distribute/data_parallel/replicas.h"
#include "osprey/distribute/model_parallel/tensor_broadcast.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/seed_states.h"

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
        group_(strategy.worker_group()),
        workers_count_(group_ ? group_->size() : 1),
        worker_(group_ ? group_->rank() : 0),
        local_(static_cast<int>(mesh_.size()) / workers_count_),
        data_size_(strategy.num_replicas_in_sync()),
        model_size_(static_cast<int>(mesh_.size()) / data_size_),
        workers_(local_, strategy.options().threads_per_device) {
    const int batch_axis = mesh_.axis_index(strategy.batch_dim_name());
    const int model_axis = mesh_.axis_index(strategy.model_axis());
    std::vector<int> data_of(static_cast<size_t>(mesh_.size())),
        model_of(static_cast<size_t>(mesh_.size()));
    for (int64_t g = 0; g < mesh_.size(); ++g) {
      const std::vector<int64_t> c = mesh_.coordinates(g);
      data_of[g] = batch_axis >= 0 ? static_cast<int>(c[static_cast<size_t>(batch_axis)]) : 0;
      model_of[g] = model_axis >= 0 ? static_cast<int>(c[static_cast<size_t>(model_axis)]) : 0;
    }
    // The members of each group, and how each reaches the others: an in-process group when all
    // are here, else a communicator over every worker, one per local position and axis.
    std::map<std::pair<char, int>, std::vector<int>> members;  // ('m', d) / ('d', m) -> devices
    for (int g = 0; g < static_cast<int>(mesh_.size()); ++g) {
      members[{'m', data_of[g]}].push_back(g);
      members[{'d', model_of[g]}].push_back(g);
    }
    std::set<std::pair<char, int>> crossing;  // (axis kind, local position)
    for (const auto& [key, devs] : members) {
      std::set<int> owners;
      for (int g : devs) owners.insert(g / local_);
      if (owners.size() == 1) continue;
      const std::string axis = key.first == 'm' ? strategy.model_axis() : strategy.batch_dim_name();
      bool one_each = static_cast<int>(owners.size()) == workers_count_ &&
                      static_cast<int>(devs.size()) == workers_count_;
      for (int g : devs) one_each = one_each && g % local_ == devs[0] % local_;
      OSPREY_CHECK(one_each,
                   "ModelParallel: mesh axis '{}' groups devices {} held by workers {} of {}; a "
                   "group must stay inside one worker or take one device from each worker at the "
                   "same position (make the axis that crosses workers the first one of the mesh)",
                   axis, fmt::join(devs, ", "), fmt::join(owners, ", "), workers_count_);
      crossing.insert({key.first, devs[0] % local_});
    }
    // Made in the same order on every worker (crossing is the same everywhere).
    for (const auto& [kind, position] : crossing)
      cross_[{kind, position}] = group_->make_communicator(
          fmt::format("mesh_{}_{}", kind == 'm' ? "model" : "data", position));
    std::vector<comm::InProcessGroup*> groups;
    for (const auto& [key, devs] : members) {
      if (devs[0] / local_ != worker_ || devs.back() / local_ != worker_) continue;
      local_groups_[key] = std::make_unique<comm::InProcessGroup>(static_cast<int>(devs.size()));
      groups.push_back(local_groups_[key].get());
    }
    abort_ = std::make_unique<CollectiveAbort>(groups);
    for (int j = 0; j < local_; ++j) {
      const int g = worker_ * local_ + j;
      Device dev;
      dev.global = g;
      dev.data = data_of[g];
      dev.model = model_of[g];
      dev.model_comm = communicator('m', dev.data, dev.model, j);
      dev.data_comm = communicator('d', dev.model, dev.data, j);
      devices_.push_back(std::move(dev));
    }
    for (int g = static_cast<int>(mesh_.size()); g-- > 0;)
      if (model_of[g] == 0) first_of_data_[data_of[g]] = g;
    for (int g = 0; g < static_cast<int>(mesh_.size()); ++g)
      if (data_of[g] == 0) batch_zero_.push_back(g);
  }

  std::vector<train::ReplicaOutput> train_step(const Tensor& x, const Tensor& y,
                                               const train::ReplicaStep& step) override {
    const Shards shards = split_batch(x, y, data_size_, "ModelParallel");
    if (devices_[0].net == nullptr) create(shards.x);
    // Callbacks change the compiled optimizer's rate between steps; every device's follows it (a
    // double and a shared_ptr copied, as in mirrored_executor.cpp).
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
        for (Variable& v : dev.trainable) {
          if (!v.has_grad()) continue;
          Tensor g = v.grad();
          if (!g.is_contiguous() || g.dtype() != DType::float32) {
            g = g.to(DType::float32).clone();
            v.set_grad(g);
          }
          dev.data_comm->all_reduce(g, comm::ReduceOp::mean);
        }
      }
      dev.optimizer->apply(dev.trainable);
    });
    return outputs_in_batch_order(out, shards.y, std::vector<bool>(data_size_, true));
  }

  std::vector<train::ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                                const train::ReplicaForward& forward) override {
    OSPREY_CHECK(x.defined() && x.ndim() >= 1,
                 "ModelParallel: the batch must be a tensor with a batch axis");
    const int64_t b = x.size(0);
    // Too few rows for the mesh before it exists: the host copy, whole, on every worker.
    if (devices_[0].net == nullptr && b < data_size_) return {forward(*primary_, x, y)};
    // Data coordinate d gets rows [start(d), start(d + 1)): the first b % D one row more.
    const Shards shares = split_batch_unevenly(x, y, data_size_);
    const std::vector<Tensor>& xs = shares.x;
    const std::vector<Tensor>& ys = shares.y;
    if (devices_[0].net == nullptr) create(xs);
    std::vector<train::ReplicaOutput> out(devices_.size());
    abort_->run(workers_, [&](int i) {
      Device& dev = devices_[static_cast<size_t>(i)];
      const auto d = static_cast<size_t>(dev.data);
      if (xs[d].defined()) out[static_cast<size_t>(i)] = forward(*dev.net, xs[d], ys[d]);
    });
    std::vector<bool> present;
    present.reserve(xs.size());
    for (const Tensor& t : xs) present.push_back(t.defined());
    std::vector<train::ReplicaOutput> all = outputs_in_batch_order(out, ys, present);
    std::vector<train::ReplicaOutput> kept;
    for (size_t d = 0; d < all.size(); ++d)
      if (xs[d].defined()) kept.push_back(std::move(all[d]));
    return kept;
  }

  // Every device takes its shards of the host copy's variables (weights set or loaded between
  // fits reach the devices), and of the optimizer's slots.
  void sync_replicas() override {
    if (devices_[0].net == nullptr) return;
    const nn::SeedStates seeds = nn::seed_states(*primary_);
    for (Device& dev : devices_) {
      nn::set_seed_states(*dev.net, seeds);
      for (const Shard& s : dev.shards) assign_in_place(s.local, slice_of(s.host.value(), s.slice));
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
    int global = 0, data = 0, model = 0;
    comm::Communicator* model_comm = nullptr;
    comm::Communicator* data_comm = nullptr;
    std::shared_ptr<models::Network> net;
    std::vector<Variable> trainable;
    std::vector<Shard> shards;  // every variable of net
    std::shared_ptr<optim::Optimizer> optimizer;
  };

  // The communicator of the group `kind` ('m': the model group of batch coordinate `key`; 'd':
  // the data group of model coordinate `key`) for the device at rank `rank` in it.
  comm::Communicator* communicator(char kind, int key, int rank, int position) {
    auto local = local_groups_.find({kind, key});
    if (local != local_groups_.end()) return &local->second->rank(rank);
    return cross_.at({kind, position}).get();
  }

  comm::Communicator* outputs() const { return group_ ? group_->outputs() : nullptr; }
  int owner(int global) const { return global / local_; }

  void create(const std::vector<Tensor>& xs) {
    autograd::NoGradGuard no_grad;
    if (primary_->variables().empty()) (*primary_)(Variable(xs[0]), false);
    if (outputs() != nullptr) {
      // Every worker starts from the chief's weights.
      for (const Variable& v : primary_->variables())
        assign_in_place(v, broadcast_tensor(*outputs(), v.value(), 0));
    }
    const std::vector<LayerShardPlan> plans = strategy_.plan(*primary_);
    std::map<std::string, Variable> host;
    for (const Variable& v : primary_->variables()) host.emplace(v.name(), v);
    models::register_model_classes();
    const nlohmann::json config = primary_->get_config();
    const nn::SeedStates seeds = nn::seed_states(*primary_);
    std::vector<Device> built = devices_;
    for (Device& dev : built) {
      auto net = std::dynamic_pointer_cast<models::Network>(
          nn::layer_from_config(primary_->class_name(), config));
      OSPREY_CHECK(net != nullptr,
                   "ModelParallel: the model {} ({}) cannot be placed on the mesh: its config "
                   "does not rebuild a model",
                   primary_->name(), primary_->class_name());
      (*net)(Variable(xs[static_cast<size_t>(dev.data)]), false);
      for (const LayerShardPlan& p : plans) {
        const std::shared_ptr<nn::Layer> original = net->get_layer(p.layer);
        net->replace_sublayer(p.layer, make_sharded_layer(*original, p.plan, *dev.model_comm));
      }
      nn::set_seed_states(*net, seeds);
      for (const Variable& v : net->variables()) {
        auto it = host.find(v.name());
        OSPREY_ASSERT(it != host.end(), "device variable {} has no host variable", v.name());
        const Variable& h = it->second;
        Shard s{v, h, slice(h, dev.global)};
        OSPREY_ASSERT(Shape(s.slice.length) == v.shape(),
                      "device {} holds {} of shape {}, its layout asks for {}", dev.global,
                      v.name(), v.shape().to_string(), Shape(s.slice.length).to_string());
        assign_in_place(v, slice_of(h.value(), s.slice));
        dev.shards.push_back(std::move(s));
      }
      dev.trainable = net->trainable_variables();
      dev.net = std::move(net);
      dev.optimizer = optimizer_->fresh_copy();  // the primary's class and options, built once
      scatter_optimizer_state(dev);
    }
    devices_ = std::move(built);
  }

  ShardSlice slice(const Variable& host, int global) const {
    return shard_slice(host.name(), host.shape(), strategy_.layout_for(host.name(), host.shape()),
                       mesh_, global);
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

  // One output per batch shard, in batch order: each from its model-coordinate-0 device, sent to
  // every worker when that device lives on another (so every worker's metrics see the whole
  // batch). `ys` holds every shard's targets (or undefined tensors); `present` says which shards
  // have rows (the same on every worker).
  std::vector<train::ReplicaOutput> outputs_in_batch_order(std::vector<train::ReplicaOutput>& out,
                                                           const std::vector<Tensor>& ys,
                                                           const std::vector<bool>& present) {
    std::vector<train::ReplicaOutput> kept(static_cast<size_t>(data_size_));
    for (size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i].model == 0) kept[static_cast<size_t>(devices_[i].data)] = std::move(out[i]);
    if (outputs() == nullptr) return kept;
    for (int d = 0; d < data_size_; ++d) {
      if (!present[static_cast<size_t>(d)]) continue;
      const int root = owner(first_of_data_.at(d));
      train::ReplicaOutput& o = kept[static_cast<size_t>(d)];
      float loss = static_cast<float>(o.loss);
      outputs()->broadcast(&loss, 1, root);
      const Tensor y_pred = broadcast_tensor(*outputs(), o.y_pred, root);
      const Tensor mask = broadcast_tensor(*outputs(), o.mask, root);
      if (worker_ != root)
        o = {loss, y_pred, ys[static_cast<size_t>(d)],
             mask.defined() ? mask.to(DType::boolean) : mask};
    }
    return kept;
  }

  // The host copy takes every device's shards (those of batch coordinate 0: the others hold the
  // same values), from whichever worker holds them, and the optimizer its slots.
  void gather_to_host() {
    if (devices_[0].net == nullptr) return;
    if (outputs() == nullptr) {
      for (const Device& dev : devices_) {
        if (dev.data != 0) continue;
        for (const Shard& s : dev.shards) {
          Tensor dst = slice_of(s.host.value(), s.slice);
          dst.copy_(s.local.value());
          Variable(s.host).mark_modified();
        }
      }
    } else {
      for (const Variable& h : primary_->variables()) {
        for (int g : batch_zero_) {
          const ShardSlice sl = slice(h, g);
          Tensor mine;
          if (owner(g) == worker_) mine = local_shard(g, h.name())->local.value();
          Tensor dst = slice_of(h.value(), sl);
          dst.copy_(broadcast_tensor(*outputs(), mine, owner(g)).to(h.dtype()));
        }
        Variable(h).mark_modified();
      }
    }
    gather_optimizer_state();
  }

  const Shard* local_shard(int global, const std::string& path) const {
    for (const Device& dev : devices_) {
      if (dev.global != global) continue;
      for (const Shard& s : dev.shards)
        if (s.host.name() == path) return &s;
    }
    OSPREY_ASSERT(false, "device {} holds no {}", global, path);
    return nullptr;
  }

  // The host optimizer takes the devices' slots, whole, and their iteration count, so save()
  // writes the state an exact resume needs. Every device's optimizer has the same keys (every
  // device holds a part of every variable), so every worker walks them alike.
  void gather_optimizer_state() const {
    const Device& any = devices_[0];
    std::vector<std::pair<std::string, Tensor>> state;
    for (const auto& [key, tensor] : any.optimizer->state()) {
      const Shard* s = shard_of(any, key);
      if (s == nullptr) {
        state.emplace_back(key, tensor.clone());
        continue;
      }
      Tensor whole = Tensor::empty(s->host.shape(), {tensor.dtype()});
      for (int g : batch_zero_) {
        const ShardSlice sl = slice(s->host, g);
        Tensor dst = slice_of(whole, sl);
        const Tensor mine = owner(g) == worker_ ? slot_of(device(g), key) : Tensor();
        dst.copy_(outputs() == nullptr
                      ? mine
                      : broadcast_tensor(*outputs(), mine, owner(g)).to(tensor.dtype()));
      }
      state.emplace_back(key, whole);
    }
    optimizer_->load_state(state);
  }

  const Device& device(int global) const {
    for (const Device& d : devices_)
      if (d.global == global) return d;
    OSPREY_ASSERT(false, "device {} is not on this worker", global);
    return devices_[0];
  }
  static Tensor slot_of(const Device& dev, const std::string& key) {
    for (const auto& [k, t] : dev.optimizer->state())
      if (k == key) return t;
    OSPREY_ASSERT(false, "device {} has no optimizer entry {}", dev.global, key);
    return {};
  }

  const ModelParallel strategy_;
  std::shared_ptr<models::Network> primary_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  DeviceMesh mesh_;
  std::shared_ptr<WorkerGroup> group_;
  int workers_count_, worker_, local_;
  int data_size_, model_size_;
  ReplicaWorkers workers_;
  std::map<std::pair<char, int>, std::unique_ptr<comm::InProcessGroup>> local_groups_;
  std::map<std::pair<char, int>, std::unique_ptr<comm::Communicator>> cross_;
  std::unique_ptr<CollectiveAbort> abort_;
  std::vector<Device> devices_;       // this worker's, in mesh order
  std::map<int, int> first_of_data_;  // batch coordinate -> its model-0 device
  std::vector<int> batch_zero_;       // the devices of batch coordinate 0
};

}  // namespace

std::unique_ptr<train::StepExecutor> make_model_parallel_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer,
    const ModelParallel& strategy) {
  return std::make_unique<ModelParallelExecutor>(std::move(network), std::move(optimizer),
                                                 strategy);
}

}  // namespace osprey::distribute
