// CallDescriptor: what one rank says about the collective it is entering (which call, how many
// elements, which op and root). Every backend gathers the group's descriptors before it moves
// data and calls check_same_call, so a rank that calls a different collective, or passes another
// count, op or root, gets the same ValueError on every rank instead of a hang or an
// out-of-bounds read inside MPI or Gloo.
//   std::vector<CallDescriptor> all = gather(mine);        // the backend's own exchange
//   check_same_call(all, size);                            // throws on every rank alike
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace osprey::comm {

enum class CallKind : int64_t {
  all_reduce = 1,
  reduce_scatter,
  all_gather,
  broadcast,
  barrier,
  all_reduce_bf16
};
std::string_view to_string(CallKind kind) noexcept;

// Plain int64s, so a backend can move them as one small buffer.
struct CallDescriptor {
  int64_t kind = 0;
  int64_t count = 0;
  int64_t op = 0;
  int64_t root = 0;
};
static_assert(sizeof(CallDescriptor) == 4 * sizeof(int64_t));

// descriptors[q] is rank q's. Throws ValueError naming rank 0's call and the first rank that
// differs from it; then the count (negative), and the broadcast root (outside the group).
void check_same_call(std::span<const CallDescriptor> descriptors, int group_size);

// Point to point: ValueError when `peer` (the `what` of `call`: "destination", "source") is not a
// rank of the group or is the caller itself.
void check_peer(int peer, int rank, int group_size, const char* call, const char* what);

// The allreduce fault point (core/fault_injection.h) of a backend's all-reduce, reached once every
// rank has entered the call: a kill there leaves the peers waiting inside the all-reduce, as a
// worker that dies mid-way does. With ":fail" it throws DistributedError naming call and rank.
void collective_fault_point(std::string_view call, int rank);

}  // namespace osprey::comm
