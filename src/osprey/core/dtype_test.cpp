// DType names, sizes, parsing and the promotion table, the latter held to PyTorch's.
#include "osprey/core/dtype.h"

#include <gtest/gtest.h>

#include <string>

namespace osprey {
namespace {

constexpr DType kAll[] = {DType::float64,       DType::float32,     DType::bfloat16, DType::float16,
                          DType::float8_e4m3fn, DType::float8_e5m2, DType::int8,     DType::uint8,
                          DType::int32,         DType::int64,       DType::boolean};

TEST(DTypeTest, NamesAreTheConfigStringsAndParseBack) {
  const char* names[] = {"float64",       "float32",     "bfloat16", "float16",
                         "float8_e4m3fn", "float8_e5m2", "int8",     "uint8",
                         "int32",         "int64",       "bool"};
  static_assert(std::size(kAll) == kNumDTypes);
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_EQ(dtype_name(kAll[i]), names[i]);
    EXPECT_EQ(parse_dtype(names[i]), kAll[i]);
  }
}

TEST(DTypeTest, SizesAndKindsAreThoseOfTheElementTypes) {
  const size_t sizes[] = {8, 4, 2, 2, 1, 1, 1, 1, 4, 8, 1};
  for (int i = 0; i < kNumDTypes; ++i) {
    EXPECT_EQ(dtype_size(kAll[i]), sizes[i]) << dtype_name(kAll[i]);
    visit_dtype(kAll[i], [&](auto v) { EXPECT_EQ(sizeof(v), sizes[i]) << dtype_name(kAll[i]); });
    EXPECT_EQ(is_floating(kAll[i]), i <= 5) << dtype_name(kAll[i]);
    EXPECT_EQ(is_integral(kAll[i]), i > 5) << dtype_name(kAll[i]);
    EXPECT_EQ(is_low_precision(kAll[i]), i >= 2 && i <= 5) << dtype_name(kAll[i]);
  }
  static_assert(std::is_same_v<CType<DType::bfloat16>, bfloat16>);
  static_assert(dtype_of<CType<DType::float8_e5m2>>() == DType::float8_e5m2);
  static_assert(dtype_of<bool>() == DType::boolean);
}

TEST(DTypeTest, ParseAcceptsTheShortAliases) {
  const std::pair<const char*, DType> aliases[] = {{"f64", DType::float64},
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
  for (const auto& [alias, d] : aliases) EXPECT_EQ(parse_dtype(alias), d) << alias;
}

TEST(DTypeTest, ParseRejectsAnUnknownNameAndListsTheValidOnes) {
  try {
    parse_dtype("float33");
    FAIL() << "parse_dtype accepted 'float33'";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown dtype 'float33'. Expected one of: float64, float32, bfloat16, float16, "
              "float8_e4m3fn, float8_e5m2, int8, uint8, int32, int64, bool");
  }
  EXPECT_THROW(parse_dtype(""), ValueError);
  EXPECT_THROW(parse_dtype("Float32"), ValueError);  // names are case-sensitive
}

// torch.promote_types(a, b) in PyTorch 1.13 for every pair of the dtypes it has, printed by
//   [[str(torch.promote_types(a, b)) for b in ts] for a in ts]
// with ts = float64, float32, bfloat16, float16, int8, uint8, int32, int64, bool. PyTorch gives
// int16 for int8 with uint8; osprey has no int16 and answers int32 (marked I16).
TEST(DTypeTest, PromotionMatchesPyTorchForEveryPairTorchHas) {
  constexpr DType F64 = DType::float64, F32 = DType::float32, BF = DType::bfloat16,
                  F16 = DType::float16, I8 = DType::int8, U8 = DType::uint8, I32 = DType::int32,
                  I64 = DType::int64, B = DType::boolean, I16 = DType::int32;
  constexpr DType kTypes[] = {F64, F32, BF, F16, I8, U8, I32, I64, B};
  constexpr DType kTorch[9][9] = {
      {F64, F64, F64, F64, F64, F64, F64, F64, F64},  // float64
      {F64, F32, F32, F32, F32, F32, F32, F32, F32},  // float32
      {F64, F32, BF, F32, BF, BF, BF, BF, BF},        // bfloat16
      {F64, F32, F32, F16, F16, F16, F16, F16, F16},  // float16
      {F64, F32, BF, F16, I8, I16, I32, I64, I8},     // int8
      {F64, F32, BF, F16, I16, U8, I32, I64, U8},     // uint8
      {F64, F32, BF, F16, I32, I32, I32, I64, I32},   // int32
      {F64, F32, BF, F16, I64, I64, I64, I64, I64},   // int64
      {F64, F32, BF, F16, I8, U8, I32, I64, B},       // bool
  };
  for (int i = 0; i < 9; ++i) {
    for (int j = 0; j < 9; ++j) {
      EXPECT_EQ(promote_types(kTypes[i], kTypes[j]), kTorch[i][j])
          << dtype_name(kTypes[i]) << " with " << dtype_name(kTypes[j]) << " gave "
          << dtype_name(promote_types(kTypes[i], kTypes[j]));
    }
  }
}

// float8 is not in torch 1.13; these follow the rules documented at promote_types.
TEST(DTypeTest, Float8PromotesToAnyWiderFloatAndBothFloat8sGiveFloat32) {
  for (DType f8 : {DType::float8_e4m3fn, DType::float8_e5m2}) {
    EXPECT_EQ(promote_types(f8, f8), f8);
    for (DType wider : {DType::float64, DType::float32, DType::bfloat16, DType::float16}) {
      EXPECT_EQ(promote_types(f8, wider), wider);
      EXPECT_EQ(promote_types(wider, f8), wider);
    }
    for (DType integral : {DType::int8, DType::uint8, DType::int32, DType::int64, DType::boolean}) {
      EXPECT_EQ(promote_types(f8, integral), f8);
      EXPECT_EQ(promote_types(integral, f8), f8);
    }
  }
  EXPECT_EQ(promote_types(DType::float8_e4m3fn, DType::float8_e5m2), DType::float32);
  EXPECT_EQ(promote_types(DType::float8_e5m2, DType::float8_e4m3fn), DType::float32);
}

TEST(DTypeTest, DoubleRoundTripsThroughEveryElementType) {
  for (DType d : kAll) {
    visit_dtype(d, [&](auto v) {
      using T = decltype(v);
      EXPECT_EQ(to_double(from_double<T>(1.0)), 1.0) << dtype_name(d);
      EXPECT_EQ(to_double(from_double<T>(0.0)), 0.0) << dtype_name(d);
    });
  }
  EXPECT_EQ(to_double(from_double<bfloat16>(3.0)), 3.0);
  EXPECT_EQ(to_double(from_double<float8_e4m3fn>(1000.0)), 448.0);
  EXPECT_TRUE(from_double<bool>(0.5));
}

}  // namespace
}  // namespace osprey

namespace osprey {
namespace {
TEST(DTypeTest, FromDoubleRoundsOnceForNarrowFloats) {
  // Just above a bfloat16 tie, by less than a float ulp: rounding through float first would land
  // on the tie and round to even (1.0); a single correct rounding goes up.
  const double v = 1.0 + 0x1.0p-8 + 0x1.0p-30;
  EXPECT_EQ(static_cast<float>(from_double<bfloat16>(v)), 1.0f + 0x1.0p-7f);
  EXPECT_EQ(static_cast<float>(from_double<bfloat16>(-v)), -(1.0f + 0x1.0p-7f));
  EXPECT_EQ(static_cast<float>(from_double<bfloat16>(1.0 + 0x1.0p-8)), 1.0f);  // an exact tie: even
  EXPECT_EQ(static_cast<float>(from_double<float16>(1.0 + 0x1.0p-11 + 0x1.0p-40)),
            1.0f + 0x1.0p-10f);
}
}  // namespace
}  // namespace osprey
