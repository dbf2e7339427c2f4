#include "osprey/distribute/data_parallel/communicator_replica_context.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "osprey/core/error.h"

namespace osprey::distribute {

void CommunicatorReplicaContext::all_reduce_sum(Tensor& t) {
  OSPREY_CHECK(
      t.defined() && t.is_contiguous() &&
          (t.dtype() == DType::float32 || t.dtype() == DType::float64),
      "ReplicaContext: all_reduce_sum needs a contiguous float32 or float64 tensor. Received: {}",
      t.defined() ? std::string(dtype_name(t.dtype())) + t.shape().to_string()
                  : std::string("undefined"));
  const int64_t n = t.numel();
  if (t.dtype() == DType::float32) return comm_.all_reduce(t.data<float>(), n, comm::ReduceOp::sum);
  const int64_t words = n * 2;  // one double is two floats' worth of bytes
  gathered_.resize(static_cast<size_t>(words * comm_.size()));
  comm_.all_gather(reinterpret_cast<const float*>(t.data<double>()), gathered_.data(), words);
  double* out = t.data<double>();
  for (int64_t i = 0; i < n; ++i) out[i] = 0.0;
  for (int q = 0; q < comm_.size(); ++q) {
    const char* block =
        reinterpret_cast<const char*>(gathered_.data() + static_cast<size_t>(q * words));
    for (int64_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, block + i * static_cast<int64_t>(sizeof(double)), sizeof(double));
      out[i] += v;
    }
  }
}

InProcessReplicaContexts::InProcessReplicaContexts(int replicas) : group_(replicas) {
  for (int r = 0; replicas > 1 && r < replicas; ++r) {
    contexts_.push_back(std::make_unique<CommunicatorReplicaContext>(group_.rank(r)));
  }
}

void CollectiveAbort::fail(int r) noexcept {
  std::string why;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_) return;
    first_ = std::current_exception();
    try {
      std::rethrow_exception(first_);
    } catch (const std::exception& e) {
      why = fmt::format("replica {} failed: {}", r, e.what());
    } catch (...) {
      why = fmt::format("replica {} failed", r);
    }
  }
  for (comm::InProcessGroup* g : groups_) g->abort(why);
}

void CollectiveAbort::run(const Replicas& replicas, const std::function<void(int)>& fn) {
  run_each([&](const std::function<void(int)>& each) { replicas.run(each); }, fn);
}

void CollectiveAbort::run(ReplicaWorkers& workers, const std::function<void(int)>& fn) {
  run_each([&](const std::function<void(int)>& each) { workers.run(each); }, fn);
}

void CollectiveAbort::run_each(const std::function<void(const std::function<void(int)>&)>& launch,
                               const std::function<void(int)>& fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first_ = nullptr;
  }
  try {
    launch([&](int r) {
      try {
        fn(r);
      } catch (...) {
        fail(r);
        throw;
      }
    });
  } catch (...) {
    for (comm::InProcessGroup* g : groups_) g->reset();  // every replica has returned
    std::exception_ptr first;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      first = first_;
    }
    if (first) std::rethrow_exception(first);
    throw;
  }
}

}  // namespace osprey::distribute
