// Element: one item a Dataset yields, a short list of tensors (features, labels, weights...),
// and the two copies the pipeline makes of elements: stacking them into a batch and slicing a
// batch back into rows. Elements may share storage with the tensors they came from (slicing a
// source is a view), so treat them as read-only: a map returns new tensors.
//   auto ds = Dataset::from_tensors({x, y}).batch(32);   // x: [N, 28, 28], y: [N]
//   for (auto& b : ds) { const Tensor& images = b[0]; const Tensor& labels = b[1]; }
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "osprey/tensor/tensor.h"

namespace osprey::data {

class Element {
 public:
  Element() = default;
  Element(std::initializer_list<Tensor> parts) : parts_(parts) {}
  explicit Element(std::vector<Tensor> parts) : parts_(std::move(parts)) {}

  size_t size() const noexcept { return parts_.size(); }
  bool empty() const noexcept { return parts_.empty(); }
  Tensor& operator[](size_t i) { return parts_[i]; }
  const Tensor& operator[](size_t i) const { return parts_[i]; }
  // Checked access; throws ValueError naming the index and the element's size.
  const Tensor& at(size_t i) const;
  // Keras's (x, y) convention: the first and second component.
  const Tensor& x() const { return at(0); }
  const Tensor& y() const { return at(1); }

  void push_back(Tensor t) { parts_.push_back(std::move(t)); }
  auto begin() noexcept { return parts_.begin(); }
  auto end() noexcept { return parts_.end(); }
  auto begin() const noexcept { return parts_.begin(); }
  auto end() const noexcept { return parts_.end(); }
  std::vector<Tensor>& tensors() noexcept { return parts_; }
  const std::vector<Tensor>& tensors() const noexcept { return parts_; }

  // "(float32[28, 28], int64[])"
  std::string describe() const;

 private:
  std::vector<Tensor> parts_;
};

// Stacks elements of one structure into one element whose component j is [n, ...shape_j].
// Rows are copied with one memcpy each; rows that already lie back to back in one storage (an
// unshuffled slice of a contiguous source) become a view with no copy at all. Throws
// ValueError naming the element and component whose shape or dtype differs.
Element stack_elements(const std::vector<Element>& elements, const char* op = "batch");

// Stacks elements whose components share a rank but not a shape (sequences of different
// lengths): component j becomes [n, ...the largest size along each axis], each element in its
// leading corner and padding_value around it (tf.data's padded_batch). ValueError naming the
// element and component whose rank or dtype differs.
Element pad_and_stack_elements(const std::vector<Element>& elements, double padding_value,
                               const char* op = "padded_batch");

// Number of rows along axis 0 shared by every component; throws ValueError when a component
// is a scalar or the components disagree.
int64_t leading_dim(const Element& e, const char* op);

// Row i of every component (views).
Element slice_row(const Element& e, int64_t i);
// Rows [begin, end) of every component (views).
Element slice_rows(const Element& e, int64_t begin, int64_t end);

}  // namespace osprey::data
