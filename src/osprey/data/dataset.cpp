// Dataset handle and Iterator: epochs, range-for, describe and the split helpers. Sources are in
// sources.cpp and each transform in its own file.
#include "osprey/data/dataset.h"

#include <cmath>
#include <vector>

#include "osprey/core/error.h"

namespace osprey::data {
namespace detail {

int64_t IteratorImpl::skip(int64_t n) {
  int64_t done = 0;
  while (done < n && next()) ++done;
  return done;
}

uint64_t derive_epoch(uint64_t epoch, uint64_t i) noexcept {
  uint64_t z = epoch * 0x9E3779B97F4A7C15ull + (i + 1) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

class EmptyNode final : public Node {
 public:
  class It final : public IteratorImpl {
   public:
    std::optional<Element> next() override { return std::nullopt; }
  };
  std::unique_ptr<IteratorImpl> make_iterator(uint64_t) const override {
    return std::make_unique<It>();
  }
  int64_t cardinality() const override { return 0; }
  std::string label() const override { return "Empty"; }
};

}  // namespace
}  // namespace detail

// ---- Iterator ----

Iterator::Iterator(std::unique_ptr<detail::IteratorImpl> impl) : impl_(std::move(impl)) {}
Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&&) noexcept = default;
Iterator::~Iterator() = default;

std::optional<Element> Iterator::next() {
  if (!impl_) return std::nullopt;
  return impl_->next();
}

int64_t Iterator::skip(int64_t n) {
  OSPREY_CHECK(n >= 0, "Iterator::skip: n must be non-negative. Received: n={}", n);
  return impl_ ? impl_->skip(n) : 0;
}

// ---- Dataset ----

Dataset::Dataset() : Dataset(std::make_shared<detail::EmptyNode>()) {}

Dataset::Dataset(detail::NodePtr node)
    : node_(std::move(node)), epochs_(std::make_shared<std::atomic<uint64_t>>(0)) {
  OSPREY_ASSERT(node_ != nullptr, "Dataset: null node");
}

int64_t Dataset::cardinality() const { return node_->cardinality(); }

std::string Dataset::describe() const {
  std::vector<std::string> labels;
  for (const detail::Node* n = node_.get(); n; n = n->input()) labels.push_back(n->label());
  std::string s;
  for (auto it = labels.rbegin(); it != labels.rend(); ++it) {
    if (!s.empty()) s += " -> ";
    s += *it;
  }
  return s;
}

Iterator Dataset::iterator() const { return iterator(epochs_->fetch_add(1)); }

Iterator Dataset::iterator(uint64_t epoch) const { return Iterator(node_->make_iterator(epoch)); }

Iterator::Cursor Dataset::begin() const {
  return Iterator::Cursor(std::make_unique<Iterator>(iterator()));
}

namespace {

void check_splittable(const Dataset& ds, const char* op) {
  const int64_t n = ds.cardinality();
  OSPREY_CHECK(n >= 0,
               "{}: needs a dataset of known, finite cardinality. Received: a dataset of {} "
               "cardinality ({}); split before repeat/filter/unbatch, or take(n) first",
               op, n == kInfinite ? "infinite" : "unknown", ds.describe());
  OSPREY_CHECK(!ds.node()->order_varies_by_epoch(),
               "{}: the dataset reshuffles every epoch, so the two parts would share elements. "
               "Split before shuffle(), or shuffle with reshuffle_each_iteration=false ({})",
               op, ds.describe());
}

}  // namespace

std::pair<Dataset, Dataset> Dataset::split_tail(int64_t n) const {
  check_splittable(*this, "split_tail");
  const int64_t total = cardinality();
  OSPREY_CHECK(n >= 0 && n <= total,
               "split_tail: n must be in [0, {}] (the dataset's cardinality). Received: n={}",
               total, n);
  return {take(total - n), skip(total - n)};
}

std::pair<Dataset, Dataset> Dataset::split(double fraction) const {
  OSPREY_CHECK(fraction >= 0.0 && fraction <= 1.0,
               "split: fraction must be in [0, 1]. Received: fraction={}", fraction);
  check_splittable(*this, "split");
  const int64_t head =
      static_cast<int64_t>(std::floor(fraction * static_cast<double>(cardinality())));
  return {take(head), skip(head)};
}

}  // namespace osprey::data
