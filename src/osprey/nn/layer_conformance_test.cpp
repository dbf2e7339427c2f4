// Tests of the conformance harness itself (testing/layer_conformance.h): it passes a correct
// layer and reports each kind of defect it exists to catch.
#include "osprey/testing/layer_conformance.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {
namespace {

using testing::check_layer_conformance;
using testing::ConformanceResult;

struct ScaleOptions {
  double factor = 1.0;
  bool forget_factor_in_config = false;  // a defect: the config drops a field
  bool detach_square = false;            // a defect: part of the forward gets no gradient
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// y = factor * x * w (+ x^2 with detach_square, whose gradient is dropped).
class Scale : public SingleInputLayer {
 public:
  explicit Scale(ScaleOptions o) : SingleInputLayer("Scale", base_options(o)), o_(o) {}
  nlohmann::json get_config() const override {
    nlohmann::json c = Layer::get_config();
    if (!o_.forget_factor_in_config) c["factor"] = o_.factor;
    c["detach_square"] = o_.detach_square;
    return c;
  }
  static std::shared_ptr<Layer> from_config(const nlohmann::json& c) {
    ScaleOptions o;
    read_base_options(c, o);
    o.factor = c.value("factor", 1.0);
    o.detach_square = c.value("detach_square", false);
    return std::make_shared<Scale>(o);
  }

 protected:
  void build_single(const Shape& s) override { w_ = add_weight("w", {s[s.ndim() - 1]}, "ones"); }
  Variable call_single(const Variable& x, bool) override {
    Variable y = autograd::mul(autograd::mul(x, w_), o_.factor);
    return o_.detach_square ? autograd::add(y, autograd::square(x.detach())) : y;
  }

 private:
  ScaleOptions o_;
  Variable w_;
};

ConformanceResult check(ScaleOptions o, const testing::ConformanceExpectations& e) {
  register_layer("Scale", &Scale::from_config);
  o.dtype = "float64";
  return check_layer_conformance([o] { return make_layer<Scale>(o); }, Shape{2, 3}, e);
}

const testing::ConformanceExpectations kRight{
    .output_shape = {2, 3}, .params = 3, .weights = {{"w", {3}}}};

TEST(LayerConformanceTest, PassesACorrectLayer) {
  const ConformanceResult r = check({.factor = 2.0}, kRight);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(LayerConformanceTest, ReportsWrongShapesCountsAndNames) {
  const ConformanceResult r =
      check({.factor = 2.0}, {.output_shape = {2, 4}, .params = 4, .weights = {{"kernel", {3}}}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("output shape [2, 3], expected [2, 4]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("compute_output_shape: [2, 3], expected [2, 4]"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("count_params() = 3, expected 4"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("weight names: got [w], expected [kernel]"), std::string::npos)
      << r.message;
}

TEST(LayerConformanceTest, ReportsAConfigThatLosesAField) {
  const ConformanceResult r = check({.factor = 2.0, .forget_factor_in_config = true}, kRight);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("round trip: the rebuilt layer's output differs"), std::string::npos)
      << r.message;
}

TEST(LayerConformanceTest, ReportsAWrongGradient) {
  const ConformanceResult r = check({.factor = 2.0, .detach_square = true}, kRight);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("gradcheck (training=true)"), std::string::npos) << r.message;
}

TEST(LayerConformanceTest, ReportsALayerThatDoesNotLearn) {
  // factor 0: the output, and so the loss, does not depend on w.
  const ConformanceResult r = check({.factor = 0.0}, kRight);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("training: an SGD step left the loss at"), std::string::npos)
      << r.message;
}

TEST(LayerConformanceTest, ReportsNonTrainableCounts) {
  const ConformanceResult r = check_layer_conformance(
      [] { return layers::BatchNormalization({.dtype = "float64"}); }, Shape{4, 2},
      {.output_shape = {4, 2},
       .params = 8,
       .non_trainable_params = 0,
       .weights = {{"gamma", {2}}, {"beta", {2}}, {"moving_mean", {2}}, {"moving_variance", {2}}}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("non-trainable parameters: 4, expected 0"), std::string::npos)
      << r.message;
}

}  // namespace
}  // namespace osprey::nn
