#include "osprey/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <ostream>

#include "osprey/tensor/allocator.h"
#include "osprey/tensor/backend.h"

namespace osprey {

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  check_device(device, "Tensor");
  data_ = Allocator::instance().allocate(bytes);
}

Storage::~Storage() { Allocator::instance().deallocate(data_, bytes_); }

Tensor Tensor::empty(const Shape& shape, TensorOptions options) {
  // The strides multiply every size, zeros counted as 1, so that product must fit too: a file's
  // header may claim [0, 2^38, 2^26] (no data, so no allocation), whose strides would overflow.
  int64_t span = static_cast<int64_t>(dtype_size(options.dtype));
  for (int i = 0; i < shape.ndim(); ++i) {
    OSPREY_CHECK(shape[i] >= 0, "Tensor::empty: sizes must be non-negative. Received shape {}",
                 shape.to_string());
    OSPREY_CHECK(!__builtin_mul_overflow(span, std::max<int64_t>(shape[i], 1), &span),
                 "Tensor::empty: shape {} is too large to address (its sizes, zeros counted as "
                 "1, multiply past 2^63 bytes)",
                 shape.to_string());
  }
  Tensor t;
  t.storage_ = std::make_shared<Storage>(
      static_cast<size_t>(shape.numel()) * dtype_size(options.dtype), options.device);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = options.dtype;
  return t;
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const Shape& shape,
                            const Shape& strides, int64_t offset, DType dtype) {
  OSPREY_CHECK(storage != nullptr, "Tensor::from_storage: storage is null");
  Tensor t;
  t.storage_ = std::move(storage);
  t.dtype_ = dtype;
  return t.as_strided(shape, strides, offset);
}

bool Tensor::is_contiguous() const noexcept {
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::raw_data() const noexcept {
  if (!storage_) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize());
}

void Tensor::check_dtype(DType expected, const char* op) const {
  OSPREY_CHECK(defined(), "{}: the tensor is undefined", op);
  OSPREY_CHECK(dtype_ == expected, "{}: expected a tensor of dtype {}. Received: {}", op,
               dtype_name(expected), describe());
}

namespace {
// Replaces a single -1 by the size that keeps numel; checks the element count.
Shape infer_shape(const Shape& requested, int64_t numel, const Shape& from, const char* op) {
  Shape s = requested;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < s.ndim(); ++i) {
    if (s[i] == -1) {
      OSPREY_CHECK(infer < 0, "{}: only one dimension can be -1. Received: {}", op,
                   requested.to_string());
      infer = i;
    } else {
      OSPREY_CHECK(s[i] >= 0, "{}: invalid size {} in shape {}", op, s[i], requested.to_string());
      known *= s[i];
    }
  }
  if (infer >= 0) {
    OSPREY_CHECK(known != 0 && numel % known == 0,
                 "{}: cannot reshape a tensor of shape {} ({} elements) into {}", op,
                 from.to_string(), numel, requested.to_string());
    s[infer] = numel / known;
  }
  OSPREY_CHECK(s.numel() == numel,
               "{}: cannot reshape a tensor of shape {} ({} elements) into {} ({} elements)", op,
               from.to_string(), numel, s.to_string(), s.numel());
  return s;
}

// Strides that view `old` (shape/strides) as `shape` without copying, if any (PyTorch's rule:
// each run of merged old dimensions must be contiguous within itself).
bool view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& shape,
                  Shape& out) {
  out = Shape::filled(shape.ndim(), 1);
  if (old_shape.ndim() == 0) return true;  // a 0-d tensor: any all-ones shape views it (PyTorch)
  if (old_shape.numel() == 0) {
    out = contiguous_strides(shape);
    return true;
  }
  int64_t view_d = shape.ndim() - 1;
  int64_t chunk_base_stride = old_strides.ndim() ? old_strides[old_strides.ndim() - 1] : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = old_shape.ndim() - 1; d >= 0; --d) {
    tensor_numel *= old_shape[static_cast<int>(d)];
    if (d == 0 || (old_shape[static_cast<int>(d - 1)] != 1 &&
                   old_strides[static_cast<int>(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[static_cast<int>(view_d)] == 1)) {
        out[static_cast<int>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= shape[static_cast<int>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = old_strides[static_cast<int>(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}
}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  OSPREY_CHECK(defined(), "view: the tensor is undefined");
  const Shape s = infer_shape(shape, numel(), shape_, "view");
  Shape st;
  OSPREY_CHECK(view_strides(shape_, strides_, s, st),
               "view: a tensor of shape {} with strides {} cannot be viewed as {}; call reshape() "
               "(which copies) or contiguous() first",
               shape_.to_string(), strides_.to_string(), s.to_string());
  Tensor t = *this;
  t.shape_ = s;
  t.strides_ = st;
  return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
  OSPREY_CHECK(defined(), "reshape: the tensor is undefined");
  const Shape s = infer_shape(shape, numel(), shape_, "reshape");
  Shape st;
  if (view_strides(shape_, strides_, s, st)) {
    Tensor t = *this;
    t.shape_ = s;
    t.strides_ = st;
    return t;
  }
  return contiguous().view(s);
}

Tensor Tensor::flatten(int start_axis, int end_axis) const {
  if (ndim() == 0) return reshape({1});
  const int a = normalize_axis(start_axis, ndim(), "flatten");
  const int b = normalize_axis(end_axis, ndim(), "flatten");
  OSPREY_CHECK(a <= b, "flatten: start_axis {} comes after end_axis {}", start_axis, end_axis);
  Shape s;
  for (int i = 0; i < a; ++i) s.push_back(shape_[i]);
  int64_t m = 1;
  for (int i = a; i <= b; ++i) m *= shape_[i];
  s.push_back(m);
  for (int i = b + 1; i < ndim(); ++i) s.push_back(shape_[i]);
  return reshape(s);
}

Tensor Tensor::transpose(int axis0, int axis1) const {
  const int a = normalize_axis(axis0, ndim(), "transpose");
  const int b = normalize_axis(axis1, ndim(), "transpose");
  Tensor t = *this;
  std::swap(t.shape_[a], t.shape_[b]);
  std::swap(t.strides_[a], t.strides_[b]);
  return t;
}

Tensor Tensor::permute(std::span<const int> axes) const {
  OSPREY_CHECK(static_cast<int>(axes.size()) == ndim(),
               "permute: expected {} axes for a tensor of shape {}. Received {} axes", ndim(),
               shape_.to_string(), axes.size());
  Tensor t = *this;
  std::array<bool, kMaxDims> seen{};
  for (int i = 0; i < ndim(); ++i) {
    const int a = normalize_axis(axes[static_cast<size_t>(i)], ndim(), "permute");
    OSPREY_CHECK(!seen[static_cast<size_t>(a)], "permute: axis {} appears twice", a);
    seen[static_cast<size_t>(a)] = true;
    t.shape_[i] = shape_[a];
    t.strides_[i] = strides_[a];
  }
  return t;
}

Tensor Tensor::slice(int axis, int64_t start, int64_t stop, int64_t step) const {
  const int a = normalize_axis(axis, ndim(), "slice");
  OSPREY_CHECK(step > 0, "slice: step must be positive. Received: step={}", step);
  const int64_t n = shape_[a];
  auto clampi = [n](int64_t v) {
    if (v < 0) v += n;
    return std::clamp<int64_t>(v, 0, n);
  };
  const int64_t b = clampi(start);
  const int64_t e = std::max(b, clampi(stop));
  Tensor t = *this;
  t.offset_ += b * strides_[a];
  t.shape_[a] = (e - b + step - 1) / step;
  t.strides_[a] = strides_[a] * step;
  return t;
}

Tensor Tensor::narrow(int axis, int64_t start, int64_t length) const {
  const int a = normalize_axis(axis, ndim(), "narrow");
  OSPREY_CHECK(start >= 0 && length >= 0 && start + length <= shape_[a],
               "narrow: range [{}, {}) is outside axis {} of size {}", start, start + length, a,
               shape_[a]);
  return slice(a, start, start + length);
}

Tensor Tensor::select(int axis, int64_t index) const {
  const int a = normalize_axis(axis, ndim(), "select");
  const int64_t n = shape_[a];
  OSPREY_CHECK(index >= -n && index < n, "select: index {} is out of range for axis {} of size {}",
               index, a, n);
  if (index < 0) index += n;
  Tensor t = *this;
  t.offset_ += index * strides_[a];
  t.shape_.erase(a);
  t.strides_.erase(a);
  return t;
}

Tensor Tensor::expand(const Shape& shape) const {
  OSPREY_CHECK(shape.ndim() >= ndim(), "expand: cannot expand shape {} to fewer dimensions {}",
               shape_.to_string(), shape.to_string());
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = Shape::filled(shape.ndim(), 0);
  const int lead = shape.ndim() - ndim();
  for (int i = 0; i < shape.ndim(); ++i) {
    const int j = i - lead;
    if (j < 0) continue;
    if (shape_[j] == shape[i]) {
      t.strides_[i] = strides_[j];
    } else {
      OSPREY_CHECK(shape_[j] == 1,
                   "expand: shape {} cannot be broadcast to {} (dimension {}: {} vs {})",
                   shape_.to_string(), shape.to_string(), i, shape_[j], shape[i]);
    }
  }
  return t;
}

Tensor Tensor::squeeze(int axis) const {
  const int a = normalize_axis(axis, ndim(), "squeeze");
  OSPREY_CHECK(shape_[a] == 1, "squeeze: axis {} of shape {} has size {}, expected 1", a,
               shape_.to_string(), shape_[a]);
  Tensor t = *this;
  t.shape_.erase(a);
  t.strides_.erase(a);
  return t;
}

Tensor Tensor::unsqueeze(int axis) const {
  const int a = normalize_axis(axis, ndim() + 1, "unsqueeze");
  Tensor t = *this;
  const int64_t st = a < ndim() ? strides_[a] * shape_[a] : 1;
  t.shape_.insert(a, 1);
  t.strides_.insert(a, st);
  return t;
}

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t offset) const {
  OSPREY_CHECK(defined(), "as_strided: the tensor is undefined");
  OSPREY_CHECK(shape.ndim() == strides.ndim(), "as_strided: shape {} and strides {} differ in rank",
               shape.to_string(), strides.to_string());
  OSPREY_CHECK(offset >= 0, "as_strided: negative offset {}", offset);
  int64_t lo = offset, hi = offset;
  for (int i = 0; i < shape.ndim(); ++i) {
    OSPREY_CHECK(shape[i] >= 0, "as_strided: negative size in shape {}", shape.to_string());
    if (shape[i] == 0) {
      lo = hi = offset;
      break;
    }
    const int64_t span = (shape[i] - 1) * strides[i];
    (span < 0 ? lo : hi) += span;
  }
  const int64_t capacity = static_cast<int64_t>(storage_->bytes() / itemsize());
  OSPREY_CHECK(
      shape.numel() == 0 || (lo >= 0 && hi < capacity),
      "as_strided: shape {} with strides {} at offset {} reaches elements [{}, {}] outside a "
      "storage of {} elements",
      shape.to_string(), strides.to_string(), offset, lo, hi, capacity);
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = strides;
  t.offset_ = offset;
  return t;
}

Tensor Tensor::contiguous() const {
  if (!defined() || is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  OSPREY_CHECK(defined(), "clone: the tensor is undefined");
  Tensor t = empty(shape_, {dtype_, device()});
  backend_for(device()).copy(*this, t);
  return t;
}

Tensor Tensor::to(DType dtype) const {
  OSPREY_CHECK(defined(), "to: the tensor is undefined");
  if (dtype == dtype_) return *this;
  Tensor t = empty(shape_, {dtype, device()});
  backend_for(device()).copy(*this, t);
  return t;
}

Tensor Tensor::to(Device device) const {
  OSPREY_CHECK(defined(), "to: the tensor is undefined");
  if (device == this->device()) return *this;
  Tensor t = empty(shape_, {dtype_, device});
  backend_for(device).copy(*this, t);
  return t;
}

Tensor& Tensor::copy_(const Tensor& src) {
  OSPREY_CHECK(defined() && src.defined(), "copy_: the tensor is undefined");
  const Tensor s = src.shape_ == shape_ ? src : src.expand(shape_);
  backend_for(device()).copy(s, *this);
  return *this;
}

Tensor& Tensor::fill_(double value) {
  OSPREY_CHECK(defined(), "fill_: the tensor is undefined");
  backend_for(device()).fill(*this, value);
  return *this;
}

int64_t Tensor::element_offset(std::initializer_list<int64_t> index, const char* op) const {
  OSPREY_CHECK(defined(), "{}: the tensor is undefined", op);
  OSPREY_CHECK(static_cast<int>(index.size()) == ndim(),
               "{}: expected {} indices for shape {}. Received {}", op, ndim(), shape_.to_string(),
               index.size());
  int64_t o = offset_;
  int d = 0;
  for (int64_t i : index) {
    OSPREY_CHECK(i >= -shape_[d] && i < shape_[d],
                 "{}: index {} is out of range for axis {} of size {}", op, i, d, shape_[d]);
    if (i < 0) i += shape_[d];
    o += i * strides_[d];
    ++d;
  }
  return o;
}

namespace {
double load_element(const Tensor& t, int64_t element) {
  const char* base =
      static_cast<const char*>(t.storage()->data()) + element * static_cast<int64_t>(t.itemsize());
  return visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, base, sizeof(T));
    return to_double(v);
  });
}
void store_element(const Tensor& t, int64_t element, double value) {
  char* base =
      static_cast<char*>(t.storage()->data()) + element * static_cast<int64_t>(t.itemsize());
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = from_double<T>(value);
    std::memcpy(base, &v, sizeof(T));
  });
}
}  // namespace

double Tensor::item() const {
  OSPREY_CHECK(defined() && numel() == 1, "item: expected a tensor with one element. Received: {}",
               defined() ? describe() : std::string("an undefined tensor"));
  return load_element(*this, offset_);
}

double Tensor::at(std::initializer_list<int64_t> index) const {
  return load_element(*this, element_offset(index, "at"));
}

void Tensor::set(std::initializer_list<int64_t> index, double value) {
  store_element(*this, element_offset(index, "set"), value);
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  return fmt::format("{}{} on {}", dtype_name(dtype_), shape_.to_string(), device().to_string());
}

namespace {
constexpr int64_t kPrintThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

std::string format_value(double v, DType d) {
  if (d == DType::boolean) return v != 0 ? "True" : "False";
  if (is_integral(d)) return fmt::format("{}", static_cast<int64_t>(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e8 || a < 1e-4)) return fmt::format("{:.4e}", v);
  return fmt::format("{:.4f}", v);
}

void print_rec(const Tensor& t, int axis, int64_t offset, bool summarize, int indent,
               std::string& out) {
  const int64_t n = t.shape()[axis];
  out += '[';
  const bool last = axis == t.ndim() - 1;
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      out += last ? "..., " : "...,\n" + std::string(static_cast<size_t>(indent + axis + 1), ' ');
      i = n - kEdgeItems;
    }
    const int64_t o = offset + i * t.strides()[axis];
    if (last) {
      out += format_value(load_element(t, o), t.dtype());
    } else {
      print_rec(t, axis + 1, o, summarize, indent, out);
    }
    if (i + 1 < n) {
      out += last ? ", " : ",\n" + std::string(static_cast<size_t>(indent + axis + 1), ' ');
    }
  }
  out += ']';
}
}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::string out = "tensor(";
  if (ndim() == 0) {
    out += format_value(load_element(*this, offset_), dtype_);
  } else {
    print_rec(*this, 0, offset_, numel() > kPrintThreshold, 7, out);
  }
  return out + fmt::format(", dtype={})", dtype_name(dtype_));
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace osprey
