// ReplicaContext: what a layer may ask of the data-parallel replica it runs in
// (tf.distribute.get_replica_context()): the replica count and an in-place cross-replica sum.
// nn may not see comm or distribute (the layering table), so distribute implements this hook
// with the replica's communicator and installs it on the replica's thread for a train step;
// synchronized BatchNormalization reads it. No context (or one replica): layers act locally.
//   ReplicaContextGuard guard(&my_context);              // on replica r's thread, for one step
//   if (auto* c = current_replica_context()) c->all_reduce_sum(t);   // t: every replica's sum
#pragma once

#include "osprey/tensor/tensor.h"

namespace osprey::nn {

class ReplicaContext {
 public:
  virtual ~ReplicaContext() = default;
  virtual int num_replicas() const noexcept = 0;
  virtual int replica_id() const noexcept = 0;
  // t (contiguous float32 or float64, the same shape on every replica) becomes the sum over
  // replicas, combined in replica order so every replica gets bitwise the same values. A
  // collective: every replica must make the same calls in the same order, or they wait forever.
  virtual void all_reduce_sum(Tensor& t) = 0;
};

// The context installed on this thread, or null outside a distributed train step.
ReplicaContext* current_replica_context() noexcept;

// Installs a context on this thread for its lifetime (null: none), restoring the previous one.
class ReplicaContextGuard {
 public:
  explicit ReplicaContextGuard(ReplicaContext* context) noexcept;
  ~ReplicaContextGuard();
  ReplicaContextGuard(const ReplicaContextGuard&) = delete;
  ReplicaContextGuard& operator=(const ReplicaContextGuard&) = delete;

 private:
  ReplicaContext* previous_;
};

}  // namespace osprey::nn
