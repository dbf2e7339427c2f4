// prefetch(n): runs everything upstream on a background thread that keeps up to n elements
// ready, so reading, decoding, shuffling and batching overlap with the training step.
// kAutotune starts with a buffer of 2 and doubles it (up to kMaxAutotune) each time the
// consumer finds it empty while the producer is still working. An error raised upstream is
// captured on the producer thread and rethrown by the consumer's next(), after the elements
// produced before it. Destroying the iterator mid-epoch stops the producer at its next element
// and joins it: no thread outlives its iterator.
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "osprey/core/error.h"
#include "osprey/data/dataset.h"

namespace osprey::data {
namespace {

constexpr int64_t kAutotuneStart = 2;
constexpr int64_t kMaxAutotune = 16;

class PrefetchNode final : public detail::Node {
 public:
  PrefetchNode(detail::NodePtr input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(buffer_size) {
    OSPREY_CHECK(buffer_size > 0 || buffer_size == kAutotune,
                 "prefetch: buffer_size must be positive or kAutotune. Received: buffer_size={}",
                 buffer_size);
  }

  class It final : public detail::IteratorImpl {
   public:
    It(const PrefetchNode& node, uint64_t epoch)
        : in_(node.input_->make_iterator(epoch)),  // errors here surface in iterator() itself
          autotune_(node.buffer_size_ == kAutotune),
          capacity_(autotune_ ? kAutotuneStart : node.buffer_size_) {
      producer_ = std::thread([this] { produce(); });
    }

    ~It() override {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        cancel_ = true;
      }
      not_full_.notify_all();
      producer_.join();
    }

    std::optional<Element> next() override {
      std::unique_lock<std::mutex> lock(mutex_);
      if (queue_.empty() && !done_) {
        if (autotune_ && capacity_ < kMaxAutotune) {  // the consumer is waiting: buffer more
          capacity_ = std::min(capacity_ * 2, kMaxAutotune);
          not_full_.notify_one();
        }
        not_empty_.wait(lock, [this] { return !queue_.empty() || done_; });
      }
      if (!queue_.empty()) {
        Element e = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        not_full_.notify_one();
        return e;
      }
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));  // once; then the end
      return std::nullopt;
    }

   private:
    void produce() {
      try {
        while (true) {
          {
            std::unique_lock<std::mutex> lock(mutex_);
            not_full_.wait(lock, [this] {
              return cancel_ || static_cast<int64_t>(queue_.size()) < capacity_;
            });
            if (cancel_) break;
          }
          std::optional<Element> e = in_->next();
          if (!e) break;
          {
            std::lock_guard<std::mutex> lock(mutex_);
            queue_.push_back(std::move(*e));
          }
          not_empty_.notify_one();
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
      }
      try {
        in_.reset();  // release upstream (files, nested threads) on this thread, promptly
      } catch (...) {
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        done_ = true;
      }
      not_empty_.notify_all();
    }

    std::unique_ptr<detail::IteratorImpl> in_;  // used by the producer thread only
    const bool autotune_;
    std::mutex mutex_;
    std::condition_variable not_empty_, not_full_;
    std::deque<Element> queue_;
    int64_t capacity_;
    bool done_ = false, cancel_ = false;
    std::exception_ptr error_;
    std::thread producer_;  // last: started once everything above exists
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(*this, epoch);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string label() const override {
    return buffer_size_ == kAutotune ? std::string("Prefetch(autotune)")
                                     : fmt::format("Prefetch({})", buffer_size_);
  }
  const Node* input() const override { return input_.get(); }

 private:
  detail::NodePtr input_;
  int64_t buffer_size_;
};

}  // namespace

Dataset Dataset::prefetch(int64_t buffer_size) const {
  return Dataset(std::make_shared<PrefetchNode>(node_, buffer_size));
}

}  // namespace osprey::data
