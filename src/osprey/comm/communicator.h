// Communicator: the collectives a group of ranks uses to keep replicas in step (all-reduce of
// gradients, broadcast of weights, ...) plus point-to-point send/recv for pipelines. This file
// is the interface only; in_process.h implements it for the threads of one process, and the
// MPI (mpi.h) and Gloo (gloo.h) backends implement the same calls across processes. Every rank of a
// group must call the same collectives in the same order with matching sizes; a backend reports a
// mismatch as ValueError on every rank instead of hanging or reading out of bounds.
//   InProcessGroup group(4);                      // ranks 0..3, one thread each
//   // on the thread of rank r:
//   Communicator& c = group.rank(r);
//   c.all_reduce(grad.data<float>(), grad.numel(), ReduceOp::mean);
//   c.broadcast(weights, 0);                      // a Tensor overload: f32, contiguous
#pragma once

#include <cstdint>
#include <string_view>

#include "osprey/tensor/tensor.h"

namespace osprey::comm {

enum class ReduceOp : uint8_t { sum, mean };
std::string_view to_string(ReduceOp op) noexcept;

// Rounds each float to the nearest bfloat16 (ties to even), in place: what all_reduce_bf16 does
// to what it sends and to its result.
void round_to_bf16(float* data, int64_t count) noexcept;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;

  // In place: data[i] becomes the sum (or mean) over ranks of data[i], bitwise the same on every
  // rank and run to run. The in-process group adds in rank order 0, 1, ..., size-1; MPI and Gloo
  // in their algorithms' fixed order (so results agree with it to float rounding).
  virtual void all_reduce(float* data, int64_t count, ReduceOp op) = 0;
  // Gradient compression (DDP's bf16 hook, Horovod's compression): like all_reduce, but every
  // rank's data travels rounded to bfloat16 (half the bytes), the sum is accumulated in float32
  // in rank order, and the result (divided by size() for a mean) is rounded to bfloat16 before
  // it is written back as float32. The same bits on every rank and on every backend. The base
  // version rounds and calls all_reduce (for groups with no wire); MPI and Gloo send bf16.
  virtual void all_reduce_bf16(float* data, int64_t count, ReduceOp op);
  // send holds size() * recv_count floats; rank r receives the reduction of block r.
  virtual void reduce_scatter(const float* send, float* recv, int64_t recv_count, ReduceOp op) = 0;
  // recv (size() * send_count floats) receives every rank's send block, in rank order.
  virtual void all_gather(const float* send, float* recv, int64_t send_count) = 0;
  // Every rank's data becomes root's.
  virtual void broadcast(float* data, int64_t count, int root) = 0;
  virtual void barrier() = 0;
  // Point to point, matched by (source, destination, tag) in order; send does not wait for the
  // receiver, recv waits for the message and requires the same count.
  virtual void send(const float* data, int64_t count, int destination, int tag = 0) = 0;
  virtual void recv(float* data, int64_t count, int source, int tag = 0) = 0;

  // Tensor forms: the tensor must be float32 and contiguous (ValueError naming the call otherwise).
  void all_reduce(Tensor& tensor, ReduceOp op);
  void reduce_scatter(const Tensor& send, Tensor& recv, ReduceOp op);
  void all_gather(const Tensor& send, Tensor& recv);
  void broadcast(Tensor& tensor, int root);
  void send(const Tensor& tensor, int destination, int tag = 0);
  void recv(Tensor& tensor, int source, int tag = 0);
};

}  // namespace osprey::comm
