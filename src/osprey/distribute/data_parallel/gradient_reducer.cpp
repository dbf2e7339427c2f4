#include "osprey/distribute/data_parallel/gradient_reducer.h"

#include <chrono>
#include <cstring>

#include "osprey/core/error.h"
#include "osprey/core/parallel.h"

namespace osprey::distribute {

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t gradient_bytes(const autograd::Variable& v) { return v.numel() * 4; }  // reduced as float32
}  // namespace

struct GradientReducer::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool active = false, stop = false;
  GradientReducer* owner = nullptr;  // null once the reducer is gone: later hooks do nothing
  size_t next = 0;                   // the bucket reduced next
  Clock::time_point startable;  // when bucket `next` became complete with its predecessors reduced
  std::vector<size_t> pending;  // per bucket: variables not yet ready this step
  std::vector<char> ready;      // per variable, this step
  std::exception_ptr error;
  Stats stats;
  // Called by a hook (backward's thread) or by finish_step, with the mutex held; true when this
  // completed the variable's bucket.
  bool mark(size_t var, size_t bucket) {
    if (!active || ready[var]) return false;
    ready[var] = 1;
    if (--pending[bucket] > 0) return false;
    if (bucket == next) startable = Clock::now();
    return true;
  }
};

GradientReducer::Stats& GradientReducer::Stats::operator+=(const Stats& o) {
  reduce_seconds += o.reduce_seconds;
  wait_seconds += o.wait_seconds;
  in_backward_seconds += o.in_backward_seconds;
  queued_seconds += o.queued_seconds;
  steps += o.steps;
  return *this;
}

std::vector<std::vector<size_t>> assign_buckets(const std::vector<autograd::Variable>& variables,
                                                int64_t bucket_bytes, int64_t first_bucket_bytes) {
  OSPREY_CHECK(bucket_bytes >= 1, "gradient buckets: bucket_bytes must be at least 1. Received: {}",
               bucket_bytes);
  OSPREY_CHECK(first_bucket_bytes >= 1,
               "gradient buckets: first_bucket_bytes must be at least 1. Received: {}",
               first_bucket_bytes);
  std::vector<std::vector<size_t>> out;
  int64_t bytes = 0;
  for (size_t j = variables.size(); j-- > 0;) {
    const int64_t b = gradient_bytes(variables[j]);
    const int64_t limit = out.size() == 1 ? first_bucket_bytes : bucket_bytes;
    if (out.empty() || (bytes > 0 && bytes + b > limit)) {
      out.emplace_back();
      bytes = 0;
    }
    out.back().push_back(j);
    bytes += b;
  }
  return out;
}

double overlap_ceiling(const std::vector<autograd::Variable>& variables,
                       const std::vector<std::vector<size_t>>& buckets) {
  int64_t total = 0, last = 0;
  for (size_t k = 0; k < buckets.size(); ++k) {
    for (size_t j : buckets[k]) {
      total += gradient_bytes(variables[j]);
      if (k + 1 == buckets.size()) last += gradient_bytes(variables[j]);
    }
  }
  return total > 0 ? 1.0 - static_cast<double>(last) / static_cast<double>(total) : 0.0;
}

GradientReducer::GradientReducer(std::vector<autograd::Variable> variables,
                                 comm::Communicator& communicator, ReducerOptions options)
    : variables_(std::move(variables)),
      communicator_(communicator),
      options_(options),
      state_(std::make_shared<State>()) {
  buckets_ = assign_buckets(variables_, options_.bucket_bytes, options_.first_bucket_bytes);
  bucket_of_.resize(variables_.size());
  for (size_t k = 0; k < buckets_.size(); ++k) {
    int64_t n = 0;
    for (size_t j : buckets_[k]) {
      bucket_of_[j] = k;
      n += variables_[j].numel();
    }
    const Tensor flat = Tensor::empty({n}, {DType::float32});
    views_.emplace_back();
    int64_t off = 0;
    for (size_t j : buckets_[k]) {
      views_.back().push_back(
          flat.narrow(0, off, variables_[j].numel()).view(variables_[j].shape()));
      off += variables_[j].numel();
    }
    buffers_.push_back(flat);
  }
  state_->owner = this;
  state_->pending.resize(buckets_.size());
  state_->ready.resize(variables_.size());
  for (size_t j = 0; j < variables_.size(); ++j) {
    std::weak_ptr<State> weak = state_;
    const size_t bucket = bucket_of_[j];
    variables_[j].add_grad_ready_hook([weak, j, bucket](const autograd::Variable&) {
      const auto s = weak.lock();
      if (!s) return;
      std::unique_lock<std::mutex> lock(s->mutex);
      if (!s->mark(j, bucket) || s->owner == nullptr) return;
      if (s->owner->options_.reduce_on == ReduceOn::backward_thread) {
        s->owner->reduce_complete(lock, /*in_backward=*/true);
      } else {
        s->cv.notify_all();
      }
    });
  }
  if (options_.reduce_on == ReduceOn::communication_thread)
    worker_ = std::thread([this] { work(); });
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
    state_->owner = nullptr;
  }
  state_->cv.notify_all();
  if (worker_.joinable()) worker_.join();
}

void GradientReducer::begin_step() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (size_t k = 0; k < buckets_.size(); ++k) state_->pending[k] = buckets_[k].size();
  std::fill(state_->ready.begin(), state_->ready.end(), 0);
  state_->next = 0;
  state_->error = nullptr;
  state_->active = !buckets_.empty();
}

void GradientReducer::finish_step() {
  const auto t0 = Clock::now();
  std::unique_lock<std::mutex> lock(state_->mutex);
  for (size_t j = 0; j < variables_.size(); ++j) state_->mark(j, bucket_of_[j]);
  if (options_.reduce_on == ReduceOn::backward_thread) {
    reduce_complete(lock, /*in_backward=*/false);
  } else {
    state_->cv.notify_all();
    state_->cv.wait(lock, [&] { return !state_->active; });
  }
  state_->stats.wait_seconds += seconds(Clock::now() - t0);
  ++state_->stats.steps;
  if (state_->error) std::rethrow_exception(state_->error);
}

GradientReducer::Stats GradientReducer::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

void GradientReducer::reset_stats() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->stats = {};
}

void GradientReducer::work() {
  set_thread_limit(1);  // packing and the collective run on this thread alone, beside backward
  std::unique_lock<std::mutex> lock(state_->mutex);
  for (;;) {
    state_->cv.wait(lock, [&] {
      return state_->stop || (state_->active && state_->pending[state_->next] == 0);
    });
    if (state_->stop) return;
    run_bucket(lock, state_->next, /*in_backward=*/false);
    if (!state_->active) state_->cv.notify_all();  // finish_step waits for the last bucket
  }
}

void GradientReducer::reduce_complete(std::unique_lock<std::mutex>& lock, bool in_backward) {
  while (state_->active && state_->pending[state_->next] == 0)
    run_bucket(lock, state_->next, in_backward);
}

void GradientReducer::run_bucket(std::unique_lock<std::mutex>& lock, size_t k, bool in_backward) {
  const auto t0 = Clock::now();
  state_->stats.queued_seconds += seconds(t0 - state_->startable);
  lock.unlock();
  std::exception_ptr error;
  try {
    reduce_bucket(k);
  } catch (...) {
    error = std::current_exception();
  }
  const auto t1 = Clock::now();
  lock.lock();
  if (error && !state_->error) state_->error = error;
  state_->stats.reduce_seconds += seconds(t1 - t0);
  if (in_backward) state_->stats.in_backward_seconds += seconds(t1 - t0);
  if (++state_->next == buckets_.size()) {
    state_->active = false;
  } else if (state_->pending[state_->next] == 0) {
    state_->startable = t1;
  }
}

void GradientReducer::reduce_bucket(size_t k) {
  Tensor& flat = buffers_[k];
  float* buf = flat.data<float>();
  const std::vector<size_t>& bucket = buckets_[k];
  // Pack: every rank packs the same layout; a missing gradient is zeros. A gradient that is
  // still last step's view (kept, not zeroed, by the caller) is already in place.
  size_t off = 0;
  for (size_t i = 0; i < bucket.size(); ++i) {
    const autograd::Variable& v = variables_[bucket[i]];
    const auto n = static_cast<size_t>(v.numel());
    if (!v.has_grad()) {
      std::memset(buf + off, 0, n * sizeof(float));
    } else if (v.grad().dtype() == DType::float32 && v.grad().is_contiguous()) {
      const float* g = v.grad().data<float>();
      if (g != buf + off) std::memcpy(buf + off, g, n * sizeof(float));
    } else {
      Tensor view = views_[k][i];
      view.copy_(v.grad());  // cast to float32
    }
    off += n;
  }
  communicator_.all_reduce(buf, flat.numel(), comm::ReduceOp::mean);
  // A float32 gradient becomes its slice of the reduced buffer (no copy back); another dtype
  // takes the mean cast back to it.
  for (size_t i = 0; i < bucket.size(); ++i) {
    autograd::Variable v = variables_[bucket[i]];
    if (!v.has_grad()) continue;
    if (v.grad().dtype() == DType::float32) {
      v.set_grad(views_[k][i]);
    } else {
      Tensor g = v.grad();
      g.copy_(views_[k][i]);
    }
  }
}

}  // namespace osprey::distribute
