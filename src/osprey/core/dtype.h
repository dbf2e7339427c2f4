// DType: the element types a Tensor can hold, their names, sizes and promotion rules.
// Names equal the config strings ("float32", "bfloat16", "float8_e4m3fn", "bool"), so JSON and
// CLI flags round-trip. Promotion follows PyTorch's table (see promote_types below).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "osprey/core/error.h"
#include "osprey/core/float_types.h"

namespace osprey {

enum class DType : uint8_t {
  float64,
  float32,
  bfloat16,
  float16,
  float8_e4m3fn,
  float8_e5m2,
  int8,
  uint8,
  int32,
  int64,
  boolean,  // spelled "bool" in configs and printing
};
inline constexpr int kNumDTypes = 11;

std::string_view dtype_name(DType d) noexcept;
// Parses a config string ("float32", "f32", "bf16", "bool" ...); throws ValueError naming it.
DType parse_dtype(std::string_view name);
size_t dtype_size(DType d) noexcept;
bool is_floating(DType d) noexcept;       // float64 .. float8_e5m2
bool is_low_precision(DType d) noexcept;  // bfloat16, float16, float8_*: computed through float32
bool is_integral(DType d) noexcept;       // int8 .. int64 and bool

// Result dtype of a binary op, as PyTorch: floating beats integral beats bool; among floats the
// wider wins; bfloat16 with float16 gives float32 (neither holds the other); the two float8s
// promote to float32 with each other and to any wider float; int8 with uint8 gives int16 in
// PyTorch, which osprey lacks, so int32; among integers the wider wins.
DType promote_types(DType a, DType b) noexcept;

// Element type of a DType, for templates: CType<DType::float32> is float.
template <DType D>
struct CTypeOf;
template <>
struct CTypeOf<DType::float64> {
  using type = double;
};
template <>
struct CTypeOf<DType::float32> {
  using type = float;
};
template <>
struct CTypeOf<DType::bfloat16> {
  using type = bfloat16;
};
template <>
struct CTypeOf<DType::float16> {
  using type = float16;
};
template <>
struct CTypeOf<DType::float8_e4m3fn> {
  using type = float8_e4m3fn;
};
template <>
struct CTypeOf<DType::float8_e5m2> {
  using type = float8_e5m2;
};
template <>
struct CTypeOf<DType::int8> {
  using type = int8_t;
};
template <>
struct CTypeOf<DType::uint8> {
  using type = uint8_t;
};
template <>
struct CTypeOf<DType::int32> {
  using type = int32_t;
};
template <>
struct CTypeOf<DType::int64> {
  using type = int64_t;
};
template <>
struct CTypeOf<DType::boolean> {
  using type = bool;
};
template <DType D>
using CType = typename CTypeOf<D>::type;

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<double>() {
  return DType::float64;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::float32;
}
template <>
constexpr DType dtype_of<bfloat16>() {
  return DType::bfloat16;
}
template <>
constexpr DType dtype_of<float16>() {
  return DType::float16;
}
template <>
constexpr DType dtype_of<float8_e4m3fn>() {
  return DType::float8_e4m3fn;
}
template <>
constexpr DType dtype_of<float8_e5m2>() {
  return DType::float8_e5m2;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::int8;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::uint8;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::int32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::int64;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::boolean;
}

// Converts any element type to and from double, the common currency of reference kernels.
template <class T>
inline double to_double(T v) noexcept {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<double>(v);
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}
namespace detail {
// double -> float rounding to odd: a second rounding (float -> bf16/f16/f8, all narrower than
// float by more than one bit) then gives the correctly rounded result, never a double rounding.
inline float to_float_round_odd(double v) noexcept {
  float f = static_cast<float>(v);
  if (std::isfinite(f) && static_cast<double>(f) != v) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    if (std::fabs(static_cast<double>(f)) > std::fabs(v)) u -= 1;  // truncate toward zero
    f = std::bit_cast<float>(u | 1u);
  }
  return f;
}
}  // namespace detail

template <class T>
inline T from_double(double v) noexcept {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<T>(v);
  } else {
    return T(detail::to_float_round_odd(v));
  }
}

// Calls fn(T{}) with the element type of d: OSPREY dispatch without macros.
template <class Fn>
decltype(auto) visit_dtype(DType d, Fn&& fn) {
  switch (d) {
    case DType::float64:
      return fn(double{});
    case DType::float32:
      return fn(float{});
    case DType::bfloat16:
      return fn(bfloat16{});
    case DType::float16:
      return fn(float16{});
    case DType::float8_e4m3fn:
      return fn(float8_e4m3fn{});
    case DType::float8_e5m2:
      return fn(float8_e5m2{});
    case DType::int8:
      return fn(int8_t{});
    case DType::uint8:
      return fn(uint8_t{});
    case DType::int32:
      return fn(int32_t{});
    case DType::int64:
      return fn(int64_t{});
    case DType::boolean:
      return fn(bool{});
  }
  OSPREY_ASSERT(false, "visit_dtype: unknown dtype {}", static_cast<int>(d));
}

}  // namespace osprey
