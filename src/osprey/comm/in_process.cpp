#include "osprey/comm/in_process.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "osprey/comm/call_check.h"
#include "osprey/comm/collective_span.h"
#include "osprey/core/error.h"

namespace osprey::comm {

namespace {
constexpr const char* kInProcessBackend = "in_process";  // in the profiler's collective spans
}  // namespace

class InProcessGroup::Rank final : public Communicator {
 public:
  Rank(InProcessGroup& g, int r) : g_(g), r_(r) {}
  int rank() const noexcept override { return r_; }
  int size() const noexcept override { return g_.size_; }

  void all_reduce(float* data, int64_t count, ReduceOp op) override {
    const trace::Span span = collective_span("all_reduce", count * 4, *this, kInProcessBackend);
    if (g_.size_ == 1) {  // the sum and the mean of one buffer are the buffer
      OSPREY_CHECK(count >= 0, "Communicator::all_reduce: count must be non-negative. Received: {}",
                   count);
      return;
    }
    arrive(CallKind::all_reduce, count, op, 0, data, data);
    // Rank r reduces block r of every buffer and writes it back into all of them; no other rank
    // touches block r, so reading and writing in place is safe.
    const auto [b, e] = block(count);
    reduce_block(b, e, op);
    g_.wait_all();
  }

  void reduce_scatter(const float* send, float* recv, int64_t recv_count, ReduceOp op) override {
    const trace::Span span =
        collective_span("reduce_scatter", recv_count * size() * 4, *this, kInProcessBackend);
    arrive(CallKind::reduce_scatter, recv_count, op, 0, send, recv);
    // Each rank reduces its own block: element i of rank r's result is sum_q send_q[r * n + i].
    const int64_t off = static_cast<int64_t>(r_) * recv_count;
    const auto n = static_cast<float>(g_.size_);
    for (int64_t i = 0; i < recv_count; ++i) {
      float acc = g_.posts_[0].send[off + i];
      for (int q = 1; q < g_.size_; ++q) acc += g_.posts_[static_cast<size_t>(q)].send[off + i];
      recv[i] = op == ReduceOp::mean ? acc / n : acc;
    }
    g_.wait_all();
  }

  void all_gather(const float* send, float* recv, int64_t send_count) override {
    const trace::Span span =
        collective_span("all_gather", send_count * 4, *this, kInProcessBackend);
    arrive(CallKind::all_gather, send_count, ReduceOp::sum, 0, send, recv);
    for (int q = 0; q < g_.size_; ++q) {
      std::memcpy(recv + static_cast<int64_t>(q) * send_count,
                  g_.posts_[static_cast<size_t>(q)].send,
                  static_cast<size_t>(send_count) * sizeof(float));
    }
    g_.wait_all();
  }

  void broadcast(float* data, int64_t count, int root) override {
    const trace::Span span =
        collective_span("broadcast", count * 4, *this, kInProcessBackend, root);
    arrive(CallKind::broadcast, count, ReduceOp::sum, root, data, data);
    if (r_ != root)
      std::memcpy(data, g_.posts_[static_cast<size_t>(root)].send,
                  static_cast<size_t>(count) * sizeof(float));
    g_.wait_all();
  }

  void barrier() override {
    const trace::Span span = collective_span("barrier", 0, *this, kInProcessBackend);
    arrive(CallKind::barrier, 0, ReduceOp::sum, 0, nullptr, nullptr);
    g_.wait_all();  // nobody republishes until everyone has checked the posts
  }

  void send(const float* data, int64_t count, int destination, int tag) override {
    const trace::Span span =
        collective_span("send", count * 4, *this, kInProcessBackend, destination);
    check_peer(destination, "send", "destination");
    OSPREY_CHECK(count >= 0, "Communicator::send: count must be non-negative. Received: {}", count);
    std::vector<float> msg(data, data + count);
    {
      std::lock_guard<std::mutex> lock(g_.mailbox_mutex_);
      g_.mailbox_[{r_, destination, tag}].push_back(std::move(msg));
    }
    g_.mailbox_cv_.notify_all();
  }

  void recv(float* data, int64_t count, int source, int tag) override {
    const trace::Span span = collective_span("recv", count * 4, *this, kInProcessBackend, source);
    check_peer(source, "recv", "source");
    std::unique_lock<std::mutex> lock(g_.mailbox_mutex_);
    auto& queue = g_.mailbox_[{source, r_, tag}];
    g_.mailbox_cv_.wait(lock, [&] { return !queue.empty() || g_.aborted(); });
    if (queue.empty()) g_.throw_aborted();
    std::vector<float> msg = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    OSPREY_CHECK(
        static_cast<int64_t>(msg.size()) == count,
        "Communicator::recv: rank {} expected {} elements from rank {} (tag {}) but {} were sent",
        r_, count, source, tag, msg.size());
    std::copy(msg.begin(), msg.end(), data);
  }

 private:
  // Publishes this rank's arguments, waits for every rank, then checks that all ranks called
  // the same collective with the same count, op and root; every rank throws the same error.
  void arrive(CallKind kind, int64_t count, ReduceOp op, int root, const float* send, float* recv) {
    g_.posts_[static_cast<size_t>(r_)] = {send, recv};
    g_.calls_[static_cast<size_t>(r_)] = {static_cast<int64_t>(kind), count,
                                          static_cast<int64_t>(op), root};
    g_.wait_all();
    try {
      check_same_call(g_.calls_, g_.size_);
    } catch (const ValueError&) {
      // Every rank must leave the collective together before anyone can start the next one
      // (which would overwrite the descriptors the others are still checking).
      g_.wait_all();
      throw;
    }
  }

  std::pair<int64_t, int64_t> block(int64_t n) const {
    const int64_t s = g_.size_;
    return {n * r_ / s, n * (r_ + 1) / s};
  }

  // Elements [b, e) of every rank's all_reduce buffer: summed in rank order, divided by the
  // size for a mean, written back to all of them.
  void reduce_block(int64_t b, int64_t e, ReduceOp op) {
    const auto n = static_cast<float>(g_.size_);
    auto src = [&](int q) { return g_.posts_[static_cast<size_t>(q)].send; };
    auto dst = [&](int q) { return g_.posts_[static_cast<size_t>(q)].recv; };
    constexpr int64_t kTile = 1024;
    float acc[kTile];
    for (int64_t t = b; t < e; t += kTile) {
      const int64_t len = std::min(kTile, e - t);
      std::memcpy(acc, src(0) + t, static_cast<size_t>(len) * sizeof(float));
      for (int q = 1; q < g_.size_; ++q) {
        const float* s = src(q) + t;
        for (int64_t i = 0; i < len; ++i) acc[i] += s[i];
      }
      if (op == ReduceOp::mean) {
        for (int64_t i = 0; i < len; ++i) acc[i] /= n;
      }
      for (int q = 0; q < g_.size_; ++q)
        std::memcpy(dst(q) + t, acc, static_cast<size_t>(len) * sizeof(float));
    }
  }

  void check_peer(int peer, const char* call, const char* what) const {
    comm::check_peer(peer, r_, g_.size_, call, what);
  }

  InProcessGroup& g_;
  int r_;
};

InProcessGroup::InProcessGroup(int size) : size_(size) {
  OSPREY_CHECK(size >= 1, "InProcessGroup: size must be at least 1. Received: {}", size);
  posts_.resize(static_cast<size_t>(size));
  calls_.resize(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r));
}

InProcessGroup::~InProcessGroup() = default;

void InProcessGroup::wait_all() {
  const uint64_t seen = word_.load(std::memory_order_acquire);
  if ((seen & 1) != 0) throw_aborted();
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == size_) {
    // The last to arrive opens the barrier; nobody arrives again before seeing the new word.
    arrived_.store(0, std::memory_order_relaxed);
    word_.fetch_add(2, std::memory_order_acq_rel);
    word_.notify_all();
    return;
  }
  uint64_t now = seen;
  while (now == seen) {
    word_.wait(seen, std::memory_order_acquire);
    now = word_.load(std::memory_order_acquire);
  }
  if ((now >> 1) == (seen >> 1)) throw_aborted();  // aborted before everyone arrived
}

void InProcessGroup::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    if (abort_reason_.empty())
      abort_reason_ = reason.empty() ? std::string("no reason given") : reason;
  }
  word_.fetch_or(1, std::memory_order_acq_rel);
  word_.notify_all();
  { std::lock_guard<std::mutex> lock(mailbox_mutex_); }  // a recv between its check and its wait
  mailbox_cv_.notify_all();
}

void InProcessGroup::reset() {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  abort_reason_.clear();
  arrived_.store(0, std::memory_order_relaxed);
  word_.store((word_.load(std::memory_order_relaxed) | 1) + 1, std::memory_order_release);
}

bool InProcessGroup::aborted() const noexcept {
  return (word_.load(std::memory_order_acquire) & 1) != 0;
}

void InProcessGroup::throw_aborted() const {
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    reason = abort_reason_;
  }
  OSPREY_THROW(DistributedError, "InProcessGroup: the collective was aborted: {}", reason);
}

Communicator& InProcessGroup::rank(int r) {
  OSPREY_CHECK(r >= 0 && r < size_,
               "InProcessGroup::rank: rank {} is not a rank of a group of size {}", r, size_);
  return *ranks_[static_cast<size_t>(r)];
}

}  // namespace osprey::comm
