#include "osprey/core/dtype.h"

#include <array>

namespace osprey {

namespace {
struct Traits {
  std::string_view name;
  size_t size;
  bool floating;
  int rank;  // order inside its kind: wider = higher
};
constexpr std::array<Traits, kNumDTypes> kTraits{{
    {"float64", 8, true, 4},
    {"float32", 4, true, 3},
    {"bfloat16", 2, true, 2},
    {"float16", 2, true, 2},
    {"float8_e4m3fn", 1, true, 1},
    {"float8_e5m2", 1, true, 1},
    {"int8", 1, false, 1},
    {"uint8", 1, false, 1},
    {"int32", 4, false, 3},
    {"int64", 8, false, 4},
    {"bool", 1, false, 0},
}};
const Traits& traits(DType d) { return kTraits[static_cast<size_t>(d)]; }
}  // namespace

std::string_view dtype_name(DType d) noexcept { return traits(d).name; }
size_t dtype_size(DType d) noexcept { return traits(d).size; }
bool is_floating(DType d) noexcept { return traits(d).floating; }
bool is_low_precision(DType d) noexcept { return is_floating(d) && traits(d).size < 4; }
bool is_integral(DType d) noexcept { return !is_floating(d); }

DType parse_dtype(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kTraits[static_cast<size_t>(i)].name == name) return static_cast<DType>(i);
  }
  struct Alias {
    std::string_view alias;
    DType d;
  };
  static constexpr Alias kAliases[] = {{"f64", DType::float64},
                                       {"double", DType::float64},
                                       {"f32", DType::float32},
                                       {"float", DType::float32},
                                       {"bf16", DType::bfloat16},
                                       {"f16", DType::float16},
                                       {"half", DType::float16},
                                       {"e4m3", DType::float8_e4m3fn},
                                       {"float8_e4m3", DType::float8_e4m3fn},
                                       {"e5m2", DType::float8_e5m2},
                                       {"i8", DType::int8},
                                       {"u8", DType::uint8},
                                       {"i32", DType::int32},
                                       {"i64", DType::int64},
                                       {"boolean", DType::boolean}};
  for (const auto& a : kAliases) {
    if (a.alias == name) return a.d;
  }
  OSPREY_THROW(ValueError,
               "unknown dtype '{}'. Expected one of: float64, float32, bfloat16, float16, "
               "float8_e4m3fn, float8_e5m2, int8, uint8, int32, int64, bool",
               name);
}

DType promote_types(DType a, DType b) noexcept {
  if (a == b) return a;
  const Traits& ta = traits(a);
  const Traits& tb = traits(b);
  if (ta.floating != tb.floating) return ta.floating ? a : b;
  if (ta.floating) {
    if (ta.rank != tb.rank) return ta.rank > tb.rank ? a : b;
    return DType::float32;  // bf16 vs f16, e4m3 vs e5m2: neither holds the other
  }
  if (a == DType::boolean) return b;
  if (b == DType::boolean) return a;
  if (ta.rank != tb.rank) return ta.rank > tb.rank ? a : b;
  return DType::int32;  // int8 vs uint8
}

}  // namespace osprey
