#include "osprey/nn/regularizer.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/layer_test_helpers.h"

namespace osprey::nn {
namespace {

TEST(RegularizerTest, PenaltiesAreL1SumAbsPlusL2SumSquares) {
  const autograd::Variable w(from_vector<double>({1, -2, 3}, {3}), true);
  EXPECT_DOUBLE_EQ(Regularizer::l1(0.5)(w).item(), 3.0);
  EXPECT_DOUBLE_EQ(Regularizer::l2(0.1)(w).item(), 1.4);
  EXPECT_DOUBLE_EQ(Regularizer::l1_l2(0.5, 0.1)(w).item(), 4.4);
  EXPECT_FALSE(static_cast<bool>(Regularizer()));
}

TEST(RegularizerTest, L2GradientIsTwiceFactorTimesWeight) {
  autograd::Variable w(from_vector<double>({1, -2, 3}, {3}), true);
  Regularizer::l2(0.1)(w).backward();
  test::expect_values_near(w.grad(), {0.2, -0.4, 0.6}, 1e-15);
}

TEST(RegularizerTest, JsonMatchesKerasAndRoundTrips) {
  const nlohmann::json j = Regularizer::l2(1e-4).to_json();
  EXPECT_EQ(j, (nlohmann::json{{"class_name", "L2"}, {"config", {{"l2", 1e-4}}}}));
  EXPECT_EQ(Regularizer::l1_l2(0.1, 0.2).to_json()["class_name"], "L1L2");
  EXPECT_EQ(Regularizer::from_json(j).to_json(), j);
  EXPECT_TRUE(Regularizer().to_json().is_null());
  EXPECT_FALSE(static_cast<bool>(Regularizer::from_json(nullptr)));
}

// Keras 3 wraps each object with "module" and "registered_name"; an unset factor is Keras's
// default; a class osprey has no penalty for is refused, not read as no regularizer.
TEST(RegularizerTest, ReadsKeras3ObjectsAndRefusesOtherClasses) {
  const auto keras = [](const char* cls, nlohmann::json config) {
    return nlohmann::json{{"module", "keras.regularizers"},
                          {"class_name", cls},
                          {"config", std::move(config)},
                          {"registered_name", nullptr}};
  };
  EXPECT_EQ(Regularizer::from_json(keras("L2", {{"l2", 1e-4}})).to_json(),
            Regularizer::l2(1e-4).to_json());
  EXPECT_EQ(Regularizer::from_json(keras("L1", nlohmann::json::object())).to_json(),
            Regularizer::l1(0.01).to_json());
  EXPECT_EQ(Regularizer::from_json(keras("L1L2", {{"l1", 0.5}, {"l2", 0.25}})).to_json(),
            Regularizer::l1_l2(0.5, 0.25).to_json());
  EXPECT_EQ(test::value_error([&] {
              Regularizer::from_json(keras("OrthogonalRegularizer", {{"factor", 0.01}}));
            }),
            "unknown regularizer class 'OrthogonalRegularizer'. Known: L1, L2, L1L2");
  EXPECT_EQ(test::value_error([] { Regularizer::from_json("l2"); }),
            "regularizer config must be {\"class_name\": \"L1\", \"L2\" or \"L1L2\", "
            "\"config\": {...}}. Received: \"l2\"");
}

TEST(RegularizerTest, RejectsNegativeFactors) {
  EXPECT_EQ(test::value_error([] { Regularizer::l2(-1.0); }),
            "Regularizer: factors must be non-negative. Received: l1=0, l2=-1");
}

}  // namespace
}  // namespace osprey::nn
