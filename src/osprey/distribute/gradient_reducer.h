// GradientReducer: one replica's side of the gradient all-reduce, overlapped with backward as
// in PyTorch DDP. The trainable variables are grouped into buckets of at most bucket_bytes
// (default 25 MB; a variable larger than that gets a bucket of its own) in reverse creation
// order, the order backward finishes them in. A grad-ready hook counts each variable's
// gradient as it completes; a communication thread all-reduces (mean) bucket 0, 1, ... as soon
// as each is complete, packing the gradients into one flat f32 buffer and unpacking the mean
// back into them, while backward goes on with the rest. Buckets are always reduced in index
// order, so every replica issues the same collectives in the same order and the sums are
// deterministic. A variable with no gradient in a step contributes zeros and keeps no gradient.
//   reducer.begin_step();   // before backward
//   ... backward ...        // hooks hand buckets to the communication thread
//   reducer.finish_step();  // waits until every bucket is reduced (also after a failed step)
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/comm/communicator.h"

namespace osprey::distribute {

inline constexpr int64_t kDefaultBucketBytes = int64_t{25} << 20;

// Indices into `variables` per bucket: reverse creation order, at most bucket_bytes of float32
// each (ValueError for bucket_bytes < 1).
std::vector<std::vector<size_t>> assign_buckets(const std::vector<autograd::Variable>& variables, int64_t bucket_bytes);

class GradientReducer {
 public:
  GradientReducer(std::vector<autograd::Variable> variables, comm::Communicator& communicator, int64_t bucket_bytes);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  void begin_step();
  // Counts every variable whose gradient never became ready as ready (no gradient: zeros),
  // waits for the communication thread and rethrows its error, if any.
  void finish_step();
  const std::vector<std::vector<size_t>>& buckets() const noexcept { return buckets_; }

  // Seconds spent reducing buckets, and seconds finish_step waited for them after backward had
  // ended: 1 - waited / reducing is the fraction of the reduction hidden behind backward.
  struct Stats {
    double reduce_seconds = 0.0, wait_seconds = 0.0;
  };
  Stats stats() const;
  void reset_stats();

 private:
  struct State;
  void work();
  void reduce_bucket(size_t k);

  std::vector<autograd::Variable> variables_;
  comm::Communicator& communicator_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<size_t> bucket_of_;
  std::vector<Tensor> buffers_;  // one flat float32 buffer per bucket
  std::shared_ptr<State> state_;  // shared with the hooks, which may outlive this reducer
  std::thread worker_;
};

}  // namespace osprey::distribute
