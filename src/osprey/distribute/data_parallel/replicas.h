// Replicas: the copies of one network that a data-parallel strategy trains, one per virtual
// device, and the worker threads that run them. Replica 0 is the primary network itself (what
// predict, save and get_weights see); the others are rebuilt from its config and given its
// weights, so their variables have the same paths and order. run(fn) calls fn(r) for every
// replica, r on its own persistent worker with its share of the thread pool (0 on the caller's;
// replica_workers.h), and rethrows the lowest replica's error.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/distribute/data_parallel/replica_workers.h"
#include "osprey/models/network.h"
#include "osprey/train/strategy.h"

namespace osprey::distribute {

// v's value becomes src (same shape; cast to v's dtype), in place, and v is marked modified, so
// what is derived from its value (a layer's compute-dtype copy) is rebuilt: how every strategy
// copies weights between a network and its replicas, shards or stages.
void assign_in_place(const autograd::Variable& v, const Tensor& src);

class Replicas {
 public:
  // threads_per_replica: each replica's thread limit, 0 for num_threads() / count (at least 1).
  Replicas(std::shared_ptr<models::Network> primary, int count, std::string owner,
           int threads_per_replica = 0);

  int size() const noexcept { return count_; }
  bool ready() const noexcept { return !nets_.empty(); }
  // Builds the primary (when it has no weights yet) on x_shards[0], then the other replicas on
  // their shards, each with the primary's weights.
  void create(const std::vector<Tensor>& x_shards);
  models::Network& network(int r) const { return *nets_[static_cast<size_t>(r)]; }
  const std::vector<autograd::Variable>& trainable(int r) const {
    return trainable_[static_cast<size_t>(r)];
  }
  // State such as BatchNormalization's moving statistics, in the same order on every replica.
  const std::vector<autograd::Variable>& non_trainable(int r) const {
    return non_trainable_[static_cast<size_t>(r)];
  }
  // Every replica's variables (trainable or not) and seed streams take the primary's, in place.
  void copy_from_primary();
  void run(const std::function<void(int)>& fn) const { workers_.run(fn); }
  // Inference on replica shares of (x, y) split as evenly as possible, in order; creates the
  // replicas first when needed (or runs everything on the primary when x has fewer rows than
  // there are replicas and they do not exist yet).
  std::vector<train::ReplicaOutput> forward(const Tensor& x, const Tensor& y,
                                            const train::ReplicaForward& fn);

 private:
  std::shared_ptr<models::Network> primary_;
  int count_;
  std::string owner_;
  std::vector<std::shared_ptr<models::Network>> nets_;
  std::vector<std::vector<autograd::Variable>> trainable_, non_trainable_, variables_;
  mutable ReplicaWorkers workers_;  // running replicas changes no replica data
};

}  // namespace osprey::distribute
