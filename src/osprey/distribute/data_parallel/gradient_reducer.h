// GradientReducer: one replica's side of the gradient all-reduce, overlapped with backward as
// in PyTorch DDP. The trainable variables are grouped into buckets in reverse creation order, the
// order backward finishes them in: the first bucket holds at most first_bucket_bytes (default
// 1 MB, DDP's first bucket: it is ready early in backward, so communication starts early), the
// others at most bucket_bytes (default 25 MB); a variable larger than its limit gets a bucket of
// its own. A grad-ready hook counts each variable's gradient as it completes; bucket 0, 1, ... is
// all-reduced (mean) as soon as it is complete, packed into one flat f32 buffer, while backward
// goes on with the rest. After the reduction each float32 gradient is a view of its bucket's
// buffer (DDP's gradient_as_bucket_view), so the mean is never copied back; as in DDP, a handle
// on a gradient kept past the next step sees that step's reduction. Buckets are always
// reduced in index order, so every replica issues the same collectives in the same order and the
// sums are deterministic. A variable with no gradient in a step contributes zeros and keeps no
// gradient.
//   GradientReducer reducer(vars, communicator, {.bucket_bytes = 25 << 20});
//   reducer.begin_step();   // before backward
//   ... backward ...        // hooks start the reduction of each completed bucket
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
inline constexpr int64_t kDefaultFirstBucketBytes = int64_t{1}
                                                    << 20;  // torch's _DEFAULT_FIRST_BUCKET_BYTES

// Where a completed bucket is reduced.
enum class ReduceOn {
  // A communication thread per replica (one kernel thread): the reduction runs beside backward,
  // which only hides it when that thread has a core that backward does not use.
  communication_thread,
  // The replica's own thread, inside the grad-ready hook that completes the bucket: no thread
  // hand-off, no context switch, but backward pauses for the reduction (never counted as hidden).
  backward_thread,
};

struct ReducerOptions {
  int64_t bucket_bytes = kDefaultBucketBytes;
  int64_t first_bucket_bytes = kDefaultFirstBucketBytes;
  ReduceOn reduce_on = ReduceOn::communication_thread;
};

// Indices into `variables` per bucket: reverse creation order, at most first_bucket_bytes of
// float32 in bucket 0 and bucket_bytes in the others (ValueError for a limit below 1).
std::vector<std::vector<size_t>> assign_buckets(const std::vector<autograd::Variable>& variables,
                                                int64_t bucket_bytes, int64_t first_bucket_bytes);

// The most of the reduction that can be hidden behind backward with these buckets: the last
// bucket holds the first variables created (the first layer), whose gradients backward computes
// last, so its reduction always comes after backward; 1 - its share of the gradient bytes.
double overlap_ceiling(const std::vector<autograd::Variable>& variables,
                       const std::vector<std::vector<size_t>>& buckets);

class GradientReducer {
 public:
  GradientReducer(std::vector<autograd::Variable> variables, comm::Communicator& communicator,
                  ReducerOptions options = {});
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  void begin_step();
  // Counts every variable whose gradient never became ready as ready (no gradient: zeros),
  // reduces or waits for the buckets still open and rethrows the first error, if any.
  void finish_step();
  const std::vector<std::vector<size_t>>& buckets() const noexcept { return buckets_; }
  const ReducerOptions& options() const noexcept { return options_; }
  double overlap_ceiling() const { return distribute::overlap_ceiling(variables_, buckets_); }

  // Wall-clock seconds, summed over steps:
  //   reduce: spent reducing buckets (pack, all-reduce), on whichever thread ran them;
  //   wait: finish_step's, after backward returned (reducing or waiting for the rest);
  //   in_backward: reductions the backward thread itself ran in hooks (ReduceOn::backward_thread),
  //     which stop backward while they run;
  //   queued: complete buckets waiting for a reducer to start on them, from the moment they
  //     could start (complete, and the previous bucket reduced): the wake-up and scheduling
  //     delay of the communication thread.
  // hidden() = 1 - (wait + in_backward) / reduce: the fraction of the reduction time during which
  // backward was still computing. On cores that backward saturates a communication thread only
  // runs by taking a core from backward, so this is an upper bound on the time saved; the
  // benchmark (bench_allreduce BM_Overlap, hidden_wall) measures the saving itself.
  struct Stats {
    double reduce_seconds = 0.0, wait_seconds = 0.0, in_backward_seconds = 0.0,
           queued_seconds = 0.0;
    int64_t steps = 0;
    double hidden() const {
      return reduce_seconds > 0 ? 1.0 - (wait_seconds + in_backward_seconds) / reduce_seconds : 0.0;
    }
    Stats& operator+=(const Stats& o);
  };
  Stats stats() const;
  void reset_stats();

 private:
  struct State;
  void work();
  // Reduces every complete bucket from the next one on, in order, on the calling thread; the
  // lock is released while a bucket is reduced.
  void reduce_complete(std::unique_lock<std::mutex>& lock, bool in_backward);
  void reduce_bucket(size_t k);
  void run_bucket(std::unique_lock<std::mutex>& lock, size_t k, bool in_backward);

  std::vector<autograd::Variable> variables_;
  comm::Communicator& communicator_;
  ReducerOptions options_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<size_t> bucket_of_;
  std::vector<Tensor> buffers_;             // one flat float32 buffer per bucket
  std::vector<std::vector<Tensor>> views_;  // per bucket, per variable: its slice of the buffer
  std::shared_ptr<State> state_;            // shared with the hooks, which may outlive this reducer
  std::thread worker_;                      // ReduceOn::communication_thread only
};

}  // namespace osprey::distribute
