// map and filter: element-wise transforms. map's function is treated as pure, so skipping
// elements of a mapped dataset skips them upstream without calling it.
#include <utility>

#include "osprey/core/error.h"
#include "osprey/data/dataset.h"

namespace osprey::data {
namespace {

class MapNode final : public detail::Node {
 public:
  MapNode(detail::NodePtr input, MapFn fn) : input_(std::move(input)), fn_(std::move(fn)) {
    OSPREY_CHECK(fn_ != nullptr, "map: the function is empty");
  }

  class It final : public detail::IteratorImpl {
   public:
    It(std::shared_ptr<const MapNode> node, uint64_t epoch)
        : node_(std::move(node)), in_(node_->input_->make_iterator(epoch)) {}
    std::optional<Element> next() override {
      std::optional<Element> e = in_->next();
      if (!e) return std::nullopt;
      return node_->fn_(std::move(*e));
    }
    int64_t skip(int64_t n) override { return in_->skip(n); }

   private:
    std::shared_ptr<const MapNode> node_;
    std::unique_ptr<detail::IteratorImpl> in_;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(self<MapNode>(), epoch);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string label() const override { return "Map"; }
  const Node* input() const override { return input_.get(); }

 private:
  detail::NodePtr input_;
  MapFn fn_;
};

class FilterNode final : public detail::Node {
 public:
  FilterNode(detail::NodePtr input, Predicate keep)
      : input_(std::move(input)), keep_(std::move(keep)) {
    OSPREY_CHECK(keep_ != nullptr, "filter: the predicate is empty");
  }

  class It final : public detail::IteratorImpl {
   public:
    It(std::shared_ptr<const FilterNode> node, uint64_t epoch)
        : node_(std::move(node)), in_(node_->input_->make_iterator(epoch)) {}
    std::optional<Element> next() override {
      while (std::optional<Element> e = in_->next()) {
        if (node_->keep_(*e)) return e;
      }
      return std::nullopt;
    }

   private:
    std::shared_ptr<const FilterNode> node_;
    std::unique_ptr<detail::IteratorImpl> in_;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(self<FilterNode>(), epoch);
  }
  int64_t cardinality() const override {
    return input_->cardinality() == 0 ? 0 : kUnknown;  // as tf.data: unknown without iterating
  }
  std::string label() const override { return "Filter"; }
  const Node* input() const override { return input_.get(); }

 private:
  detail::NodePtr input_;
  Predicate keep_;
};

}  // namespace

Dataset Dataset::map(MapFn fn) const {
  return Dataset(std::make_shared<MapNode>(node_, std::move(fn)));
}

Dataset Dataset::filter(Predicate keep) const {
  return Dataset(std::make_shared<FilterNode>(node_, std::move(keep)));
}

}  // namespace osprey::data
