// cache(): keeps the elements of the first complete pass in memory. Until a pass completes,
// every iterator reads upstream and collects what it reads; the first one to reach the end
// publishes its elements and later passes (any thread) read them from there. A pass that
// stops early publishes nothing, as in tf.data. The cached order is frozen: a shuffle placed
// before cache() shuffles once, so shuffle after cache() to reshuffle every epoch.
#include <mutex>
#include <utility>
#include <vector>

#include "osprey/data/dataset.h"

namespace osprey::data {
namespace {

using Elements = std::vector<Element>;

class CacheNode final : public detail::Node {
 public:
  explicit CacheNode(detail::NodePtr input) : input_(std::move(input)) {}

  // Reads the published cache.
  class CachedIt final : public detail::IteratorImpl {
   public:
    explicit CachedIt(std::shared_ptr<const Elements> elements) : elements_(std::move(elements)) {}
    std::optional<Element> next() override {
      if (i_ >= elements_->size()) return std::nullopt;
      return (*elements_)[i_++];
    }
    int64_t skip(int64_t n) override {
      const auto k =
          static_cast<size_t>(std::min<int64_t>(n, static_cast<int64_t>(elements_->size() - i_)));
      i_ += k;
      return static_cast<int64_t>(k);
    }

   private:
    std::shared_ptr<const Elements> elements_;
    size_t i_ = 0;
  };

  // Reads upstream, collecting; publishes at the end of the pass.
  class FillingIt final : public detail::IteratorImpl {
   public:
    FillingIt(std::shared_ptr<const CacheNode> node, uint64_t epoch)
        : node_(std::move(node)),
          in_(node_->input_->make_iterator(epoch)),
          collected_(std::make_shared<Elements>()) {}
    std::optional<Element> next() override {
      if (!in_) return std::nullopt;
      std::optional<Element> e = in_->next();
      if (!e) {
        in_.reset();
        node_->publish(std::move(collected_));
        return std::nullopt;
      }
      collected_->push_back(*e);
      return e;
    }

   private:
    std::shared_ptr<const CacheNode> node_;
    std::unique_ptr<detail::IteratorImpl> in_;
    std::shared_ptr<Elements> collected_;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_) return std::make_unique<CachedIt>(cached_);
    }
    return std::make_unique<FillingIt>(self<CacheNode>(), epoch);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string label() const override { return "Cache"; }
  const Node* input() const override { return input_.get(); }
  bool order_varies_by_epoch() const override { return false; }

 private:
  void publish(std::shared_ptr<Elements> elements) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!cached_) cached_ = std::move(elements);
  }

  detail::NodePtr input_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const Elements> cached_;  // set once, by the first complete pass
};

}  // namespace

Dataset Dataset::cache() const { return Dataset(std::make_shared<CacheNode>(node_)); }

}  // namespace osprey::data
