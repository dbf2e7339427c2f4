#include "osprey/comm/hierarchical.h"

#include <algorithm>

#include "osprey/core/error.h"

namespace osprey::comm {

HierarchicalCommunicator::HierarchicalCommunicator(Communicator& local, Communicator* cross,
                                                   int worker, int workers, bool compress)
    : local_(local), cross_(cross), worker_(worker), workers_(workers), compress_(compress) {
  OSPREY_CHECK(workers >= 1 && worker >= 0 && worker < workers,
               "HierarchicalCommunicator: worker {} is not a worker of a group of {}", worker,
               workers);
  OSPREY_CHECK(!leads() || cross != nullptr,
               "HierarchicalCommunicator: local rank 0 of worker {} needs the "
               "cross-process communicator",
               worker);
  OSPREY_CHECK(!leads() || (cross->size() == workers && cross->rank() == worker),
               "HierarchicalCommunicator: the cross-process communicator is rank {} of {}, but "
               "this is worker {} of {}",
               leads() ? cross->rank() : 0, leads() ? cross->size() : 0, worker, workers);
}

void HierarchicalCommunicator::reduce(float* data, int64_t count, ReduceOp op, bool compress) {
  if (workers_ == 1)
    return local_.all_reduce(data, count, op);  // one process: the in-process group alone
  local_.all_reduce(data, count, ReduceOp::sum);
  if (leads()) {
    if (op == ReduceOp::mean) {
      // Scaled before the cross-process sum, while the local sum is still in cache: after it the
      // buffer has been rewritten by MPI's kernel copy, and a pass over it then ran at DRAM speed
      // (7% of a 2-worker MLP step). A multiply, exact when size() is a power of two.
      const float inverse = 1.0f / static_cast<float>(size());
      for (int64_t i = 0; i < count; ++i) data[i] *= inverse;
    }
    if (compress) {
      cross_->all_reduce_bf16(data, count, ReduceOp::sum);
    } else {
      cross_->all_reduce(data, count, ReduceOp::sum);
    }
  }
  local_.broadcast(data, count, 0);
}

void HierarchicalCommunicator::all_reduce(float* data, int64_t count, ReduceOp op) {
  reduce(data, count, op, compress_);
}

void HierarchicalCommunicator::all_reduce_bf16(float* data, int64_t count, ReduceOp op) {
  reduce(data, count, op, true);
}

void HierarchicalCommunicator::reduce_scatter(const float* send, float* recv, int64_t recv_count,
                                              ReduceOp op) {
  // Rarely used across processes: the whole buffer is reduced, then this rank keeps its block.
  OSPREY_CHECK(recv_count >= 0,
               "Communicator::reduce_scatter: count must be non-negative. Received: {}",
               recv_count);
  scratch_.assign(send, send + recv_count * size());
  reduce(scratch_.data(), static_cast<int64_t>(scratch_.size()), op, compress_);
  std::copy_n(scratch_.begin() + recv_count * rank(), recv_count, recv);
}

void HierarchicalCommunicator::all_gather(const float* send, float* recv, int64_t send_count) {
  const int64_t block = send_count * local_.size();  // one worker's share of recv
  local_.all_gather(send, recv + worker_ * block, send_count);
  if (leads()) {
    scratch_.assign(recv + worker_ * block, recv + (worker_ + 1) * block);
    cross_->all_gather(scratch_.data(), recv, block);
  }
  if (workers_ > 1) local_.broadcast(recv, block * workers_, 0);
}

void HierarchicalCommunicator::broadcast(float* data, int64_t count, int root) {
  OSPREY_CHECK(root >= 0 && root < size(),
               "Communicator::broadcast: root {} is not a rank of a group of size {}", root,
               size());
  const int root_worker = root / local_.size();
  local_.broadcast(data, count,
                   root % local_.size());  // root's replica 0 gets it (others: no harm)
  if (leads()) cross_->broadcast(data, count, root_worker);
  if (workers_ > 1) local_.broadcast(data, count, 0);
}

void HierarchicalCommunicator::barrier() {
  local_.barrier();
  if (leads()) cross_->barrier();
  if (workers_ > 1) local_.barrier();
}

void HierarchicalCommunicator::send(const float*, int64_t, int, int) {
  OSPREY_THROW(NotImplementedError,
               "HierarchicalCommunicator: send is not offered across workers; use the "
               "process-level communicator (MPI or Gloo) for point-to-point messages");
}

void HierarchicalCommunicator::recv(float*, int64_t, int, int) {
  OSPREY_THROW(NotImplementedError,
               "HierarchicalCommunicator: recv is not offered across workers; use the "
               "process-level communicator (MPI or Gloo) for point-to-point messages");
}

}  // namespace osprey::comm
