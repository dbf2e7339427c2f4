#include "osprey/nn/replica_context.h"

namespace osprey::nn {

namespace {
thread_local ReplicaContext* t_context = nullptr;
}  // namespace

ReplicaContext* current_replica_context() noexcept { return t_context; }

ReplicaContextGuard::ReplicaContextGuard(ReplicaContext* context) noexcept : previous_(t_context) {
  t_context = context;
}

ReplicaContextGuard::~ReplicaContextGuard() { t_context = previous_; }

}  // namespace osprey::nn
