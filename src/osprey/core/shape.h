// Shape: the sizes (or strides) of a tensor, stored inline (up to kMaxDims) so that building,
// copying and comparing shapes on the hot path never allocates.
//   Shape s{128, 784};  s.numel() == 100352;  s.to_string() == "[128, 784]"
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace osprey {

inline constexpr int kMaxDims = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}
  static Shape filled(int ndim, int64_t value);

  int ndim() const noexcept { return ndim_; }
  bool empty() const noexcept { return ndim_ == 0; }
  int64_t operator[](int i) const noexcept { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) noexcept { return dims_[static_cast<size_t>(i)]; }
  // Size along an axis that may be negative (-1 = last); throws ValueError when out of range.
  int64_t at(int axis) const;
  int64_t numel() const noexcept;
  const int64_t* begin() const noexcept { return dims_.data(); }
  const int64_t* end() const noexcept { return dims_.data() + ndim_; }
  std::span<const int64_t> span() const noexcept {
    return {dims_.data(), static_cast<size_t>(ndim_)};
  }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }

  void push_back(int64_t d);
  void insert(int pos, int64_t d);
  void erase(int pos);

  bool operator==(const Shape& o) const noexcept;
  bool operator!=(const Shape& o) const noexcept { return !(*this == o); }
  std::string to_string() const;

 private:
  std::array<int64_t, kMaxDims> dims_{};
  int ndim_ = 0;
};

// Maps a possibly negative axis into [0, ndim); throws ValueError naming the op otherwise.
int normalize_axis(int axis, int ndim, const char* op);
// Sorted, normalized, unique axes ({} = all axes), as reductions take them; throws ValueError
// naming the op for an axis out of range or repeated. Shared by tensor's ops and autograd's.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op);
// The NumPy broadcast of two shapes; throws ValueError naming the op and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Row-major (C order) strides of a shape, in elements.
Shape contiguous_strides(const Shape& shape);

}  // namespace osprey
