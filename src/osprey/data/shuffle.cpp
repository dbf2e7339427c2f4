// shuffle(buffer_size, seed): tf.data's buffered shuffle. The first buffer_size elements fill a
// buffer; each step yields a uniformly drawn slot and refills it with the next input element,
// so a buffer at least as large as the dataset gives a uniform permutation, and a small one
// only mixes neighbours. The draws come from Philox keyed by the seed with the epoch in the
// counter's high word: the same (seed, epoch) gives the same order on any machine.
#include <array>
#include <utility>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/data/dataset.h"

namespace osprey::data {
namespace {

__extension__ typedef unsigned __int128 u128;  // -Wpedantic: a GCC/Clang extension

class ShuffleNode final : public detail::Node {
 public:
  ShuffleNode(detail::NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : input_(std::move(input)), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {
    OSPREY_CHECK(buffer_size > 0, "shuffle: buffer_size must be positive. Received: buffer_size={}",
                 buffer_size);
  }

  class It final : public detail::IteratorImpl {
   public:
    It(const ShuffleNode& node, uint64_t epoch)
        : in_(node.input_->make_iterator(epoch)),
          capacity_(node.buffer_size_),
          rng_(node.seed_),
          stream_(node.reshuffle_ ? epoch : 0) {}

    std::optional<Element> next() override {
      while (!input_done_ && static_cast<int64_t>(buffer_.size()) < capacity_) {
        std::optional<Element> e = in_->next();
        if (!e) {
          input_done_ = true;
          in_.reset();  // free upstream resources (files, threads) as soon as they are done
          break;
        }
        if (buffer_.empty())
          buffer_.reserve(static_cast<size_t>(std::min<int64_t>(capacity_, 1 << 16)));
        buffer_.push_back(std::move(*e));
      }
      if (buffer_.empty()) return std::nullopt;
      const size_t slot = draw(buffer_.size());
      Element out = std::move(buffer_[slot]);
      if (slot + 1 != buffer_.size()) buffer_[slot] = std::move(buffer_.back());
      buffer_.pop_back();
      return out;
    }

   private:
    // Uniform in [0, n): 64 random bits times n, high half (Lemire), bias below 2^-32.
    size_t draw(size_t n) {
      if (word_ == 4) {
        block_ = rng_(counter_++, stream_);
        word_ = 0;
      }
      const uint64_t r = (static_cast<uint64_t>(block_[word_]) << 32) | block_[word_ + 1];
      word_ += 2;
      return static_cast<size_t>((static_cast<u128>(r) * n) >> 64);
    }

    std::unique_ptr<detail::IteratorImpl> in_;
    int64_t capacity_;
    Philox rng_;
    uint64_t stream_;
    uint64_t counter_ = 0;
    std::array<uint32_t, 4> block_{};
    int word_ = 4;
    std::vector<Element> buffer_;
    bool input_done_ = false;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(*this, epoch);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string label() const override { return fmt::format("Shuffle({})", buffer_size_); }
  const Node* input() const override { return input_.get(); }
  bool order_varies_by_epoch() const override {
    return reshuffle_ || input_->order_varies_by_epoch();
  }

 private:
  detail::NodePtr input_;
  int64_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_;
};

}  // namespace

Dataset Dataset::shuffle(int64_t buffer_size, uint64_t seed) const {
  return shuffle(buffer_size, ShuffleOptions{.seed = seed});
}

Dataset Dataset::shuffle(int64_t buffer_size, ShuffleOptions options) const {
  const uint64_t seed = options.seed ? *options.seed : next_seed();
  return Dataset(
      std::make_shared<ShuffleNode>(node_, buffer_size, seed, options.reshuffle_each_iteration));
}

}  // namespace osprey::data
