// cast_value: the value a double takes on its way into an element of dtype d. C++ leaves
// float-to-integer casts of NaN and out-of-range values undefined; osprey maps NaN to 0,
// saturates, then truncates. The reference kernels (the oracle) and the fast CPU kernels must
// agree bit for bit, so both call this one definition (cpu::copy hands integer casts to
// reference::copy; cpu::fill calls it directly).
//   cast_value(DType::uint8, 300.7) == 255.0;  cast_value(DType::int32, NAN) == 0.0
#pragma once

#include <algorithm>
#include <cmath>

#include "osprey/core/dtype.h"

namespace osprey::reference {

// v unchanged for floating dtypes and bool (from_double<bool> tests v != 0); for int8, uint8,
// int32 and int64: NaN -> 0, clamped to the dtype's range, truncated toward zero. The int64
// bound is the largest double below 2^63, so the later static_cast<int64_t> stays defined.
inline double cast_value(DType d, double v) {
  if (!is_integral(d) || d == DType::boolean) return v;
  if (std::isnan(v)) return 0.0;
  double lo = 0, hi = 0;
  switch (d) {
    case DType::int8:
      lo = -128;
      hi = 127;
      break;
    case DType::uint8:
      lo = 0;
      hi = 255;
      break;
    case DType::int32:
      lo = -2147483648.0;
      hi = 2147483647.0;
      break;
    default:
      lo = -9223372036854775808.0;
      hi = 9223372036854774784.0;
      break;
  }
  return std::trunc(std::clamp(v, lo, hi));
}

}  // namespace osprey::reference
