// batch(size, drop_remainder), padded_batch and unbatch(): stacking consecutive elements into
// [size, ...] tensors (stack_elements in element.cpp: one memcpy per row, or a view when the rows
// already lie back to back; pad_and_stack_elements when their shapes differ) and slicing batches
// back into rows (views).
#include <optional>
#include <utility>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/data/dataset.h"

namespace osprey::data {
namespace {

class BatchNode final : public detail::Node {
 public:
  // padding: unset for batch(), the padding value for padded_batch().
  BatchNode(detail::NodePtr input, int64_t size, bool drop_remainder,
            std::optional<double> padding = std::nullopt)
      : input_(std::move(input)), size_(size), drop_(drop_remainder), padding_(padding) {
    OSPREY_CHECK(size > 0, "{}: size must be positive. Received: size={}", op(), size);
  }
  const char* op() const { return padding_ ? "padded_batch" : "batch"; }

  class It final : public detail::IteratorImpl {
   public:
    It(const BatchNode& node, uint64_t epoch)
        : in_(node.input_->make_iterator(epoch)),
          size_(node.size_),
          drop_(node.drop_),
          padding_(node.padding_) {
      rows_.reserve(static_cast<size_t>(std::min<int64_t>(size_, 1 << 16)));
    }
    std::optional<Element> next() override {
      if (!in_) return std::nullopt;
      rows_.clear();
      while (static_cast<int64_t>(rows_.size()) < size_) {
        std::optional<Element> e = in_->next();
        if (!e) {
          in_.reset();
          break;
        }
        rows_.push_back(std::move(*e));
      }
      if (rows_.empty() || (drop_ && static_cast<int64_t>(rows_.size()) < size_))
        return std::nullopt;
      Element out = padding_ ? pad_and_stack_elements(rows_, *padding_, "padded_batch")
                             : stack_elements(rows_, "batch");
      rows_.clear();  // release the rows now, not at the next call
      return out;
    }
    int64_t skip(int64_t n) override {
      if (!in_ || n <= 0) return 0;
      const int64_t want = n > INT64_MAX / size_ ? INT64_MAX : n * size_;
      const int64_t got = in_->skip(want);
      if (got < want) in_.reset();
      return got / size_ + (!drop_ && got % size_ ? 1 : 0);
    }

   private:
    std::unique_ptr<detail::IteratorImpl> in_;
    int64_t size_;
    bool drop_;
    std::optional<double> padding_;
    std::vector<Element> rows_;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(*this, epoch);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return drop_ ? n / size_ : (n + size_ - 1) / size_;
  }
  std::string label() const override {
    const char* name = padding_ ? "PaddedBatch" : "Batch";
    return drop_ ? fmt::format("{}({}, drop_remainder)", name, size_)
                 : fmt::format("{}({})", name, size_);
  }
  const Node* input() const override { return input_.get(); }

 private:
  detail::NodePtr input_;
  int64_t size_;
  bool drop_;
  std::optional<double> padding_;
};

class UnbatchNode final : public detail::Node {
 public:
  explicit UnbatchNode(detail::NodePtr input) : input_(std::move(input)) {}

  class It final : public detail::IteratorImpl {
   public:
    It(const UnbatchNode& node, uint64_t epoch) : in_(node.input_->make_iterator(epoch)) {}
    std::optional<Element> next() override {
      while (row_ >= rows_) {
        std::optional<Element> e = in_->next();
        if (!e) return std::nullopt;
        rows_ = leading_dim(*e, "unbatch");
        row_ = 0;
        current_ = std::move(*e);
      }
      return slice_row(current_, row_++);
    }

   private:
    std::unique_ptr<detail::IteratorImpl> in_;
    Element current_;
    int64_t rows_ = 0, row_ = 0;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t epoch) const override {
    return std::make_unique<It>(*this, epoch);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    return n == 0 || n == kInfinite ? n : kUnknown;
  }
  std::string label() const override { return "Unbatch"; }
  const Node* input() const override { return input_.get(); }

 private:
  detail::NodePtr input_;
};

}  // namespace

Dataset Dataset::batch(int64_t size, bool drop_remainder) const {
  return Dataset(std::make_shared<BatchNode>(node_, size, drop_remainder));
}

Dataset Dataset::padded_batch(int64_t size, double padding_value, bool drop_remainder) const {
  return Dataset(std::make_shared<BatchNode>(node_, size, drop_remainder, padding_value));
}

Dataset Dataset::unbatch() const { return Dataset(std::make_shared<UnbatchNode>(node_)); }

}  // namespace osprey::data
