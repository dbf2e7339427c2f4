// Dataset sources that need no file: slices of in-memory tensors, integer ranges, generators.
#include <utility>

#include "osprey/core/error.h"
#include "osprey/data/dataset.h"
#include "osprey/tensor/factory.h"

namespace osprey::data {
namespace {

// Element i is row i of every tensor (views, no copy); skip() is O(1).
class TensorsNode final : public detail::Node {
 public:
  explicit TensorsNode(Element parts)
      : parts_(std::move(parts)), rows_(leading_dim(parts_, "from_tensors")) {}

  class It final : public detail::IteratorImpl {
   public:
    explicit It(std::shared_ptr<const TensorsNode> node) : node_(std::move(node)) {}
    std::optional<Element> next() override {
      if (i_ >= node_->rows_) return std::nullopt;
      return slice_row(node_->parts_, i_++);
    }
    int64_t skip(int64_t n) override {
      const int64_t k = std::min(n, node_->rows_ - i_);
      i_ += k;
      return k;
    }

   private:
    std::shared_ptr<const TensorsNode> node_;
    int64_t i_ = 0;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t) const override {
    return std::make_unique<It>(self<TensorsNode>());
  }
  int64_t cardinality() const override { return rows_; }
  std::string label() const override { return fmt::format("FromTensors({})", rows_); }

 private:
  Element parts_;
  int64_t rows_;
};

class RangeNode final : public detail::Node {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step) : start_(start), step_(step) {
    OSPREY_CHECK(step != 0, "range: step must not be zero");
    const int64_t span = step > 0 ? stop - start : start - stop;
    const int64_t s = step > 0 ? step : -step;
    count_ = span <= 0 ? 0 : (span + s - 1) / s;
  }

  class It final : public detail::IteratorImpl {
   public:
    It(int64_t start, int64_t step, int64_t count) : start_(start), step_(step), count_(count) {}
    std::optional<Element> next() override {
      if (i_ >= count_) return std::nullopt;
      Tensor t = Tensor::empty(Shape{}, {DType::int64});
      *t.data<int64_t>() = start_ + step_ * i_++;
      return Element{t};
    }
    int64_t skip(int64_t n) override {
      const int64_t k = std::min(n, count_ - i_);
      i_ += k;
      return k;
    }

   private:
    int64_t start_, step_, count_, i_ = 0;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t) const override {
    return std::make_unique<It>(start_, step_, count_);
  }
  int64_t cardinality() const override { return count_; }
  std::string label() const override { return fmt::format("Range({})", count_); }

 private:
  int64_t start_, step_, count_ = 0;
};

class GeneratorNode final : public detail::Node {
 public:
  GeneratorNode(GeneratorFactory factory, int64_t cardinality)
      : factory_(std::move(factory)), cardinality_(cardinality) {
    OSPREY_CHECK(factory_ != nullptr, "from_generator: the factory is empty");
    OSPREY_CHECK(cardinality >= 0 || cardinality == kInfinite || cardinality == kUnknown,
                 "from_generator: cardinality must be >= 0, kInfinite or kUnknown. Received: {}",
                 cardinality);
  }

  class It final : public detail::IteratorImpl {
   public:
    explicit It(Generator gen) : gen_(std::move(gen)) {}
    std::optional<Element> next() override {
      if (done_) return std::nullopt;
      std::optional<Element> e = gen_();
      if (!e) done_ = true;  // a generator that ended stays ended
      return e;
    }

   private:
    Generator gen_;
    bool done_ = false;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    Generator gen = factory_(epoch);
    OSPREY_CHECK(gen != nullptr, "from_generator: the factory returned an empty generator");
    return std::make_unique<It>(std::move(gen));
  }
  int64_t cardinality() const override { return cardinality_; }
  std::string label() const override { return "FromGenerator"; }

 private:
  GeneratorFactory factory_;
  int64_t cardinality_;
};

}  // namespace

Dataset Dataset::from_tensors(Element parts) {
  return Dataset(std::make_shared<TensorsNode>(std::move(parts)));
}

Dataset Dataset::range(int64_t stop) { return range(0, stop, 1); }

Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  return Dataset(std::make_shared<RangeNode>(start, stop, step));
}

Dataset Dataset::from_generator(GeneratorFactory factory, int64_t cardinality) {
  return Dataset(std::make_shared<GeneratorNode>(std::move(factory), cardinality));
}

}  // namespace osprey::data
