#include "osprey/distribute/data_parallel/replicas.h"

#include <algorithm>

#include "osprey/autograd/grad_mode.h"
#include "osprey/core/error.h"
#include "osprey/distribute/batch_split.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/seed_states.h"

namespace osprey::distribute {

void assign_in_place(const autograd::Variable& v, const Tensor& src) {
  autograd::Variable var = v;
  Tensor dst = var.value();  // a handle on the variable's storage
  dst.copy_(src.to(dst.dtype()));
  var.mark_modified();
}

Replicas::Replicas(std::shared_ptr<models::Network> primary, int count, std::string owner,
                   int threads_per_replica)
    : primary_(std::move(primary)),
      count_(count),
      owner_(std::move(owner)),
      workers_(std::max(count, 1), threads_per_replica) {
  OSPREY_CHECK(count_ >= 1, "{}: the number of replicas must be at least 1. Received: {}", owner_,
               count_);
}

void Replicas::create(const std::vector<Tensor>& x_shards) {
  autograd::NoGradGuard no_grad;
  if (primary_->variables().empty())
    (*primary_)(autograd::Variable(x_shards[0]), false);  // builds it
  // Built aside and kept only when every replica is: a replica whose build throws (its shard's
  // forward fails) must not leave ready() true with fewer networks than replicas.
  std::vector<std::shared_ptr<models::Network>> nets{primary_};
  models::register_model_classes();
  const nlohmann::json config = primary_->get_config();
  const std::vector<Tensor> weights = primary_->get_weights();
  for (int r = 1; r < count_; ++r) {
    auto net = std::dynamic_pointer_cast<models::Network>(
        nn::layer_from_config(primary_->class_name(), config));
    OSPREY_CHECK(net != nullptr,
                 "{}: the model {} ({}) cannot be replicated: its config does not rebuild a model",
                 owner_, primary_->name(), primary_->class_name());
    (*net)(autograd::Variable(x_shards[static_cast<size_t>(r)]), false);
    net->set_weights(weights);
    nn::set_seed_states(*net, nn::seed_states(*primary_));
    nets.push_back(std::move(net));
  }
  std::vector<std::vector<autograd::Variable>> trainable, non_trainable, variables;
  for (const auto& n : nets) {
    trainable.push_back(n->trainable_variables());
    non_trainable.push_back(n->non_trainable_variables());
    variables.push_back(n->variables());
  }
  nets_ = std::move(nets);
  trainable_ = std::move(trainable);
  non_trainable_ = std::move(non_trainable);
  variables_ = std::move(variables);
}

void Replicas::copy_from_primary() {
  if (!ready()) return;
  const auto& src = variables_[0];
  const nn::SeedStates seeds = nn::seed_states(*primary_);
  for (size_t r = 1; r < nets_.size(); ++r) {
    nn::set_seed_states(*nets_[r], seeds);
    for (size_t i = 0; i < src.size(); ++i) {
      assign_in_place(variables_[r][i], src[i].value());
    }
  }
}

std::vector<train::ReplicaOutput> Replicas::forward(const Tensor& x, const Tensor& y,
                                                    const train::ReplicaForward& fn) {
  OSPREY_CHECK(x.defined() && x.ndim() >= 1, "{}: the batch must be a tensor with a batch axis",
               owner_);
  const int64_t b = x.size(0);
  if (count_ == 1 || (!ready() && b < count_)) return {fn(*primary_, x, y)};
  // Replica r gets rows [start(r), start(r + 1)): the first b % n replicas one row more.
  const Shards shares = split_batch_unevenly(x, y, count_);
  const std::vector<Tensor>& xs = shares.x;
  const std::vector<Tensor>& ys = shares.y;
  if (!ready()) create(xs);
  std::vector<train::ReplicaOutput> out(static_cast<size_t>(count_));
  run([&](int r) {
    const auto i = static_cast<size_t>(r);
    if (xs[i].defined()) out[i] = fn(network(r), xs[i], ys[i]);
  });
  std::vector<train::ReplicaOutput> kept;
  for (size_t i = 0; i < out.size(); ++i) {
    if (xs[i].defined()) kept.push_back(std::move(out[i]));
  }
  return kept;
}

}  // namespace osprey::distribute
