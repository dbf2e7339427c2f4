// repeat, take, skip and shard: transforms that choose which elements pass, by position. They
// use IteratorImpl::skip, so on sources with random access (from_tensors, cache) skipping
// costs nothing and a shard reads only its own elements.
#include <utility>

#include "osprey/core/error.h"
#include "osprey/data/dataset.h"

namespace osprey::data {
namespace {

class RepeatNode final : public detail::Node {
 public:
  RepeatNode(detail::NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}

  class It final : public detail::IteratorImpl {
   public:
    It(std::shared_ptr<const RepeatNode> node, uint64_t epoch)
        : node_(std::move(node)), epoch_(epoch) {
      if (node_->count_ != 0) in_ = node_->input_->make_iterator(epoch_);
    }
    std::optional<Element> next() override {
      while (in_) {
        if (std::optional<Element> e = in_->next()) {
          ++yielded_;
          return e;
        }
        in_.reset();
        ++rep_;
        // An empty input would make repeat() spin forever: stop after an empty repetition.
        if (yielded_ == 0 || (node_->count_ >= 0 && rep_ >= node_->count_)) break;
        yielded_ = 0;
        in_ =
            node_->input_->make_iterator(detail::derive_epoch(epoch_, static_cast<uint64_t>(rep_)));
      }
      return std::nullopt;
    }

   private:
    std::shared_ptr<const RepeatNode> node_;
    uint64_t epoch_;
    std::unique_ptr<detail::IteratorImpl> in_;
    int64_t rep_ = 0, yielded_ = 0;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(self<RepeatNode>(), epoch);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n == 0 || count_ == 0) return 0;
    if (count_ < 0 || n == kInfinite) return kInfinite;
    if (n == kUnknown) return kUnknown;
    return n > INT64_MAX / count_ ? kInfinite : n * count_;
  }
  std::string label() const override {
    return count_ < 0 ? std::string("Repeat") : fmt::format("Repeat({})", count_);
  }
  const Node* input() const override { return input_.get(); }

 private:
  detail::NodePtr input_;
  int64_t count_;
};

class TakeNode final : public detail::Node {
 public:
  TakeNode(detail::NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}

  class It final : public detail::IteratorImpl {
   public:
    It(const TakeNode& node, uint64_t epoch) : left_(node.count_) {
      if (left_ != 0) in_ = node.input_->make_iterator(epoch);
    }
    std::optional<Element> next() override {
      if (!in_ || left_ == 0) return finish();
      std::optional<Element> e = in_->next();
      if (!e) return finish();
      if (left_ > 0) --left_;
      return e;
    }
    int64_t skip(int64_t n) override {
      if (!in_) return 0;
      const int64_t k = in_->skip(left_ < 0 ? n : std::min(n, left_));
      if (left_ > 0) left_ -= k;
      return k;
    }

   private:
    std::optional<Element> finish() {
      in_.reset();
      return std::nullopt;
    }
    std::unique_ptr<detail::IteratorImpl> in_;
    int64_t left_;  // < 0: unlimited
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(*this, epoch);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (count_ < 0) return n;
    if (n >= 0) return std::min(n, count_);
    return n == kInfinite ? count_ : kUnknown;
  }
  std::string label() const override { return fmt::format("Take({})", count_); }
  const Node* input() const override { return input_.get(); }

 private:
  detail::NodePtr input_;
  int64_t count_;
};

class SkipNode final : public detail::Node {
 public:
  SkipNode(detail::NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}

  class It final : public detail::IteratorImpl {
   public:
    It(const SkipNode& node, uint64_t epoch)
        : in_(node.input_->make_iterator(epoch)), pending_(node.count_) {}
    std::optional<Element> next() override {
      if (!skip_pending()) return std::nullopt;
      return in_->next();
    }
    int64_t skip(int64_t n) override { return skip_pending() ? in_->skip(n) : 0; }

   private:
    bool skip_pending() {
      if (pending_ < 0) return false;  // skip(-1): skip everything
      if (pending_ > 0) {
        in_->skip(pending_);
        pending_ = 0;
      }
      return true;
    }
    std::unique_ptr<detail::IteratorImpl> in_;
    int64_t pending_;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(*this, epoch);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (count_ < 0) return 0;
    if (n >= 0) return std::max<int64_t>(n - count_, 0);
    return n;
  }
  std::string label() const override { return fmt::format("Skip({})", count_); }
  const Node* input() const override { return input_.get(); }

 private:
  detail::NodePtr input_;
  int64_t count_;
};

class ShardNode final : public detail::Node {
 public:
  ShardNode(detail::NodePtr input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_(num_shards), index_(index) {
    OSPREY_CHECK(num_shards > 0, "shard: num_shards must be positive. Received: num_shards={}",
                 num_shards);
    OSPREY_CHECK(index >= 0 && index < num_shards,
                 "shard: index must be in [0, num_shards). Received: index={}, num_shards={}",
                 index, num_shards);
  }

  class It final : public detail::IteratorImpl {
   public:
    It(const ShardNode& node, uint64_t epoch)
        : in_(node.input_->make_iterator(epoch)), num_(node.num_), gap_(node.index_) {}
    std::optional<Element> next() override {
      if (!in_) return std::nullopt;
      if (gap_ > 0 && in_->skip(gap_) < gap_) return finish();
      gap_ = num_ - 1;
      std::optional<Element> e = in_->next();
      if (!e) return finish();
      return e;
    }

   private:
    std::optional<Element> finish() {
      in_.reset();
      return std::nullopt;
    }
    std::unique_ptr<detail::IteratorImpl> in_;
    int64_t num_, gap_;  // gap_: elements to skip before the next one of this shard
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(*this, epoch);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return n / num_ + (index_ < n % num_ ? 1 : 0);
  }
  std::string label() const override { return fmt::format("Shard({}, {})", num_, index_); }
  const Node* input() const override { return input_.get(); }

 private:
  detail::NodePtr input_;
  int64_t num_, index_;
};

}  // namespace

Dataset Dataset::repeat(int64_t count) const {
  return Dataset(std::make_shared<RepeatNode>(node_, count));
}
Dataset Dataset::take(int64_t n) const { return Dataset(std::make_shared<TakeNode>(node_, n)); }
Dataset Dataset::skip(int64_t n) const { return Dataset(std::make_shared<SkipNode>(node_, n)); }
Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  return Dataset(std::make_shared<ShardNode>(node_, num_shards, index));
}

}  // namespace osprey::data
