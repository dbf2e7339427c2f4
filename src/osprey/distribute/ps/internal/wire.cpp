// Tensors to and from TensorData (wire.h). Sizes are checked in integer arithmetic that cannot
// overflow before anything is allocated: a hostile shape such as [2^40, 2^40] is an error, not
// a huge allocation.
#include "osprey/distribute/ps/internal/wire.h"

#include <cstring>
#include <limits>
#include <optional>

#include "osprey/core/error.h"
#include "osprey/core/float_convert.h"

namespace osprey::distribute::ps {

namespace {

// Only osprey's own names travel on the wire (no aliases such as "f32").
std::optional<DType> wire_dtype(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    if (dtype_name(d) == name) return d;
  }
  return std::nullopt;
}

std::string shape_text(const TensorData& d) {
  std::string s = "[";
  for (int i = 0; i < d.shape_size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(d.shape(i));
  }
  return s + "]";
}

// The element count of d's shape; ValueError for a negative dimension, too many dimensions, or
// a count whose bytes (elem_size each) overflow int64.
int64_t checked_numel(const TensorData& d, size_t elem_size, std::string_view what) {
  OSPREY_CHECK(d.shape_size() <= kMaxDims,
               "{}: tensor '{}' has {} dimensions; at most {} are supported. Received: shape={}",
               what, d.name(), d.shape_size(), kMaxDims, shape_text(d));
  const auto limit = std::numeric_limits<int64_t>::max() / static_cast<int64_t>(elem_size);
  int64_t n = 1;
  for (int i = 0; i < d.shape_size(); ++i) {
    const int64_t dim = d.shape(i);
    OSPREY_CHECK(dim >= 0,
                 "{}: tensor '{}' has a negative dimension; expected sizes >= 0. Received: "
                 "shape={}",
                 what, d.name(), shape_text(d));
    OSPREY_CHECK(dim == 0 || n <= limit / dim,
                 "{}: tensor '{}' is too large: its shape overflows. Received: shape={}", what,
                 d.name(), shape_text(d));
    n *= dim;
  }
  return n;
}

}  // namespace

void to_wire(const Tensor& t, const std::string& name, TensorData* out, bool bf16) {
  OSPREY_CHECK(t.defined(), "to_wire: tensor '{}' is undefined", name);
  const Tensor c = t.to(Device::cpu(0)).contiguous();
  out->set_name(name);
  out->clear_shape();
  for (const int64_t dim : c.shape()) out->add_shape(dim);
  const int64_t n = c.numel();
  std::string* data = out->mutable_data();
  if (bf16 && c.dtype() == DType::float32) {
    out->set_dtype(std::string(dtype_name(DType::bfloat16)));
    data->resize(static_cast<size_t>(n) * sizeof(bfloat16));
    convert(c.data<float>(), reinterpret_cast<bfloat16*>(data->data()), n);
  } else {
    out->set_dtype(std::string(dtype_name(c.dtype())));
    data->resize(c.nbytes());
    if (n > 0) std::memcpy(data->data(), c.raw_data(), c.nbytes());
  }
}

Tensor from_wire(const TensorData& d, std::string_view what) {
  const std::optional<DType> dtype = wire_dtype(d.dtype());
  OSPREY_CHECK(dtype.has_value(),
               "{}: tensor '{}' has an unknown dtype '{}'; expected one of osprey's dtype names "
               "(float32, bfloat16, int64, ...)",
               what, d.name(), d.dtype());
  const size_t elem = dtype_size(*dtype);
  const int64_t n = checked_numel(d, elem, what);
  const auto expected = static_cast<uint64_t>(n) * elem;
  OSPREY_CHECK(d.data().size() == expected,
               "{}: tensor '{}' ({} {}) should carry {} bytes of data. Received: {} bytes", what,
               d.name(), d.dtype(), shape_text(d), expected, d.data().size());
  Shape shape;
  for (int i = 0; i < d.shape_size(); ++i) shape.push_back(d.shape(i));
  Tensor t = Tensor::empty(shape, {.dtype = *dtype});
  if (expected > 0) std::memcpy(t.raw_data(), d.data().data(), expected);
  return t;
}

Tensor floats_from_wire(const TensorData& d, std::string_view what) {
  const bool bf16 = d.dtype() == dtype_name(DType::bfloat16);
  OSPREY_CHECK(bf16 || d.dtype() == dtype_name(DType::float32),
               "{}: tensor '{}' must be float32 or bfloat16. Received: dtype '{}'", what, d.name(),
               d.dtype());
  const int64_t n = checked_numel(d, bf16 ? sizeof(bfloat16) : sizeof(float), what);
  const auto bytes = static_cast<uint64_t>(n) * (bf16 ? sizeof(bfloat16) : sizeof(float));
  OSPREY_CHECK(d.data().size() == bytes,
               "{}: tensor '{}' ({} {}) should carry {} bytes of data. Received: {} bytes", what,
               d.name(), d.dtype(), shape_text(d), bytes, d.data().size());
  Shape shape;
  for (int i = 0; i < d.shape_size(); ++i) shape.push_back(d.shape(i));
  Tensor t = Tensor::empty(shape);
  read_floats(d, t.data<float>(), n, what);
  return t;
}

void read_floats(const TensorData& d, float* dst, int64_t n, std::string_view what) {
  const bool f32 = d.dtype() == dtype_name(DType::float32);
  const bool bf16 = d.dtype() == dtype_name(DType::bfloat16);
  OSPREY_CHECK(f32 || bf16, "{}: tensor '{}' must be float32 or bfloat16. Received: dtype '{}'",
               what, d.name(), d.dtype());
  const size_t elem = f32 ? sizeof(float) : sizeof(bfloat16);
  const int64_t count = checked_numel(d, elem, what);
  OSPREY_CHECK(count == n,
               "{}: tensor '{}' should have {} elements. Received: shape={} ({} elements)", what,
               d.name(), n, shape_text(d), count);
  const auto expected = static_cast<uint64_t>(count) * elem;
  OSPREY_CHECK(d.data().size() == expected,
               "{}: tensor '{}' ({} {}) should carry {} bytes of data. Received: {} bytes", what,
               d.name(), d.dtype(), shape_text(d), expected, d.data().size());
  if (n == 0) return;
  if (f32) {
    std::memcpy(dst, d.data().data(), expected);
  } else {
    // The bytes of a protobuf string need not be 2-byte aligned: convert from an aligned view
    // only when they are, else go through the scalar conversion.
    const char* src = d.data().data();
    if (reinterpret_cast<uintptr_t>(src) % alignof(bfloat16) == 0) {
      convert(reinterpret_cast<const bfloat16*>(src), dst, n);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, sizeof(bits));
        dst[i] = detail::bf16_bits_to_f32(bits);
      }
    }
  }
}

}  // namespace osprey::distribute::ps
