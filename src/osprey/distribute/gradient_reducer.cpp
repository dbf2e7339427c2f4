#include "osprey/distribute/gradient_reducer.h"

#include <chrono>
#include <cstring>

#include "osprey/core/error.h"
#include "osprey/core/parallel.h"

namespace osprey::distribute {

struct GradientReducer::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool active = false, stop = false;
  size_t next = 0;                 // the bucket the worker reduces next
  std::vector<size_t> pending;     // per bucket: variables not yet ready this step
  std::vector<char> ready;         // per variable, this step
  std::exception_ptr error;
  double reduce_seconds = 0.0, wait_seconds = 0.0;
  // Called by a hook (backward's thread) or by finish_step, with the mutex held.
  void mark(size_t var, size_t bucket) {
    if (!active || ready[var]) return;
    ready[var] = 1;
    --pending[bucket];
    cv.notify_all();
  }
};

std::vector<std::vector<size_t>> assign_buckets(const std::vector<autograd::Variable>& variables,
                                                int64_t bucket_bytes) {
  OSPREY_CHECK(bucket_bytes >= 1, "gradient buckets: bucket_bytes must be at least 1. Received: {}", bucket_bytes);
  std::vector<std::vector<size_t>> out;
  int64_t bytes = 0;
  for (size_t j = variables.size(); j-- > 0;) {
    const int64_t b = variables[j].numel() * 4;
    if (out.empty() || (bytes > 0 && bytes + b > bucket_bytes)) {
      out.emplace_back();
      bytes = 0;
    }
    out.back().push_back(j);
    bytes += b;
  }
  return out;
}

GradientReducer::GradientReducer(std::vector<autograd::Variable> variables, comm::Communicator& communicator,
                                 int64_t bucket_bytes)
    : variables_(std::move(variables)), communicator_(communicator), state_(std::make_shared<State>()) {
  buckets_ = assign_buckets(variables_, bucket_bytes);
  bucket_of_.resize(variables_.size());
  for (size_t k = 0; k < buckets_.size(); ++k) {
    int64_t n = 0;
    for (size_t j : buckets_[k]) {
      bucket_of_[j] = k;
      n += variables_[j].numel();
    }
    buffers_.push_back(Tensor::empty({n}, {DType::float32}));
  }
  state_->pending.resize(buckets_.size());
  state_->ready.resize(variables_.size());
  for (size_t j = 0; j < variables_.size(); ++j) {
    std::weak_ptr<State> weak = state_;
    const size_t bucket = bucket_of_[j];
    variables_[j].add_grad_ready_hook([weak, j, bucket](const autograd::Variable&) {
      if (auto s = weak.lock()) {
        std::lock_guard<std::mutex> lock(s->mutex);
        s->mark(j, bucket);
      }
    });
  }
  worker_ = std::thread([this] { work(); });
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->cv.notify_all();
  worker_.join();
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
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(state_->mutex);
  for (size_t j = 0; j < variables_.size(); ++j) state_->mark(j, bucket_of_[j]);
  state_->cv.wait(lock, [&] { return !state_->active; });
  state_->wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (state_->error) std::rethrow_exception(state_->error);
}

GradientReducer::Stats GradientReducer::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return {state_->reduce_seconds, state_->wait_seconds};
}

void GradientReducer::reset_stats() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->reduce_seconds = state_->wait_seconds = 0.0;
}

void GradientReducer::work() {
  set_thread_limit(1);  // packing and the collective run on this thread alone, beside backward
  for (;;) {
    size_t k = 0;
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      state_->cv.wait(lock, [&] {
        return state_->stop || (state_->active && state_->pending[state_->next] == 0);
      });
      if (state_->stop) return;
      k = state_->next;
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
      reduce_bucket(k);
    } catch (...) {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (!state_->error) state_->error = std::current_exception();
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->reduce_seconds += dt;
      if (++state_->next == buckets_.size()) state_->active = false;
    }
    state_->cv.notify_all();
  }
}

void GradientReducer::reduce_bucket(size_t k) {
  Tensor& flat = buffers_[k];
  float* buf = flat.data<float>();
  // Pack: every rank packs the same layout; a missing gradient is zeros.
  size_t off = 0;
  for (size_t j : buckets_[k]) {
    const autograd::Variable& v = variables_[j];
    const auto n = static_cast<size_t>(v.numel());
    if (v.has_grad() && v.grad().dtype() == DType::float32 && v.grad().is_contiguous()) {
      std::memcpy(buf + off, v.grad().data<float>(), n * sizeof(float));
    } else if (v.has_grad()) {
      Tensor view = flat.narrow(0, static_cast<int64_t>(off), v.numel()).view(v.shape());
      view.copy_(v.grad());  // cast to float32
    } else {
      std::memset(buf + off, 0, n * sizeof(float));
    }
    off += n;
  }
  communicator_.all_reduce(buf, flat.numel(), comm::ReduceOp::mean);
  off = 0;
  for (size_t j : buckets_[k]) {
    const autograd::Variable& v = variables_[j];
    const auto n = static_cast<size_t>(v.numel());
    if (v.has_grad() && v.grad().dtype() == DType::float32 && v.grad().is_contiguous()) {
      std::memcpy(v.grad().data<float>(), buf + off, n * sizeof(float));
    } else if (v.has_grad()) {
      Tensor g = v.grad();
      g.copy_(flat.narrow(0, static_cast<int64_t>(off), v.numel()).view(v.shape()));
    }
    off += n;
  }
}

}  // namespace osprey::distribute
