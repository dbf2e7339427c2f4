#include "osprey/core/shape.h"

#include <algorithm>

#include "osprey/core/error.h"

namespace osprey {

Shape::Shape(std::initializer_list<int64_t> dims)
    : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  OSPREY_CHECK(dims.size() <= static_cast<size_t>(kMaxDims),
               "Shape: at most {} dimensions are supported. Received: {} dimensions", kMaxDims,
               dims.size());
  ndim_ = static_cast<int>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) dims_[i] = dims[i];
}

Shape Shape::filled(int ndim, int64_t value) {
  OSPREY_CHECK(ndim >= 0 && ndim <= kMaxDims, "Shape: ndim must be in [0, {}]. Received: {}",
               kMaxDims, ndim);
  Shape s;
  s.ndim_ = ndim;
  for (int i = 0; i < ndim; ++i) s.dims_[static_cast<size_t>(i)] = value;
  return s;
}

int64_t Shape::at(int axis) const { return (*this)[normalize_axis(axis, ndim_, "Shape::at")]; }

int64_t Shape::numel() const noexcept {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= dims_[static_cast<size_t>(i)];
  return n;
}

void Shape::push_back(int64_t d) { insert(ndim_, d); }

void Shape::insert(int pos, int64_t d) {
  OSPREY_CHECK(ndim_ < kMaxDims, "Shape: at most {} dimensions are supported", kMaxDims);
  OSPREY_ASSERT(pos >= 0 && pos <= ndim_, "Shape::insert position {} for ndim {}", pos, ndim_);
  for (int i = ndim_; i > pos; --i)
    dims_[static_cast<size_t>(i)] = dims_[static_cast<size_t>(i - 1)];
  dims_[static_cast<size_t>(pos)] = d;
  ++ndim_;
}

void Shape::erase(int pos) {
  OSPREY_ASSERT(pos >= 0 && pos < ndim_, "Shape::erase position {} for ndim {}", pos, ndim_);
  for (int i = pos; i + 1 < ndim_; ++i)
    dims_[static_cast<size_t>(i)] = dims_[static_cast<size_t>(i) + 1];
  --ndim_;
  dims_[static_cast<size_t>(ndim_)] = 0;
}

bool Shape::operator==(const Shape& o) const noexcept {
  if (ndim_ != o.ndim_) return false;
  for (int i = 0; i < ndim_; ++i) {
    if (dims_[static_cast<size_t>(i)] != o.dims_[static_cast<size_t>(i)]) return false;
  }
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < ndim_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[static_cast<size_t>(i)]);
  }
  return s + "]";
}

int normalize_axis(int axis, int ndim, const char* op) {
  const int lo = ndim == 0 ? -1 : -ndim;
  const int hi = ndim == 0 ? 0 : ndim - 1;
  OSPREY_CHECK(axis >= lo && axis <= hi,
               "{}: axis {} is out of range for a tensor of rank {} (expected an axis in [{}, {}])",
               op, axis, ndim, lo, hi);
  return axis < 0 ? axis + std::max(ndim, 1) : axis;
}

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int a : axes) {
    const int n = normalize_axis(a, ndim, op);
    OSPREY_CHECK(std::find(out.begin(), out.end(), n) == out.end(), "{}: axis {} is repeated", op,
                 a);
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int n = std::max(a.ndim(), b.ndim());
  Shape out = Shape::filled(n, 1);
  for (int i = 0; i < n; ++i) {
    const int ia = a.ndim() - n + i;
    const int ib = b.ndim() - n + i;
    const int64_t da = ia >= 0 ? a[ia] : 1;
    const int64_t db = ib >= 0 ? b[ib] : 1;
    OSPREY_CHECK(da == db || da == 1 || db == 1,
                 "{}: shapes {} and {} cannot be broadcast together (dimension {}: {} vs {})", op,
                 a.to_string(), b.to_string(), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape contiguous_strides(const Shape& shape) {
  Shape s = Shape::filled(shape.ndim(), 1);
  int64_t acc = 1;
  for (int i = shape.ndim() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

}  // namespace osprey
