// Layers under dtype policies: which dtypes each layer keeps and computes in, mixed_bfloat16
// outputs and gradients against the float32 computation of the same weights, the float32
// output layer, the once-per-step weight cast, and the policy in configs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/precision/dtype_policy.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {
namespace {

using precision::DTypePolicyScope;

// max |got - want| / max |want|: bfloat16 keeps 8 significant bits, so one rounding of each
// operand and of the result puts this near 1e-2 for sums of a few hundred products.
double max_rel_error(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  EXPECT_EQ(g.size(), w.size());
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) {
    err = std::max(err, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return err / scale;
}

void copy_weights(const Layer& from, const Layer& to) {
  for (size_t i = 0; i < from.own_weights().size(); ++i) {
    Variable v = to.own_weights()[i].variable;
    v.set_value(from.own_weights()[i].variable.value().to(v.dtype()));
  }
}

// Output and input/weight gradients of `layer` on x, for the loss sum(y * r).
struct Result {
  Tensor y, dx;
  std::vector<Tensor> dw;
};
Result run(Layer& layer, const Tensor& x, const Tensor& r) {
  Variable xv(x, true);
  Variable y = layer(xv, true);
  autograd::sum(autograd::mul(autograd::cast(y, DType::float32), Variable(r))).backward();
  Result out{y.value(), xv.grad(), {}};
  for (const Variable& w : layer.trainable_variables()) out.dw.push_back(w.grad());
  return out;
}

TEST(MixedPrecisionTest, LayersTakeTheGlobalPolicyOrTheirOwnDtype) {
  DTypePolicyScope scope("mixed_bfloat16");
  auto hidden = layers::Dense(4, "relu");
  auto out = layers::Dense(2, "softmax", {.dtype = "float32"});
  auto half = layers::Dense(2, {}, {.dtype = "float16"});
  EXPECT_EQ(hidden->dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(hidden->variable_dtype(), DType::float32);
  EXPECT_EQ(hidden->compute_dtype(), DType::bfloat16);
  EXPECT_EQ(out->dtype_policy().name(), "float32");
  EXPECT_EQ(out->compute_dtype(), DType::float32);
  EXPECT_EQ(half->variable_dtype(), DType::float16);
  EXPECT_EQ(half->compute_dtype(), DType::float16);

  const Variable h = hidden(Variable(random_normal({3, 5}, {.seed = 1})));
  EXPECT_EQ(hidden->kernel().dtype(), DType::float32);  // the master weights
  EXPECT_EQ(h.dtype(), DType::bfloat16);
  const Variable p = out(h);
  EXPECT_EQ(p.dtype(), DType::float32);  // the float32 output layer casts its input up
  EXPECT_EQ(half(h).dtype(), DType::float16);
  EXPECT_EQ(half->kernel().dtype(), DType::float16);
}

TEST(MixedPrecisionTest, IntegerInputsAreNotCast) {
  DTypePolicyScope scope("mixed_bfloat16");
  auto emb = layers::Embedding(10, 4);
  const Variable y = emb(Variable(from_vector<int64_t>({1, 7, 3}, {3})));
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(emb->own_weights()[0].variable.dtype(), DType::float32);
}

TEST(MixedPrecisionTest, DenseMixedBfloat16MatchesFloat32WithinBfloat16Rounding) {
  // tanh, not relu: a relu whose input rounds across 0 flips one term of a gradient sum, an O(1)
  // change that says nothing about the precision of the arithmetic.
  auto ref = layers::Dense(96, "tanh");
  auto mixed = layers::Dense(96, "tanh", {.dtype = "mixed_bfloat16"});
  const Tensor x = random_normal({32, 200}, {.seed = 2});
  const Tensor r = random_normal({32, 96}, {.seed = 3});
  ref->build({x.shape()});
  mixed->build({x.shape()});
  copy_weights(*ref, *mixed);
  const Result want = run(*ref, x, r), got = run(*mixed, x, r);
  EXPECT_EQ(got.y.dtype(), DType::bfloat16);
  EXPECT_EQ(got.dx.dtype(), DType::float32);     // cast back to the input's dtype
  EXPECT_EQ(got.dw[0].dtype(), DType::float32);  // accumulated into the float32 master
  EXPECT_LT(max_rel_error(got.y, want.y), 1.5e-2);
  EXPECT_LT(max_rel_error(got.dx, want.dx), 2e-2);
  EXPECT_LT(max_rel_error(got.dw[0], want.dw[0]), 2e-2);  // kernel
  EXPECT_LT(max_rel_error(got.dw[1], want.dw[1]), 2e-2);  // bias
}

TEST(MixedPrecisionTest, Conv2DPoolingAndBatchNormMixedBfloat16MatchFloat32) {
  // Smooth pieces only (tanh, average pooling): see the Dense test on relu's kink; max pooling's
  // argmax flips the same way between near-equal values.
  auto make = [](const std::string& dtype) {
    std::vector<std::shared_ptr<Layer>> ls{
        layers::Conv2D(16, 3, {.activation = "tanh", .dtype = dtype}),
        layers::AveragePooling2D(2, {.dtype = dtype}),
        layers::BatchNormalization({.dtype = dtype})};
    return ls;
  };
  auto ref = make("float32"), mixed = make("mixed_bfloat16");
  const Tensor x = random_normal({4, 12, 12, 3}, {.seed = 4});
  const Tensor r = random_normal({4, 5, 5, 16}, {.seed = 5});
  Variable xr(x, true), xm(x, true);
  Variable yr = xr, ym = xm;
  for (size_t i = 0; i < ref.size(); ++i) {
    yr = (*ref[i])(yr, true);
    if (!mixed[i]->built()) mixed[i]->build({ym.shape()});
    copy_weights(*ref[i], *mixed[i]);
    ym = (*mixed[i])(ym, true);
  }
  EXPECT_EQ(ym.dtype(), DType::bfloat16);
  autograd::sum(autograd::mul(yr, Variable(r))).backward();
  autograd::sum(autograd::mul(autograd::cast(ym, DType::float32), Variable(r))).backward();
  EXPECT_LT(max_rel_error(ym.value(), yr.value()), 3e-2);
  EXPECT_LT(max_rel_error(xm.grad(), xr.grad()), 3e-2);
  const auto wr = ref[0]->trainable_variables(), wm = mixed[0]->trainable_variables();
  EXPECT_LT(max_rel_error(wm[0].grad(), wr[0].grad()), 3e-2);  // conv kernel
  // Normalization parameters and statistics stay float32 under the mixed policy.
  for (const Variable& v : mixed[2]->variables()) EXPECT_EQ(v.dtype(), DType::float32) << v.name();
}

// A layer that reads its weight twice per call, as a shared or repeated use would.
class TwiceReader : public SingleInputLayer {
 public:
  TwiceReader() : SingleInputLayer("TwiceReader", {.dtype = "mixed_bfloat16"}) {}
  Variable first, second;

 protected:
  void build_single(const Shape& s) override { w_ = add_weight("w", {s[1]}, "ones"); }
  Variable call_single(const Variable& x, bool) override {
    first = autocast(w_);
    second = autocast(w_);
    return autograd::add(autograd::mul(x, first), second);
  }
  Variable w_;
};

TEST(MixedPrecisionTest, WeightsAreCastOncePerStepAndRecastAfterTheUpdate) {
  auto layer = std::make_shared<TwiceReader>();
  const Variable x(from_vector<float>({1, 2, 3, 4}, {2, 2}));
  const Variable y1 = (*layer)(x, true);
  const Variable cast1 = layer->first;
  EXPECT_TRUE(layer->first.is_same(layer->second));
  EXPECT_EQ(cast1.dtype(), DType::bfloat16);
  (*layer)(x, true);  // a second forward in the same step reuses the cast
  EXPECT_TRUE(layer->first.is_same(cast1));

  autograd::sum(y1).backward();
  const Variable master = layer->variables()[0];
  ASSERT_TRUE(master.has_grad());
  EXPECT_EQ(master.grad().dtype(), DType::float32);
  // d/dw sum(x * w + w) = column sums of x + rows = {1 + 3 + 2, 2 + 4 + 2}
  EXPECT_EQ(master.grad().to_vector<double>(), (std::vector<double>{6, 8}));
  // An optimizer step, as optim::Optimizer::apply does it: in place, then mark_modified().
  Tensor w = master.value();
  w.copy_(osprey::sub(w, osprey::mul(master.grad(), 0.5)));
  Variable(master).mark_modified();
  (*layer)(x, true);  // next step: a fresh cast of the updated master
  EXPECT_FALSE(layer->first.is_same(cast1));
  EXPECT_EQ(layer->first.value().to_vector<double>(), (std::vector<double>{-2, -3}));
}

TEST(MixedPrecisionTest, TheCastCacheSeesInPlaceUpdatesEvenBeforeBackward) {
  auto layer = std::make_shared<TwiceReader>();
  const Variable x(from_vector<float>({1, 2}, {1, 2}));
  (*layer)(x, true);
  const Variable cast1 = layer->first;
  Variable master = layer->variables()[0];
  master.set_value(from_vector<float>({5, 6}, {2}));  // bumps the version
  (*layer)(x, true);
  EXPECT_FALSE(layer->first.is_same(cast1));
  EXPECT_EQ(layer->first.value().to_vector<double>(), (std::vector<double>{5, 6}));
}

TEST(MixedPrecisionTest, ConfigsKeepThePolicyAndRebuildWithIt) {
  DTypePolicyScope scope("mixed_bfloat16");
  auto d = layers::Dense(3, "relu");
  EXPECT_EQ(d->get_config()["dtype"], "mixed_bfloat16");
  config::set_dtype_policy("float32");  // a later global change does not affect a saved config
  const auto back = layer_from_config("Dense", d->get_config());
  EXPECT_EQ(back->dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(back->compute_dtype(), DType::bfloat16);
  EXPECT_EQ(layers::Dense(3)->get_config()["dtype"], "float32");
}

}  // namespace
}  // namespace osprey::nn
