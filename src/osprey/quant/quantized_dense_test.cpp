#include "osprey/quant/quantized_dense.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/nn/layers/dense.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::quant {
namespace {

using autograd::Variable;

std::shared_ptr<nn::Dense> built_dense(int64_t in, int64_t units, const char* activation,
                                       bool use_bias = true) {
  auto d = std::make_shared<nn::Dense>(
      units, activation, nn::DenseOptions{.use_bias = use_bias, .bias_initializer = "ones"});
  d->build({Shape{-1, in}});
  return d;
}

TEST(QuantizedDenseTest, WeightsAreInt8KernelsWithPerUnitScalesUnderTheDensePaths) {
  nn::clear_session();
  auto d = built_dense(20, 7, "relu");
  d->set_path_prefix("sequential");
  auto q = QuantizedDense::from_dense(*d);
  q->set_path_prefix("sequential");
  const auto vars = q->variables();
  ASSERT_EQ(vars.size(), 3u);
  EXPECT_EQ(vars[0].name(), "sequential/dense/kernel");
  EXPECT_EQ(vars[0].value().dtype(), DType::int8);
  EXPECT_EQ(vars[0].shape(), (Shape{20, 7}));
  EXPECT_EQ(vars[1].name(), "sequential/dense/kernel_scale");
  EXPECT_EQ(vars[1].value().dtype(), DType::float32);
  EXPECT_EQ(vars[1].shape(), (Shape{7}));
  EXPECT_EQ(vars[2].name(), "sequential/dense/bias");
  EXPECT_TRUE(q->trainable_variables().empty());
  // Per output unit, abs-max: 127 / (max_k |w[k, n]| + 1e-7), and some entry of each column is
  // +-127.
  const auto w = d->kernel().value().to_vector<double>();
  const auto s = q->kernel_scale().value().to_vector<double>();
  const auto k = q->kernel().value().to_vector<int8_t>();
  for (int64_t n = 0; n < 7; ++n) {
    double amax = 0.0;
    int qmax = 0;
    for (int64_t i = 0; i < 20; ++i) {
      amax = std::max(amax, std::fabs(w[i * 7 + n]));
      qmax = std::max(qmax, std::abs(int{k[i * 7 + n]}));
    }
    EXPECT_NEAR(s[n], 127.0 / (amax + 1e-7), 127.0 / amax * 2.4e-7);
    EXPECT_EQ(qmax, 127);
  }
}

TEST(QuantizedDenseTest, ForwardIsTheInt8LinearOfTheDenseWeightsAndCloseToDense) {
  nn::clear_session();
  auto d = built_dense(64, 10, "linear");
  auto q = QuantizedDense::from_dense(*d);
  const Variable x(random_normal({32, 64}, {.seed = 3}));
  const Tensor y = (*q)(x).value();
  const QuantizedRows w = quantize_columns_int8(d->kernel().value());
  const Tensor b = d->bias().value();
  EXPECT_EQ(y.to_vector<float>(), linear_int8(x.value(), w, &b).to_vector<float>());
  // Within 2% of the output range of the float layer (the quantization-error scale for K = 64).
  const auto yf = (*d)(x).value().to_vector<double>();
  const auto yq = y.to_vector<double>();
  double range = 0.0, worst = 0.0;
  for (size_t i = 0; i < yf.size(); ++i) {
    range = std::max(range, std::fabs(yf[i]));
    worst = std::max(worst, std::fabs(yf[i] - yq[i]));
  }
  EXPECT_LT(worst, 0.02 * range);
}

TEST(QuantizedDenseTest, SoftmaxAndFusedActivationsAndNoBiasWork) {
  nn::clear_session();
  const Variable x(random_normal({5, 12}, {.seed = 4}));
  for (const char* act : {"softmax", "relu", "tanh"}) {
    auto d = built_dense(12, 6, act, false);
    auto q = QuantizedDense::from_dense(*d);
    EXPECT_FALSE(q->bias().defined());
    const auto yq = (*q)(x).value().to_vector<double>();
    const auto yf = (*d)(x).value().to_vector<double>();
    for (size_t i = 0; i < yq.size(); ++i) EXPECT_NEAR(yq[i], yf[i], 0.05) << act;
  }
}

TEST(QuantizedDenseTest, ConfigRoundTripsAndNamesTheMode) {
  nn::clear_session();
  auto q = QuantizedDense::from_dense(*built_dense(8, 3, "relu"));
  const nlohmann::json c = q->get_config();
  EXPECT_EQ(c["quantization_mode"], "int8");
  EXPECT_EQ(c["units"], 3);
  auto back = QuantizedDense::from_config(c);
  EXPECT_EQ(back->get_config(), c);
  nlohmann::json bad = c;
  bad["quantization_mode"] = "int4";
  testing::expect_error<ValueError>([&] { QuantizedDense::from_config(bad); }, {"int8", "int4"});
}

TEST(QuantizedDenseTest, AnUnbuiltDenseOrAWrongInputWidthIsAValueError) {
  nn::clear_session();
  nn::Dense unbuilt(4);
  testing::expect_error<ValueError>([&] { QuantizedDense::from_dense(unbuilt); },
                                    {"dense", "not built"});
  auto q = QuantizedDense::from_dense(*built_dense(8, 3, "relu"));
  testing::expect_error<ValueError>(
      [&] {
        (*q)(Variable(zeros({2, 9})));
      },
      {"8 features", "[2, 9]"});
}

}  // namespace
}  // namespace osprey::quant
