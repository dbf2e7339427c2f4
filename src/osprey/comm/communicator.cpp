#include "osprey/comm/communicator.h"

#include "osprey/core/error.h"
#include "osprey/core/float_types.h"

namespace osprey::comm {

namespace {

float* checked(const Tensor& t, const char* call, const char* what) {
  OSPREY_CHECK(t.defined(), "Communicator::{}: the {} tensor is undefined", call, what);
  OSPREY_CHECK(t.dtype() == DType::float32,
               "Communicator::{}: the {} tensor must be float32. Received: {}", call, what,
               dtype_name(t.dtype()));
  OSPREY_CHECK(t.is_contiguous(), "Communicator::{}: the {} tensor must be contiguous (shape {})",
               call, what, t.shape().to_string());
  return const_cast<float*>(t.data<float>());
}

}  // namespace

std::string_view to_string(ReduceOp op) noexcept { return op == ReduceOp::sum ? "sum" : "mean"; }

void round_to_bf16(float* data, int64_t count) noexcept {
  for (int64_t i = 0; i < count; ++i)
    data[i] = detail::bf16_bits_to_f32(detail::f32_to_bf16_bits(data[i]));
}

void Communicator::all_reduce_bf16(float* data, int64_t count, ReduceOp op) {
  OSPREY_CHECK(count >= 0,
               "Communicator::all_reduce_bf16: count must be non-negative. Received: {}", count);
  round_to_bf16(data, count);
  all_reduce(data, count, op);
  round_to_bf16(data, count);
}

void Communicator::all_reduce(Tensor& tensor, ReduceOp op) {
  all_reduce(checked(tensor, "all_reduce", "input"), tensor.numel(), op);
}

void Communicator::reduce_scatter(const Tensor& send, Tensor& recv, ReduceOp op) {
  const float* s = checked(send, "reduce_scatter", "send");
  float* r = checked(recv, "reduce_scatter", "recv");
  OSPREY_CHECK(send.numel() == recv.numel() * size(),
               "Communicator::reduce_scatter: send must hold size() * recv elements ({} * {} = "
               "{}). Received: {}",
               size(), recv.numel(), size() * recv.numel(), send.numel());
  reduce_scatter(s, r, recv.numel(), op);
}

void Communicator::all_gather(const Tensor& send, Tensor& recv) {
  const float* s = checked(send, "all_gather", "send");
  float* r = checked(recv, "all_gather", "recv");
  OSPREY_CHECK(recv.numel() == send.numel() * size(),
               "Communicator::all_gather: recv must hold size() * send elements ({} * {} = {}). "
               "Received: {}",
               size(), send.numel(), size() * send.numel(), recv.numel());
  all_gather(s, r, send.numel());
}

void Communicator::broadcast(Tensor& tensor, int root) {
  broadcast(checked(tensor, "broadcast", "input"), tensor.numel(), root);
}

void Communicator::send(const Tensor& tensor, int destination, int tag) {
  send(checked(tensor, "send", "input"), tensor.numel(), destination, tag);
}

void Communicator::recv(Tensor& tensor, int source, int tag) {
  recv(checked(tensor, "recv", "output"), tensor.numel(), source, tag);
}

}  // namespace osprey::comm
