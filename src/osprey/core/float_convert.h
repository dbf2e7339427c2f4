// Bulk conversions between float32 and the storage types of float_types.h (bfloat16, float16,
// float8_e4m3fn, float8_e5m2), and between float64 and float32: what casts, mixed-precision weight
// copies and checkpoint loading run over whole buffers. Every result is bit-identical to the
// scalar conversion, NaN payloads included; the kernels (AVX2+F16C baseline, AVX-512 with BF16
// where the CPU has it) are picked once at run time.
//   std::vector<bfloat16> h(n);  convert(x.data(), h.data(), n);  // n floats -> n bfloat16s
#pragma once

#include <cstdint>

#include "osprey/core/float_types.h"

namespace osprey {

// dst[i] = T(src[i]) for i in [0, n); n <= 0 does nothing. src and dst must not overlap.
void convert(const float* src, bfloat16* dst, int64_t n) noexcept;
void convert(const float* src, float16* dst, int64_t n) noexcept;
void convert(const float* src, float8_e4m3fn* dst, int64_t n) noexcept;
void convert(const float* src, float8_e5m2* dst, int64_t n) noexcept;
// dst[i] = float(src[i]); exact (every value of these types is a float).
void convert(const bfloat16* src, float* dst, int64_t n) noexcept;
void convert(const float16* src, float* dst, int64_t n) noexcept;
void convert(const float8_e4m3fn* src, float* dst, int64_t n) noexcept;
void convert(const float8_e5m2* src, float* dst, int64_t n) noexcept;
// static_cast semantics: double -> float rounds to nearest even (the default FP mode).
void convert(const double* src, float* dst, int64_t n) noexcept;
void convert(const float* src, double* dst, int64_t n) noexcept;

namespace detail {

// The kernel sets convert() can use. avx512 needs avx512f, avx512bw, avx512vl and avx512bf16.
enum class ConvertPath : uint8_t { scalar, avx2, avx512 };

bool cpu_supports(ConvertPath path) noexcept;
ConvertPath best_convert_path() noexcept;  // the fastest path this CPU supports
ConvertPath convert_path() noexcept;       // the path convert() uses now
// Switches convert() to `path`, so tests can hold every path to the scalar one; throws
// ValueError when the CPU lacks it. Not meant to race with running conversions.
void set_convert_path(ConvertPath path);

}  // namespace detail

}  // namespace osprey
