#include "osprey/comm/call_check.h"

#include <cstring>

#include "osprey/comm/communicator.h"
#include "osprey/core/error.h"
#include "osprey/core/fault_injection.h"

namespace osprey::comm {

std::string_view to_string(CallKind kind) noexcept {
  switch (kind) {
    case CallKind::all_reduce:
      return "all_reduce";
    case CallKind::reduce_scatter:
      return "reduce_scatter";
    case CallKind::all_gather:
      return "all_gather";
    case CallKind::broadcast:
      return "broadcast";
    case CallKind::barrier:
      return "barrier";
    case CallKind::all_reduce_bf16:
      return "all_reduce_bf16";
  }
  return "unknown collective";
}

void check_same_call(std::span<const CallDescriptor> descriptors, int group_size) {
  const CallDescriptor& first = descriptors[0];
  const auto name = [](int64_t k) { return to_string(static_cast<CallKind>(k)); };
  const auto op_name = [](int64_t op) { return to_string(static_cast<ReduceOp>(op)); };
  for (size_t q = 1; q < descriptors.size(); ++q) {
    const CallDescriptor& o = descriptors[q];
    if (o.kind != first.kind) {
      OSPREY_THROW(ValueError, "Communicator: rank 0 called {} but rank {} called {}",
                   name(first.kind), q, name(o.kind));
    }
    if (o.count != first.count) {
      OSPREY_THROW(ValueError, "Communicator::{}: rank 0 passed {} elements but rank {} passed {}",
                   name(first.kind), first.count, q, o.count);
    }
    if (o.op != first.op) {
      OSPREY_THROW(ValueError, "Communicator::{}: rank 0 asked for {} but rank {} for {}",
                   name(first.kind), op_name(first.op), q, op_name(o.op));
    }
    if (o.root != first.root) {
      OSPREY_THROW(ValueError,
                   "Communicator::broadcast: rank 0 named root {} but rank {} named root {}",
                   first.root, q, o.root);
    }
  }
  OSPREY_CHECK(first.count >= 0, "Communicator::{}: count must be non-negative. Received: {}",
               name(first.kind), first.count);
  OSPREY_CHECK(first.kind != static_cast<int64_t>(CallKind::broadcast) ||
                   (first.root >= 0 && first.root < group_size),
               "Communicator::broadcast: root {} is not a rank of a group of size {}", first.root,
               group_size);
}

void check_peer(int peer, int rank, int group_size, const char* call, const char* what) {
  OSPREY_CHECK(peer >= 0 && peer < group_size,
               "Communicator::{}: {} rank {} is not a rank of a group of size {}", call, what, peer,
               group_size);
  OSPREY_CHECK(peer != rank, "Communicator::{}: rank {} names itself as the {}", call, rank, what);
}

void collective_fault_point(std::string_view call, int rank) {
  if (const int err = fault_point("allreduce")) {
    OSPREY_THROW(DistributedError, "{} failed on rank {}: {} (OSPREY_FAULT_INJECT)", call, rank,
                 std::strerror(err));
  }
}

}  // namespace osprey::comm
