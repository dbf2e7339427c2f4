// The 16- and 8-bit floating-point storage types: bfloat16, float16, float8_e4m3fn, float8_e5m2.
// Each is a bit pattern with conversions from and to float: round to nearest even, NaN kept NaN,
// Inf kept Inf where the format has one, and saturation to +-448 for e4m3fn (which has no Inf),
// as the OCP FP8 spec and ONNX's saturate mode define. Bulk conversions are in float_convert.h.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstdint>

namespace osprey {

namespace detail {

inline uint16_t f32_to_bf16_bits(float f) noexcept {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN: keep sign and payload top, quiet it
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_f32(uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// F16C is part of x86-64-v3, the baseline osprey builds for. The target attribute lets a project
// that includes this header without -mf16c (or -march) compile: there the two are called, not
// inlined.
__attribute__((target("f16c"))) inline uint16_t f32_to_f16_bits(float f) noexcept {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) inline float f16_bits_to_f32(uint16_t b) noexcept {
  return _cvtsh_ss(b);
}

// Rounds a magnitude (f32 bits with the sign cleared, finite, below the format's overflow point)
// to the code of a float8 with kMant mantissa bits and exponent bias kBias: round to nearest even,
// subnormals included. Integer arithmetic only, so the result never depends on the FP rounding
// mode or on DAZ/FTZ; float_convert.cpp vectorizes the same steps.
template <int kMant, int kBias>
inline uint32_t f8_round_magnitude(uint32_t u) noexcept {
  constexpr uint32_t kShift = 23 - kMant;
  constexpr uint32_t kMinNormalExp = 128 - kBias;  // f32 biased exponent of 2^(1-bias)
  const uint32_t exp = u >> 23;
  if (exp >= kMinNormalExp) {
    u += (1u << (kShift - 1)) - 1u + ((u >> kShift) & 1u);  // a carry bumps the exponent
    return (u >> kShift) - ((127u - kBias) << kMant);
  }
  // Subnormal target: count units of 2^(1-bias-mant); a count of 2^mant is the smallest normal.
  const uint32_t mant = (u & 0x7fffffu) | (exp != 0 ? 0x800000u : 0u);
  const uint32_t shift = std::min(151u - kBias - kMant - std::max(exp, 1u), 31u);
  return (mant + (1u << (shift - 1)) - 1u + ((mant >> shift) & 1u)) >> shift;
}

inline uint8_t f32_to_e4m3fn_bits(float f) noexcept {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7fffffffu;
  uint32_t code;
  if (a > 0x7f800000u) {
    code = 0x7fu;  // NaN
  } else if (a >= 0x43e00000u) {
    code = 0x7eu;  // >= 448, Inf included: saturate
  } else {
    code = f8_round_magnitude<3, 7>(a);
  }
  return static_cast<uint8_t>(sign | code);
}
// e4m3fn shifted into a float16 (same layout, exponent bias 15 instead of 7) is the value times
// 2^-8; the float16 decode handles subnormals in hardware and ignores DAZ.
inline float e4m3fn_bits_to_f32(uint8_t b) noexcept {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 8;
  const uint32_t mag = b & 0x7fu;
  const uint32_t h = mag == 0x7fu ? 0x7e00u : mag << 7;  // 0x7f and 0xff are the only NaNs
  return f16_bits_to_f32(static_cast<uint16_t>(sign | h)) * 256.0f;
}

inline uint8_t f32_to_e5m2_bits(float f) noexcept {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7fffffffu;
  uint32_t code;
  if (a > 0x7f800000u) {
    code = 0x7fu;  // NaN
  } else if (a >= 0x47700000u) {
    code = 0x7cu;  // 61440 = 57344 + half an ulp: from there on, round to nearest even gives Inf
  } else {
    code = f8_round_magnitude<2, 15>(a);
  }
  return static_cast<uint8_t>(sign | code);
}
inline float e5m2_bits_to_f32(uint8_t b) noexcept {
  return f16_bits_to_f32(static_cast<uint16_t>(b << 8));  // e5m2 is the top byte of a float16
}

}  // namespace detail

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) noexcept : bits(detail::f32_to_bf16_bits(f)) {}
  explicit operator float() const noexcept { return detail::bf16_bits_to_f32(bits); }
  static bfloat16 from_bits(uint16_t b) noexcept {
    bfloat16 r;
    r.bits = b;
    return r;
  }
};

struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float f) noexcept : bits(detail::f32_to_f16_bits(f)) {}
  explicit operator float() const noexcept { return detail::f16_bits_to_f32(bits); }
  static float16 from_bits(uint16_t b) noexcept {
    float16 r;
    r.bits = b;
    return r;
  }
};

struct float8_e4m3fn {
  uint8_t bits = 0;
  float8_e4m3fn() = default;
  explicit float8_e4m3fn(float f) noexcept : bits(detail::f32_to_e4m3fn_bits(f)) {}
  explicit operator float() const noexcept { return detail::e4m3fn_bits_to_f32(bits); }
  static float8_e4m3fn from_bits(uint8_t b) noexcept {
    float8_e4m3fn r;
    r.bits = b;
    return r;
  }
  static constexpr float kMax = 448.0f;
};

struct float8_e5m2 {
  uint8_t bits = 0;
  float8_e5m2() = default;
  explicit float8_e5m2(float f) noexcept : bits(detail::f32_to_e5m2_bits(f)) {}
  explicit operator float() const noexcept { return detail::e5m2_bits_to_f32(bits); }
  static float8_e5m2 from_bits(uint8_t b) noexcept {
    float8_e5m2 r;
    r.bits = b;
    return r;
  }
  static constexpr float kMax = 57344.0f;
};

}  // namespace osprey
