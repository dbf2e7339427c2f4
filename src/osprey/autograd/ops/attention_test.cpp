#include "osprey/autograd/ops/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

// A bool tensor from 0/1 values.
Tensor bools(const std::vector<double>& v, const Shape& s) { return f64(v, s).to(DType::boolean); }

void expect_message(const std::function<void()>& fn, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "expected ValueError: " << message;
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

// PyTorch 1.13 values and gradients (float64) from attention_torch_references.py, which prints
// these constants; inputs from wave() below, the output weights from wave(tag 4).
// [1, 2, 3, 3]
const std::vector<double> kPlainOut = {
    0.11644457464126506,  0.20532884855147465,  0.26642282605141454,  0.3407915446683398,
    0.41323713142527285,  0.4297530110268133,   0.08435862871757988,  -0.09375196740290974,
    -0.25917367454577633, 0.7214431481353697,   0.6175085647648555,   0.4299970940170505,
    -0.09236987440440134, -0.12909464554976074, -0.14834706203031883, -0.4234987947456888,
    -0.3716904780197618,  -0.2695755987727164,
};
// [1, 2, 3, 4]
const std::vector<double> kPlainDq = {
    0.3337071900047009,   0.2616098535765886,    0.15410485073418767,   0.025742479283449887,
    0.41652593115709635,  0.29237741522152544,   0.12865698774017995,   -0.052476559474585266,
    0.04390542507059696,  0.015364903699358126,  -0.015255185307567145, -0.04381055654842263,
    0.10351108211756566,  0.19048167048800022,   0.2516714583477955,    0.2787986949643993,
    0.2925219891399616,   0.3887840235914729,    0.4324259643181818,    0.41754107937632773,
    0.017290067240062865, 0.0025064328798095614, -0.012616435412517835, -0.026031728358134984,
};
// [1, 2, 5, 4]
const std::vector<double> kPlainDk = {
    0.09790346644182081,  0.15215461839398997,  0.18581235653611475,    0.19432126390624588,
    0.3276688901670539,   0.36668862370374233,  0.35607877223622647,    0.29727532938757095,
    -0.0106754536869899,  -0.02671189686208663, -0.03913301010807288,   -0.046257654017180766,
    -0.05877356800571261, -0.06832033905479051, -0.06862027271800167,   -0.05963277438108282,
    -0.3561233349161722,  -0.4238110061808552,  -0.4341378459462667,    -0.38570616489555326,
    0.03676934497915623,  0.03643710645999981,  0.031173276515676005,   0.021690289835406502,
    0.10346157370606762,  0.05509135405394311,  -0.0007352219241575919, -0.056462289063905505,
    0.1670065020124047,   0.12008365817963937,  0.0569080545501664,     -0.013969787294919298,
    -0.13638496526725205, -0.13866263666745235, -0.12217297069054764,   -0.08914776626999187,
    -0.17085245543037653, -0.07294948202612993, 0.03482686154886285,    0.1378895527934102,
};
// [1, 2, 5, 3]
const std::vector<double> kPlainDv = {
    0.4846726315568009,   0.5381463356704289,   0.5187844578096492,   0.5853401601996286,
    0.5975515172959246,   0.5288870797671069,   0.25965793153575556,  0.14717999638058377,
    0.014781939167875346, 0.20981505424315394,  0.11265127050294056,  0.0002406657711539334,
    0.34942871665036335,  0.3797647168922396,   0.35870134425957445,  -0.38312580732308005,
    -0.20969184160474993, -0.00787706883411493, -0.23018261949101043, -0.2361338645015174,
    -0.21012549870577893, -0.4850394281134887,  -0.625673279837852,   -0.6816251883022034,
    -0.33982930894073116, -0.3139586342149868,  -0.24559513119477797, -0.4246691372512038,
    -0.2373471025251617,  -0.01790125091793074,
};
// [2, 4, 4, 2]
const std::vector<double> kMaskedOut = {
    0.32404302839486837, 0.644217687237691,     0.6731802842785145,    0.8633861099438548,
    0.7722995420208204,  0.8481253440339862,    0.6486316093232217,    0.4760117444351255,
    0.32404302839486837, 0.644217687237691,     0.5321394129026369,    0.7748487086908196,
    0.7388112973680443,  0.8528419667996116,    0.7537236194166878,    0.8442242317482963,
    -0.9983409441568876, -0.9099590510617106,   -0.8611869110293084,   -0.6732574226520225,
    -0.3207262820915047, -0.016863771061083666, -0.3834290346129279,   -0.14531590623630106,
    -0.9983409441568876, -0.9099590510617106,   -0.8487346154778177,   -0.6517671422186732,
    -0.415902031428767,  -0.12640039012140108,  0.3980252834223069,    0.6515075663580078,
    0.21313049595649622, -0.15459947280389894,  0.21313049595649622,   -0.15459947280389894,
    0.0796861843117167,  -0.2510483748405505,   -0.29847444021690206,  -0.48091988423731385,
    0.21313049595649622, -0.15459947280389894,  0.21313049595649622,   -0.15459947280389894,
    -0.5318971668429018, -0.6930795262303331,   -0.021206226613045796, -0.3057890440788125,
    0.8836626267646351,  0.9931438028792043,    0.8836626267646351,    0.9931438028792043,
    0.5673265208072311,  0.2554561287532706,    0.1601034587576634,    -0.16618798804647933,
    0.8836626267646351,  0.9931438028792043,    0.8836626267646351,    0.9931438028792043,
    0.8309441510350045,  0.8702056715307316,    0.3074539610925686,    0.03181539991732446,
};
// [2, 4, 4, 3]
const std::vector<double> kMaskedDq = {
    0.0,
    0.0,
    0.0,
    0.09029658819076489,
    0.052205429322443764,
    0.007048510502069963,
    0.053192113618478996,
    0.014749209122862589,
    -0.025689931635865432,
    0.032223192293965114,
    0.028672525959427465,
    0.02124116774518113,
    0.0,
    0.0,
    0.0,
    -0.08535620668832003,
    -0.0493491227607062,
    -0.006662866574631041,
    -0.06781020017735608,
    -0.02625161470644136,
    0.01886000366309846,
    -0.03903905967260263,
    -0.021705384389740207,
    -0.0014339871542876515,
    0.0,
    0.0,
    0.0,
    0.0445982044974384,
    0.005367395402153072,
    -0.03458986548122345,
    -0.08961779353883971,
    -0.2113545506716423,
    -0.3044854608800567,
    -0.2228051331642458,
    -0.3074053810593877,
    -0.3503997527319751,
    0.0,
    0.0,
    0.0,
    -0.039550203507298994,
    -0.004759868314238705,
    0.030674692725602,
    0.09942105193061491,
    0.22851808929440043,
    0.32668627529900685,
    0.19806052047334477,
    0.21600471099037727,
    0.20471367719876965,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.10299053063037741,
    0.16216192294875098,
    0.1993854597319813,
    0.27162938210169196,
    0.37355472636212206,
    0.4249211908338799,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    -0.22125511581623616,
    -0.3483733390186727,
    -0.4283408650781447,
    -0.19282714698389194,
    -0.26617231312530026,
    -0.30349230535596716,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.04789987167952234,
    0.058698388371655405,
    0.06155235356427288,
    0.18329025968855744,
    0.11895420170400484,
    0.03851825055820182,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    -0.09619165668938137,
    -0.11787704276627736,
    -0.12360832409096341,
    -0.32897120653828654,
    -0.2845999324211762,
    -0.20170939256949744,
};
// [2, 2, 6, 3]
const std::vector<double> kMaskedDk = {
    -0.14467891655815351,
    -0.059828064044952264,
    0.03312023627059718,
    0.1413919301093833,
    0.07378117926275059,
    -0.0038155080739368102,
    -0.010989644026323193,
    -0.035469088991334115,
    -0.05514795915438632,
    0.014276630475093342,
    0.02151597377353577,
    0.02584323095772598,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.3123719555671452,
    0.17142206220490136,
    0.0072709969004718655,
    -0.09245867171992561,
    -0.16681501324020903,
    -0.2185937252830335,
    -0.3196888538252549,
    -0.17576077267380114,
    -0.008044295472006607,
    0.09977556997803513,
    0.1711537237091086,
    0.21936702385456822,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.3408821665873254,
    0.1412593511922091,
    -0.07748225470919919,
    0.0,
    0.0,
    0.0,
    -0.31461700126335557,
    -0.1498725664495148,
    0.03515641714927499,
    -0.02626516532396987,
    0.00861321525730567,
    0.04232583755992416,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    -0.1299800344694662,
    -0.06838401934788438,
    0.0024674519884955795,
    0.0,
    0.0,
    0.0,
    -0.089517882295526,
    -0.030352163682741615,
    0.03292157789606498,
    0.2194979167649922,
    0.09873618303062598,
    -0.035389029884560594,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
};
// [2, 2, 6, 2]
const std::vector<double> kMaskedDv = {
    -0.15252367873873163,
    -0.22192407317912388,
    -0.09762240711713077,
    0.01773965245280762,
    0.06890914295441147,
    0.025269334030705803,
    0.23685242080235847,
    0.05129395872312783,
    0.0,
    0.0,
    0.0,
    0.0,
    0.4445525581532179,
    0.3242863605330739,
    0.1219606393356345,
    0.0037492735088311413,
    0.1413837699179099,
    0.08103508755259115,
    -0.47959378331403035,
    -0.3568387016305477,
    0.0,
    0.0,
    0.0,
    0.0,
    0.5905621459418047,
    0.58079038698496,
    0.0,
    0.0,
    -0.3033381384084589,
    -0.4175983236762723,
    0.08398243841662027,
    0.06207891276479107,
    0.0,
    0.0,
    0.0,
    0.0,
    -0.25681501255203076,
    -0.43279727584678385,
    0.0,
    0.0,
    0.5602628339446064,
    0.6771081633218315,
    0.16223427569175253,
    0.12461018237684424,
    0.0,
    0.0,
    0.0,
    0.0,
};

Tensor wave(const Shape& s, int tag, double scale = 1.0) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(0.37 * static_cast<double>(i) + 0.11 * tag) * scale;
  return f64(v, s);
}

// out, dq, dk, dv of sum(attention(wave(q), wave(k), wave(v)) * wave(out)) in dtype.
std::array<std::vector<double>, 4> against_torch(const Shape& qs, const Shape& ks, const Shape& vs,
                                                 const AttentionOptions& o, DType dtype) {
  Variable q(wave(qs, 1).to(dtype), true), k(wave(ks, 2).to(dtype), true),
      v(wave(vs, 3).to(dtype), true);
  const Variable y = scaled_dot_product_attention(q, k, v, o);
  sum(mul(y, Variable(wave(y.shape(), 4).to(dtype)))).backward();
  return {values(y), values(q.grad()), values(k.grad()), values(v.grad())};
}

// |got - want| <= tol * max|want| for every element.
void expect_close_to(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const char* what) {
  double m = 0.0;
  for (double w : want) m = std::max(m, std::abs(w));
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * m) << what << " " << i;
}

void expect_matches_torch(const Shape& qs, const Shape& ks, const Shape& vs,
                          const AttentionOptions& o,
                          const std::array<const std::vector<double>*, 4>& want) {
  // float64 runs the reference kernel, float32 the tiled one.
  for (auto [dtype, tol] : {std::pair{DType::float64, 1e-12}, std::pair{DType::float32, 1e-5}}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const auto got = against_torch(qs, ks, vs, o, dtype);
    const char* names[4] = {"out", "dq", "dk", "dv"};
    for (int i = 0; i < 4; ++i) expect_close_to(got[i], *want[i], tol, names[i]);
  }
}

TEST(AttentionTest, ValuesAndGradientsMatchPyTorch) {
  expect_matches_torch({1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}, {},
                       {&kPlainOut, &kPlainDq, &kPlainDk, &kPlainDv});
}

TEST(AttentionTest, CausalGroupedPaddedAndBiasedMatchPyTorch) {
  const Tensor kp = bools({1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1}, {2, 6});
  expect_matches_torch(
      {2, 4, 4, 3}, {2, 2, 6, 3}, {2, 2, 6, 2},
      {.causal = true, .mask = wave({4, 6}, 5, 0.5), .key_padding_mask = kp, .scale = 0.6},
      {&kMaskedOut, &kMaskedDq, &kMaskedDk, &kMaskedDv});
}

TEST(AttentionTest, GradientsMatchFiniteDifferences) {
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) { return scaled_dot_product_attention(v[0], v[1], v[2]); },
      (Vars{input({2, 2, 3, 4}, 1), input({2, 2, 5, 4}, 2), input({2, 2, 5, 3}, 3)}));
}

TEST(AttentionTest, GradientsWithCausalMaskGroupedHeadsAndStridedInputs) {
  const Tensor mask = bools({1, 1, 0, 1, 1, 1, 1, 0, 1, 1}, {2, 1, 1, 5});
  const Tensor bias = randn({4, 5}, 9);
  OSPREY_EXPECT_GRADCHECK(
      [&](const Vars& v) {
        return scaled_dot_product_attention(
            v[0], v[1], v[2],
            {.causal = true, .key_padding_mask = mask.reshape({2, 5}), .scale = 0.7});
      },
      (Vars{input({2, 4, 4, 3}, 4, true), input({2, 2, 5, 3}, 5, true), input({2, 2, 5, 2}, 6)}));
  OSPREY_EXPECT_GRADCHECK(
      [&](const Vars& v) { return scaled_dot_product_attention(v[0], v[1], v[2], {.mask = bias}); },
      (Vars{input({1, 3, 4, 2}, 7), input({1, 1, 5, 2}, 8), input({1, 1, 5, 2}, 10)}));
}

TEST(AttentionTest, GradientsWithDropoutAndAFixedSeed) {
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) {
        return scaled_dot_product_attention(v[0], v[1], v[2], {.dropout = 0.3, .seed = 11});
      },
      (Vars{input({1, 2, 4, 3}, 12), input({1, 2, 6, 3}, 13), input({1, 2, 6, 3}, 14)}));
}

// A query row that may attend to no key gives output 0 and gradients 0, not NaN; the other rows
// are unaffected.
TEST(AttentionTest, FullyMaskedRowsGiveZeroOutputAndZeroGradient) {
  for (DType dt : {DType::float64, DType::float32}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Variable q(randn({1, 1, 3, 4}, 1).to(dt), true);
    Variable k(randn({1, 1, 3, 4}, 2).to(dt), true);
    Variable v(randn({1, 1, 3, 4}, 3).to(dt), true);
    // Row 1 masked out entirely; row 0 sees keys 0 and 2.
    const Tensor mask = bools({1, 0, 1, 0, 0, 0, 1, 1, 1}, {3, 3});
    const Variable y = scaled_dot_product_attention(q, k, v, {.mask = mask});
    sum(mul(y, Variable(randn({1, 1, 3, 4}, 4).to(dt)))).backward();
    const std::vector<double> out = values(y), dq = values(q.grad());
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(out[4 + c], 0.0);
      EXPECT_EQ(dq[4 + c], 0.0);
      EXPECT_TRUE(std::isfinite(out[c]) && std::isfinite(out[8 + c]));
    }
    for (double g : values(k.grad())) EXPECT_TRUE(std::isfinite(g));
    for (double g : values(v.grad())) EXPECT_TRUE(std::isfinite(g));
    // A float mask of -inf acts the same.
    const Tensor additive = where(mask, zeros({3, 3}), full({3, 3}, -INFINITY));
    expect_near_all(values(scaled_dot_product_attention(q, k, v, {.mask = additive})), out, 0.0);
  }
}

TEST(AttentionTest, CausalIsTopLeftAlignedWhenTqDiffersFromTk) {
  // Query i attends keys 0..i (PyTorch 2's is_causal), so with Tq = 2 < Tk = 4 the first query
  // sees key 0 only: its output is v[0].
  const Variable q(randn({1, 1, 2, 3}, 1)), k(randn({1, 1, 4, 3}, 2)), v(randn({1, 1, 4, 3}, 3));
  const std::vector<double> y = values(scaled_dot_product_attention(q, k, v, {.causal = true}));
  const std::vector<double> v0 = values(v.value().narrow(2, 0, 1));
  expect_near_all({y[0], y[1], y[2]}, v0, 1e-15);
  const Tensor tril = bools({1, 0, 0, 0, 1, 1, 0, 0}, {2, 4});
  expect_near_all(y, values(scaled_dot_product_attention(q, k, v, {.mask = tril})), 1e-15);
}

TEST(AttentionTest, WeightsAreTheSoftmaxOfTheScaledScores) {
  const Variable q(randn({1, 2, 3, 4}, 1)), k(randn({1, 1, 5, 4}, 2)), v(randn({1, 1, 5, 2}, 3));
  const auto [y, w] = scaled_dot_product_attention_with_weights(q, k, v, {.scale = 0.5});
  const Tensor scores = osprey::mul(osprey::matmul(q.value(), k.value().transpose(2, 3)), 0.5);
  expect_near_all(values(w), values(osprey::softmax(scores, -1)), 1e-14);
  expect_near_all(values(y), values(osprey::matmul(w, v.value())), 1e-14);
}

// float64 runs the reference kernel, float32 the tiled one; both draw the same decisions.
TEST(AttentionTest, DropoutIsFixedBySeedAndUnbiased) {
  for (DType dt : {DType::float64, DType::float32}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const Variable q(randn({1, 2, 8, 4}, 1).to(dt)), k(randn({1, 2, 16, 4}, 2).to(dt)),
        v(randn({1, 2, 16, 4}, 3).to(dt));
    const std::vector<double> plain = values(scaled_dot_product_attention(q, k, v));
    const std::vector<double> a =
        values(scaled_dot_product_attention(q, k, v, {.dropout = 0.25, .seed = 5}));
    EXPECT_EQ(values(scaled_dot_product_attention(q, k, v, {.dropout = 0.25, .seed = 5})), a);
    EXPECT_NE(values(scaled_dot_product_attention(q, k, v, {.dropout = 0.25, .seed = 6})), a);
    EXPECT_EQ(values(scaled_dot_product_attention(q, k, v, {.dropout = 0.0, .seed = 5})), plain);
    // The mean over many seeds approaches the output without dropout (each weight is kept with
    // probability 0.75 and scaled by 1 / 0.75).
    std::vector<double> mean(plain.size(), 0.0);
    const int n = 400;
    for (int s = 0; s < n; ++s) {
      const std::vector<double> y = values(scaled_dot_product_attention(
          q, k, v, {.dropout = 0.25, .seed = static_cast<uint64_t>(100 + s)}));
      for (size_t i = 0; i < y.size(); ++i) mean[i] += y[i] / n;
    }
    expect_near_all(mean, plain, 0.08);
  }
}

// Layers hold [batch, time, heads, depth] and hand the op a permuted view.
TEST(AttentionTest, PermutedFloat32InputsGiveTheContiguousResult) {
  const auto bthd = [](uint64_t seed) { return randn({2, 70, 3, 8}, seed).to(DType::float32); };
  const Tensor qt = bthd(1), kt = bthd(2), vt = bthd(3), w = bthd(4).permute({0, 2, 1, 3});
  const auto run = [&](bool permuted) {
    Variable q(permuted ? qt.permute({0, 2, 1, 3}) : qt.permute({0, 2, 1, 3}).contiguous(), true);
    Variable k(permuted ? kt.permute({0, 2, 1, 3}) : kt.permute({0, 2, 1, 3}).contiguous(), true);
    Variable v(permuted ? vt.permute({0, 2, 1, 3}) : vt.permute({0, 2, 1, 3}).contiguous(), true);
    const Variable y = scaled_dot_product_attention(q, k, v, {.causal = true});
    sum(mul(y, Variable(w))).backward();
    return std::vector<std::vector<double>>{values(y), values(q.grad()), values(k.grad()),
                                            values(v.grad())};
  };
  EXPECT_EQ(run(true), run(false));
}

TEST(AttentionTest, BadInputNamesTheOpAndTheShapes) {
  const Variable q(randn({1, 3, 4, 8}, 1)), k(randn({1, 2, 4, 8}, 2)), v(randn({1, 2, 4, 8}, 3));
  expect_message([&] { scaled_dot_product_attention(q, k, v); },
                 "scaled_dot_product_attention: the query heads must be a multiple of the "
                 "key/value heads. Received: query [1, 3, 4, 8] with 3 heads, key [1, 2, 4, 8] "
                 "with 2 heads");
  const Variable q2(randn({1, 2, 4, 6}, 1));
  expect_message([&] { scaled_dot_product_attention(q2, k, v); },
                 "scaled_dot_product_attention: query and key must have the same depth (last "
                 "axis). Received: query [1, 2, 4, 6], key [1, 2, 4, 8]");
  const Variable q3(randn({1, 2, 4, 8}, 1));
  expect_message(
      [&] {
        scaled_dot_product_attention(q3, k, v, {.mask = ones({3, 4})});
      },
      "scaled_dot_product_attention: mask must broadcast to [batch, heads, Tq, Tk] = "
      "[1, 2, 4, 4]. Received: mask of shape [3, 4]");
  expect_message(
      [&] {
        scaled_dot_product_attention(q3, k, v,
                                     {.key_padding_mask = ones({1, 5}, {DType::boolean})});
      },
      "scaled_dot_product_attention: key_padding_mask must be bool [batch, Tk] = [1, 4] (true = "
      "a real key). Received: bool[1, 5] on cpu:0");
  expect_message(
      [&] { scaled_dot_product_attention(q3, Variable(k.value().to(DType::float32)), v); },
      "scaled_dot_product_attention: query, key and value must have one dtype. Received: query "
      "float64, key float32, value float64");
  expect_message(
      [&] {
        scaled_dot_product_attention(Variable(randn({2, 4, 8}, 1)), k, v);
      },
      "scaled_dot_product_attention: query must be 4-D [batch, heads, time, depth]. "
      "Received: query of shape [2, 4, 8]");
  expect_message(
      [&] {
        scaled_dot_product_attention(q3, k, v, {.mask = ones({4, 4}, {DType::int32})});
      },
      "scaled_dot_product_attention: mask must be bool (true = attend) or floating point (added "
      "to the scores). Received: mask of dtype int32");
  expect_message([&] { scaled_dot_product_attention(q3, k, v, {.dropout = 1.0}); },
                 "scaled_dot_product_attention: dropout must be in [0, 1). Received: dropout=1");
}

}  // namespace
}  // namespace osprey::autograd
