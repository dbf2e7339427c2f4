#include "osprey/nn/layers/rms_normalization.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

// PyTorch 1.13 (float64; 1.13 has no RMSNorm module, so the formula):
//   y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * s, then (y * w).sum().backward()
// with x = wave([2, 3, 4], 1, 2.0, 0.3), s = wave([4], 2, 0.3, 1.0), w = wave([2, 3, 4], 3).
const std::vector<double> kRms = {
    0.35437300764335056,  0.9140046638391932,  1.4375084947366001, 1.800638839085762,
    1.2953573633158733,   1.3266344296570418,  1.1530626918159228, 0.7883596559954607,
    0.5288371064777151,   -0.3764781467398194, -1.311093799466577, -2.0588362552295956,
    -1.246146674951388,   -1.3512225943775515, -1.197458187419579, -0.7826003771940457,
    -0.18903178986243963, 0.5491484317101653,  1.3588332662955713, 2.0650526447801507,
    1.1060601808683646,   1.2760070155635965,  1.270923250136157,  1.0694128173955013};
const std::vector<double> kRmsDx = {
    0.021417106773850808,  0.011169628283461519,  0.007046407921927789,   -0.017213366723985546,
    0.039036801148239375,  0.030697686331945334,  -0.019623799637711825,  -0.10515229537380127,
    -0.6053307403501758,   -0.3689766515153914,   -0.17373165787869427,   0.0008971459634723455,
    -0.004267816914879541, -0.010312041607098532, -0.0006042354765700697, 0.028895920818399368,
    0.08188560731275582,   0.04045160529035374,   0.018868420273812414,   -0.015688221907149247,
    0.013719559645579027,  0.023041030889788594,  0.0028803953075539623,  -0.05116968775328379};
const std::vector<double> kRmsDscale = {3.419182462749948, 3.8665997637746203, 4.557555125360517,
                                        5.1367268952612894};

TEST(RMSNormalizationTest, ForwardAndGradientsMatchPyTorch) {
  auto norm = layers::RMSNormalization({.dtype = "float64"});
  norm->build({{2, 3, 4}});
  test::set_weight(*norm, "scale", wave({4}, 2, 0.3, 1.0));
  Variable x(wave({2, 3, 4}, 1, 2.0, 0.3), /*requires_grad=*/true);
  const Variable y = norm(x);
  test::expect_values_near(y.value(), kRms);
  autograd::sum(autograd::mul(y, Variable(wave({2, 3, 4}, 3)))).backward();
  test::expect_values_near(x.grad(), kRmsDx);
  test::expect_values_near(norm->scale().grad(), kRmsDscale);
}

TEST(RMSNormalizationTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::RMSNormalization({.epsilon = 1e-5, .dtype = "float64"}); },
      Shape{2, 3, 5}, {.output_shape = {2, 3, 5}, .params = 5, .weights = {{"scale", {5}}}});
}

TEST(RMSNormalizationTest, ConfigAndBadArguments) {
  const nlohmann::json c = layers::RMSNormalization({.epsilon = 1e-5})->get_config();
  EXPECT_EQ(c["axis"], -1);
  EXPECT_EQ(c["epsilon"], 1e-5);
  EXPECT_EQ(std::dynamic_pointer_cast<RMSNormalization>(layer_from_config("RMSNormalization", c))
                ->options()
                .epsilon,
            1e-5);
  EXPECT_EQ(test::value_error([] { layers::RMSNormalization({.axis = 1}); }),
            "RMSNormalization: only the last axis is normalized (axis=-1). Received: axis=1");
  EXPECT_EQ(test::value_error([] { layers::RMSNormalization({.epsilon = 0}); }),
            "RMSNormalization: epsilon must be positive. Received: epsilon=0");
  auto norm = layers::RMSNormalization({.name = "n"});
  norm(Variable(zeros({2, 4})));
  EXPECT_EQ(test::value_error([&] {
              norm(Variable(zeros({2, 5})));
            }),
            "n: the last axis has 5 values; the layer was built for 4. Received: [2, 5]");
}

}  // namespace
}  // namespace osprey::nn
