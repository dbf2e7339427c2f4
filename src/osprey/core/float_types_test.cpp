// Checks of the scalar conversions in float_types.h and of the bulk kernels in float_convert.h
// against references that share no code with them: the textbook decode formula, a search for the
// nearest value over every code of the target format (ties to the even code), and PyTorch 1.13's
// bfloat16 / float16 casts (embedded below; float8 is not in torch 1.13).
#include "osprey/core/float_types.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "osprey/core/float_convert.h"

namespace osprey {
namespace {

struct Format {
  const char* name;
  int ebits, mbits;
  bool ieee;  // all-ones exponent is Inf/NaN; else (e4m3fn) only the all-ones code is NaN
  uint32_t (*encode)(float);
  float (*decode)(uint32_t);
  uint32_t sign_bit() const { return 1u << (ebits + mbits); }
};

template <class T>
uint32_t encode_bits(float f) {
  return T(f).bits;
}
template <class T>
float decode_bits(uint32_t b) {
  return static_cast<float>(T::from_bits(static_cast<decltype(T::bits)>(b)));
}
template <class T>
constexpr Format make_format(const char* name, int ebits, int mbits, bool ieee) {
  return {name, ebits, mbits, ieee, encode_bits<T>, decode_bits<T>};
}
const Format kBf16 = make_format<bfloat16>("bfloat16", 8, 7, true);
const Format kF16 = make_format<float16>("float16", 5, 10, true);
const Format kE4m3 = make_format<float8_e4m3fn>("float8_e4m3fn", 4, 3, false);
const Format kE5m2 = make_format<float8_e5m2>("float8_e5m2", 5, 2, true);
const Format* const kFormats[] = {&kBf16, &kF16, &kE4m3, &kE5m2};

double formula_value(const Format& f, uint32_t code) {
  const uint32_t emax = (1u << f.ebits) - 1, mmax = (1u << f.mbits) - 1;
  const uint32_t e = (code >> f.mbits) & emax, m = code & mmax;
  const int bias = (1 << (f.ebits - 1)) - 1;
  double v;
  if (f.ieee && e == emax) {
    v = m != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.ieee && e == emax && m == mmax) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - bias - f.mbits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.mbits), static_cast<int>(e) - bias);
  }
  return (code & f.sign_bit()) != 0 ? -v : v;
}

// Rounds a non-NaN float to a format by binary search over the values of all its non-negative
// codes. IEEE formats put Inf one ulp above the largest finite value, so round to nearest even
// reaches it from max + ulp/2 on; e4m3fn saturates everything above 448 (Inf included).
class NearestCode {
 public:
  explicit NearestCode(const Format& f) : sign_bit_(f.sign_bit()) {
    for (uint32_t c = 0; c < f.sign_bit(); ++c) {
      const double v = formula_value(f, c);
      if (std::isfinite(v)) {
        values_.push_back(v);
        codes_.push_back(c);
      }
    }
    if (f.ieee) {
      const double top = values_.back();
      values_.push_back(top + (top - values_[values_.size() - 2]));
      codes_.push_back(codes_.back() + 1);  // the Inf code
    }
  }
  uint32_t operator()(float x) const {
    const double a = std::fabs(static_cast<double>(x));
    const auto it = std::lower_bound(values_.begin(), values_.end(), a);
    size_t i = it == values_.end() ? values_.size() - 1 : static_cast<size_t>(it - values_.begin());
    if (it != values_.end() && *it != a && i > 0) {
      const double below = a - values_[i - 1], above = values_[i] - a;  // exact (Sterbenz)
      if (below < above || (below == above && codes_[i - 1] % 2 == 0)) --i;
    }
    return (std::signbit(x) ? sign_bit_ : 0u) | codes_[i];
  }

 private:
  uint32_t sign_bit_;
  std::vector<double> values_;
  std::vector<uint32_t> codes_;
};

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }
uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }

TEST(FloatTypesTest, DecodingMatchesTheTextbookFormulaForEveryCode) {
  for (const Format* f : kFormats) {
    int failures = 0;
    for (uint32_t c = 0; c < 2 * f->sign_bit() && failures < 10; ++c) {
      const double want = formula_value(*f, c);
      const float got = f->decode(c);
      const bool ok = std::isnan(want) ? std::isnan(got)
                                       : (got == want && std::signbit(got) == std::signbit(want));
      if (!ok) {
        ++failures;
        ADD_FAILURE() << f->name << " code 0x" << std::hex << c << ": got " << got << ", want "
                      << want;
      }
    }
  }
}

TEST(FloatTypesTest, EncodingADecodedCodeGivesTheCodeBackAndNanStaysNan) {
  for (const Format* f : kFormats) {
    int failures = 0;
    for (uint32_t c = 0; c < 2 * f->sign_bit() && failures < 10; ++c) {
      const float v = f->decode(c);
      const uint32_t back = f->encode(v);
      const bool ok = std::isnan(v) ? std::isnan(f->decode(back)) &&
                                          (back & f->sign_bit()) == (c & f->sign_bit())
                                    : back == c;
      if (!ok) {
        ++failures;
        ADD_FAILURE() << f->name << " code 0x" << std::hex << c << " came back as 0x" << back;
      }
    }
  }
}

// Every midpoint between neighbouring codes is a float (the formats have at most 11 significant
// bits); it must go to the even code, and the floats just below and above it to the nearer one.
TEST(FloatTypesTest, MidpointsRoundToTheEvenCodeAndTheirNeighboursToTheNearerCode) {
  for (const Format* f : kFormats) {
    int failures = 0;
    const uint32_t last =
        f->ieee ? f->sign_bit() - (1u << f->mbits) : f->sign_bit() - 2;  // Inf / 448
    for (uint32_t sign : {0u, f->sign_bit()}) {
      for (uint32_t c = 0; c < last && failures < 10; ++c) {
        const double lo = std::fabs(formula_value(*f, c)), hi = std::fabs(formula_value(*f, c + 1));
        const double hi_value = std::isinf(hi) ? 2 * lo - std::fabs(formula_value(*f, c - 1)) : hi;
        const float mid = static_cast<float>((lo + hi_value) / 2);
        ASSERT_EQ(static_cast<double>(mid), (lo + hi_value) / 2) << f->name << " code " << c;
        const float s = sign != 0 ? -1.0f : 1.0f;
        const uint32_t even = (c % 2 == 0 ? c : c + 1) | sign;
        const uint32_t got_mid = f->encode(s * mid);
        const uint32_t got_below = f->encode(s * std::nextafter(mid, 0.0f));
        const uint32_t got_above =
            f->encode(s * std::nextafter(mid, std::numeric_limits<float>::infinity()));
        if (got_mid != even || got_below != (c | sign) || got_above != ((c + 1) | sign)) {
          ++failures;
          ADD_FAILURE() << f->name << " between codes 0x" << std::hex << c << " and 0x" << c + 1
                        << " (sign 0x" << sign << "): mid->0x" << got_mid << " below->0x"
                        << got_below << " above->0x" << got_above;
        }
      }
    }
  }
}

TEST(FloatTypesTest, OverflowSaturatesE4m3fnAndGivesInfinityInTheOtherFormats) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bfloat16(3.4028235e38f).bits, 0x7f80);  // FLT_MAX is past bf16's max + ulp/2
  EXPECT_EQ(bfloat16(-inf).bits, 0xff80);
  EXPECT_EQ(float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(float16(65519.996f).bits, 0x7bff);
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);
  EXPECT_EQ(float16(-1e6f).bits, 0xfc00);
  EXPECT_EQ(float8_e5m2(57344.0f).bits, 0x7b);
  EXPECT_EQ(float8_e5m2(61439.996f).bits, 0x7b);
  EXPECT_EQ(float8_e5m2(61440.0f).bits, 0x7c);
  EXPECT_EQ(float8_e5m2(-inf).bits, 0xfc);
  EXPECT_EQ(float8_e4m3fn(448.0f).bits, 0x7e);
  EXPECT_EQ(float8_e4m3fn(464.0f).bits, 0x7e);
  EXPECT_EQ(float8_e4m3fn(1e30f).bits, 0x7e);
  EXPECT_EQ(float8_e4m3fn(inf).bits, 0x7e);
  EXPECT_EQ(float8_e4m3fn(-inf).bits, 0xfe);
  EXPECT_EQ(static_cast<float>(float8_e4m3fn::from_bits(0x7e)), float8_e4m3fn::kMax);
  EXPECT_EQ(static_cast<float>(float8_e5m2::from_bits(0x7b)), float8_e5m2::kMax);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(float8_e4m3fn(nan).bits & 0x7f, 0x7f);
  EXPECT_EQ(float8_e4m3fn(-nan).bits, 0xff);
  EXPECT_TRUE(std::isnan(static_cast<float>(float8_e5m2(nan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(-nan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(from_bits(0x7f800001)))));  // sNaN quieted
}

TEST(FloatTypesTest, Float32SubnormalsRoundLikeAnyOtherValue) {
  EXPECT_EQ(bfloat16(from_bits(0x00000001)).bits, 0x0000);
  EXPECT_EQ(bfloat16(from_bits(0x00008000)).bits, 0x0000);  // tie, to even
  EXPECT_EQ(bfloat16(from_bits(0x00018000)).bits, 0x0002);  // tie, to even
  EXPECT_EQ(bfloat16(from_bits(0x00008001)).bits, 0x0001);
  EXPECT_EQ(bfloat16(from_bits(0x807fffff)).bits, 0x8080);  // rounds up to the smallest normal
  EXPECT_EQ(float16(from_bits(0x007fffff)).bits, 0x0000);
  EXPECT_EQ(float16(0x1p-25f).bits, 0x0000);  // tie with zero
  EXPECT_EQ(float16(0x1.000002p-25f).bits, 0x0001);
  EXPECT_EQ(float16(-0x1.8p-24f).bits, 0x8002);  // 1.5 units: tie, to even
  EXPECT_EQ(float8_e4m3fn(0x1p-10f).bits, 0x00);
  EXPECT_EQ(float8_e4m3fn(0x1.8p-9f).bits, 0x02);
  EXPECT_EQ(float8_e4m3fn(0x1.ep-7f).bits, 0x08);  // 7.5 units: up to 2^-6
  EXPECT_EQ(float8_e5m2(0x1.8p-16f).bits, 0x02);
  EXPECT_EQ(float8_e5m2(-0x1.4p-15f).bits, 0x82);  // 2.5 units: tie, to even
}

// f32 bits -> (bfloat16 bits, float16 bits) from PyTorch 1.13's CPU casts (float16 cross-checked
// against numpy): bf16 and f16 ties and their neighbours, subnormals, overflow edges, random
// patterns and some of them negated. Made by a short script that printed, for a list `u` of uint32
// patterns, t = torch.from_numpy(u.view(np.float32)), t.to(torch.bfloat16).view(torch.int16) and
// t.to(torch.float16).view(torch.int16).
struct TorchRounding {
  uint32_t f32, bf16, f16;
};
constexpr TorchRounding kTorchRoundings[] = {
    {0x00807fff, 0x0080, 0x0000}, {0x00808000, 0x0080, 0x0000}, {0x00808001, 0x0081, 0x0000},
    {0x00817fff, 0x0081, 0x0000}, {0x00818000, 0x0082, 0x0000}, {0x00818001, 0x0082, 0x0000},
    {0x3f007fff, 0x3f00, 0x3804}, {0x3f008000, 0x3f00, 0x3804}, {0x3f008001, 0x3f01, 0x3804},
    {0x3f017fff, 0x3f01, 0x380c}, {0x3f018000, 0x3f02, 0x380c}, {0x3f018001, 0x3f02, 0x380c},
    {0x3f807fff, 0x3f80, 0x3c04}, {0x3f808000, 0x3f80, 0x3c04}, {0x3f808001, 0x3f81, 0x3c04},
    {0x3f817fff, 0x3f81, 0x3c0c}, {0x3f818000, 0x3f82, 0x3c0c}, {0x3f818001, 0x3f82, 0x3c0c},
    {0x7f007fff, 0x7f00, 0x7c00}, {0x7f008000, 0x7f00, 0x7c00}, {0x7f008001, 0x7f01, 0x7c00},
    {0x7f017fff, 0x7f01, 0x7c00}, {0x7f018000, 0x7f02, 0x7c00}, {0x7f018001, 0x7f02, 0x7c00},
    {0x00000001, 0x0000, 0x0000}, {0x00007fff, 0x0000, 0x0000}, {0x00008000, 0x0000, 0x0000},
    {0x00008001, 0x0001, 0x0000}, {0x00018000, 0x0002, 0x0000}, {0x007f8000, 0x0080, 0x0000},
    {0x007fffff, 0x0080, 0x0000}, {0x007fff7f, 0x0080, 0x0000}, {0x38800fff, 0x3880, 0x0400},
    {0x38801000, 0x3880, 0x0400}, {0x38801001, 0x3880, 0x0401}, {0x38802fff, 0x3880, 0x0401},
    {0x38803000, 0x3880, 0x0402}, {0x38803001, 0x3880, 0x0402}, {0x3f800fff, 0x3f80, 0x3c00},
    {0x3f801000, 0x3f80, 0x3c00}, {0x3f801001, 0x3f80, 0x3c01}, {0x3f802fff, 0x3f80, 0x3c01},
    {0x3f803000, 0x3f80, 0x3c02}, {0x3f803001, 0x3f80, 0x3c02}, {0x47000fff, 0x4700, 0x7800},
    {0x47001000, 0x4700, 0x7800}, {0x47001001, 0x4700, 0x7801}, {0x47002fff, 0x4700, 0x7801},
    {0x47003000, 0x4700, 0x7802}, {0x47003001, 0x4700, 0x7802}, {0x32ffffff, 0x3300, 0x0000},
    {0x33000000, 0x3300, 0x0000}, {0x33000001, 0x3300, 0x0001}, {0x337fffff, 0x3380, 0x0001},
    {0x33800000, 0x3380, 0x0001}, {0x33800001, 0x3380, 0x0001}, {0x33bfffff, 0x33c0, 0x0001},
    {0x33c00000, 0x33c0, 0x0002}, {0x33c00001, 0x33c0, 0x0002}, {0x37ffbfff, 0x3800, 0x01ff},
    {0x37ffc000, 0x3800, 0x0200}, {0x37ffc001, 0x3800, 0x0200}, {0x387fdfff, 0x3880, 0x03ff},
    {0x387fe000, 0x3880, 0x0400}, {0x387fe001, 0x3880, 0x0400}, {0x477fe000, 0x4780, 0x7bff},
    {0x477fef00, 0x4780, 0x7bff}, {0x477fefff, 0x4780, 0x7bff}, {0x477ff000, 0x4780, 0x7c00},
    {0x47800000, 0x4780, 0x7c00}, {0x7f7f0000, 0x7f7f, 0x7c00}, {0x7f7fffff, 0x7f80, 0x7c00},
    {0x7f800000, 0x7f80, 0x7c00}, {0x7f7f8000, 0x7f80, 0x7c00}, {0x7f7f7fff, 0x7f7f, 0x7c00},
    {0x00000000, 0x0000, 0x0000}, {0x799c1f05, 0x799c, 0x7c00}, {0x308c4e4b, 0x308c, 0x0000},
    {0x81df1fec, 0x81df, 0x8000}, {0x481d7612, 0x481d, 0x7c00}, {0x962f689e, 0x962f, 0x8000},
    {0xf7e8ed1a, 0xf7e9, 0xfc00}, {0xd5c925d6, 0xd5c9, 0xfc00}, {0x3e74644d, 0x3e74, 0x33a3},
    {0x4405b6d3, 0x4406, 0x602e}, {0xeac9c7bc, 0xeaca, 0xfc00}, {0x1ccb9204, 0x1ccc, 0x0000},
    {0xc6edf632, 0xc6ee, 0xf770}, {0xc938f26f, 0xc939, 0xfc00}, {0x27d307bf, 0x27d3, 0x0000},
    {0x851aed26, 0x851b, 0x8000}, {0x0707af78, 0x0708, 0x0000}, {0xefaf013e, 0xefaf, 0xfc00},
    {0x5bf41010, 0x5bf4, 0x7c00}, {0xa4fd18c0, 0xa4fd, 0x8000}, {0x4588c1fe, 0x4589, 0x6c46},
    {0x321abae4, 0x321b, 0x0000}, {0xc13be9df, 0xc13c, 0xc9df}, {0x82211245, 0x8221, 0x8000},
    {0xee259b9e, 0xee26, 0xfc00}, {0xad6603aa, 0xad66, 0x8000}, {0xd7e70688, 0xd7e7, 0xfc00},
    {0xc83edc12, 0xc83f, 0xfc00}, {0x5260687e, 0x5260, 0x7c00}, {0x494db3f3, 0x494e, 0x7c00},
    {0x072549f3, 0x0725, 0x0000}, {0xcaa37dec, 0xcaa3, 0xfc00}, {0x344f69e7, 0x344f, 0x0003},
    {0x80807fff, 0x8080, 0x8000}, {0xbf018000, 0xbf02, 0xb80c}, {0xff008001, 0xff01, 0xfc00},
    {0x807fffff, 0x8080, 0x8000}, {0xbf801001, 0xbf80, 0xbc01}, {0xb2ffffff, 0xb300, 0x8000},
    {0xb7ffc000, 0xb800, 0x8200}, {0xff7f0000, 0xff7f, 0xfc00}, {0xf99c1f05, 0xf99c, 0xfc00},
    {0x9ccb9204, 0x9ccc, 0x8000}, {0xb21abae4, 0xb21b, 0x8000}, {0x4aa37dec, 0x4aa3, 0x7c00},
};

TEST(FloatTypesTest, Bfloat16AndFloat16RoundingMatchesPyTorch) {
  for (const TorchRounding& r : kTorchRoundings) {
    EXPECT_EQ(bfloat16(from_bits(r.f32)).bits, r.bf16) << std::hex << "f32 0x" << r.f32;
    EXPECT_EQ(float16(from_bits(r.f32)).bits, r.f16) << std::hex << "f32 0x" << r.f32;
  }
}

// Every 256th of the 2^32 patterns, so every tie pattern of bf16, f16 and f8 occurs; the low byte
// is 0x01 or 0xff in some groups of 256, for the floats next to those ties.
TEST(FloatTypesTest, ASweepOfFloat32PatternsRoundsToTheNearestCodeInEveryFormat) {
  for (const Format* f : kFormats) {
    const NearestCode nearest(*f);
    int failures = 0;
    for (uint32_t i = 0; i < (1u << 24) && failures < 10; ++i) {
      static constexpr uint32_t kLow[4] = {0x00, 0x01, 0xff, 0x00};
      const float x = from_bits((i << 8) | kLow[(i >> 8) & 3]);
      const uint32_t got = f->encode(x);
      const bool ok = std::isnan(x) ? std::isnan(f->decode(got)) : got == nearest(x);
      if (!ok) {
        ++failures;
        ADD_FAILURE() << f->name << " f32 0x" << std::hex << bits_of(x) << " gave 0x" << got
                      << ", want 0x" << nearest(x);
      }
    }
  }
}

// Random floats with every exponent, NaNs, Infs, subnormals and zeros among them.
std::vector<float> test_inputs(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  // Zeros, Inf, -448, 464, 61440, 65520, NaNs, f32 subnormals and ties of each format.
  const uint32_t specials[] = {0x00000000, 0x80000000, 0x7f800000, 0xc3e00000,
                               0x43e80000, 0x47700000, 0x477ff000, 0x7fc00001,
                               0xff800001, 0x00000001, 0x807fffff, 0x00018000,
                               0x3a800000, 0x37c00000, 0x3f808000, 0x3bc00000};
  for (size_t i = 0; i < n; ++i) {
    switch (gen() % 5) {
      case 0:
        v[i] = from_bits(gen());
        break;
      case 1:
        v[i] = from_bits(specials[gen() % std::size(specials)]);
        break;
      case 2:  // an f32 subnormal (or zero)
        v[i] = from_bits(gen() & 0x807fffffu);
        break;
      case 3: {  // a tie of some format (normal or subnormal) or a neighbour of one
        const uint32_t w = 13 + gen() % 12, low = (1u << w) - 1;
        v[i] = from_bits(((gen() & ~low) | (1u << (w - 1))) + (gen() % 3) - 1);
        break;
      }
      default:
        v[i] = std::ldexp(static_cast<float>(gen()) / 4294967296.0f - 0.5f, int(gen() % 40) - 25);
    }
  }
  return v;
}

// Encodings use integer arithmetic or an explicit rounding immediate, decodings exact operations,
// so neither the FP rounding mode nor DAZ/FTZ (set by some BLAS and by torch.set_flush_denormal)
// may change a result.
TEST(FloatTypesTest, ConversionsIgnoreTheRoundingModeAndDenormalFlushing) {
  const std::vector<float> src = test_inputs(4096, 21);
  const auto run = [&] {
    std::vector<uint32_t> out;
    for (const Format* f : kFormats) {
      for (float x : src) out.push_back(f->encode(x));
      for (uint32_t c = 0; c < 2 * f->sign_bit(); ++c) out.push_back(bits_of(f->decode(c)));
    }
    std::vector<bfloat16> b(src.size());
    std::vector<float16> h(src.size());
    std::vector<float8_e4m3fn> e4(src.size());
    std::vector<float8_e5m2> e5(src.size());
    std::vector<float> back(src.size());
    const auto n = static_cast<int64_t>(src.size());
    convert(src.data(), b.data(), n);
    convert(src.data(), h.data(), n);
    convert(src.data(), e4.data(), n);
    convert(src.data(), e5.data(), n);
    for (size_t i = 0; i < src.size(); ++i) {
      out.insert(out.end(), {b[i].bits, h[i].bits, e4[i].bits, e5[i].bits});
    }
    convert(e4.data(), back.data(), n);
    for (float v : back) out.push_back(bits_of(v));
    return out;
  };
  const std::vector<uint32_t> want = run();
  for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    ASSERT_EQ(std::fesetround(mode), 0);
    const std::vector<uint32_t> got = run();
    std::fesetround(FE_TONEAREST);
    EXPECT_TRUE(got == want) << "rounding mode " << mode;
  }
  const unsigned int csr = _mm_getcsr();
  _mm_setcsr(csr | 0x8040u);  // FTZ | DAZ
  const std::vector<uint32_t> got = run();
  _mm_setcsr(csr);
  EXPECT_TRUE(got == want) << "with DAZ and FTZ set";
}

using detail::ConvertPath;
constexpr ConvertPath kPaths[] = {ConvertPath::scalar, ConvertPath::avx2, ConvertPath::avx512};

// convert() over sub-ranges of src that start unaligned and end before, at and after every
// vector width, against the scalar conversion of each element.
template <class T>
void expect_bulk_matches_scalar(const std::vector<float>& src, const std::vector<T>& codes) {
  const int64_t lengths[] = {0,  1,  7,  8,  9,  15, 16,  17,   31,
                             32, 33, 47, 63, 64, 65, 100, 1000, 4099};
  for (int64_t offset : {0, 1, 3}) {
    for (int64_t n : lengths) {
      std::vector<T> enc(static_cast<size_t>(n) + 1, T::from_bits(0x5a));
      convert(src.data() + offset, enc.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(enc[i].bits, T(src[offset + i]).bits)
            << "encode, n=" << n << " i=" << i << " x=0x" << std::hex << bits_of(src[offset + i]);
      }
      ASSERT_EQ(enc[n].bits, 0x5a) << "encode wrote past n=" << n;
      std::vector<float> dec(static_cast<size_t>(n) + 1, 7.0f);
      convert(codes.data() + offset, dec.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(bits_of(dec[i]), bits_of(static_cast<float>(codes[offset + i])))
            << "decode, n=" << n << " i=" << i << " code=0x" << std::hex << +codes[offset + i].bits;
      }
      ASSERT_EQ(dec[n], 7.0f) << "decode wrote past n=" << n;
    }
  }
}

template <class T>
std::vector<T> all_codes_shuffled(size_t n, uint32_t seed) {
  std::vector<T> v(std::max<size_t>(n, 1u << (8 * sizeof(T))));
  for (size_t i = 0; i < v.size(); ++i) v[i] = T::from_bits(static_cast<decltype(T::bits)>(i));
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

TEST(FloatConvertTest, EveryKernelPathMatchesTheScalarConversionsBitForBit) {
  const std::vector<float> src = test_inputs(70000, 11);
  for (ConvertPath path : kPaths) {
    if (!detail::cpu_supports(path)) {
      std::printf("[ SKIPPED  ] conversion path %d: this CPU lacks its instructions\n", int(path));
      continue;
    }
    detail::set_convert_path(path);
    SCOPED_TRACE(testing::Message() << "path " << int(path));
    expect_bulk_matches_scalar(src, all_codes_shuffled<bfloat16>(0, 1));
    expect_bulk_matches_scalar(src, all_codes_shuffled<float16>(0, 2));
    expect_bulk_matches_scalar(src, all_codes_shuffled<float8_e4m3fn>(8192, 3));
    expect_bulk_matches_scalar(src, all_codes_shuffled<float8_e5m2>(8192, 4));
    // A whole buffer, every element once.
    std::vector<float8_e4m3fn> e4(src.size());
    convert(src.data(), e4.data(), static_cast<int64_t>(src.size()));
    for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ(e4[i].bits, float8_e4m3fn(src[i]).bits) << i;
  }
  detail::set_convert_path(detail::best_convert_path());
  EXPECT_EQ(detail::convert_path(), detail::best_convert_path());
}

TEST(FloatConvertTest, Float64AndFloat32ConvertLikeStaticCast) {
  std::mt19937_64 gen(5);
  std::vector<double> d(1001);
  for (double& x : d) x = std::bit_cast<double>(gen());
  d[0] = 1e300;
  d[1] = 0x1.0000001p0;  // a tie between two floats
  std::vector<float> f(d.size());
  convert(d.data(), f.data(), static_cast<int64_t>(d.size()));
  std::vector<double> back(d.size());
  convert(f.data(), back.data(), static_cast<int64_t>(f.size()));
  for (size_t i = 0; i < d.size(); ++i) {
    ASSERT_EQ(bits_of(f[i]), bits_of(static_cast<float>(d[i]))) << i;
    ASSERT_EQ(std::bit_cast<uint64_t>(back[i]), std::bit_cast<uint64_t>(static_cast<double>(f[i])));
  }
}

}  // namespace
}  // namespace osprey
