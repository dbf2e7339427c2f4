#include "osprey/autograd/ops/norm.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

TEST(NormTest, BatchNormTrainingGradients) {
  Variable x = input({4, 3}, 1, true), g = input({3}, 2), b = input({3}, 3);
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) { return batch_norm(v[0], v[1], v[2], {.epsilon = 1e-3}); },
      (Vars{x, g, b}));
  // NCHW: channel axis 1, statistics over N, H, W.
  Variable x4 = input({2, 3, 2, 2}, 4), g4 = input({3}, 5), b4 = input({3}, 6);
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return batch_norm(v[0], v[1], v[2], {.axis = 1}); },
                          (Vars{x4, g4, b4}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return batch_norm(v[0], Variable(), Variable()); },
                          (Vars{input({3, 1, 2}, 7)}));
}

// One replica (the cross-replica sum is the identity): synchronized batch norm's own forward and
// its hand-written dx through the global statistics must give ordinary batch norm's values.
TEST(NormTest, SynchronizedBatchNormWithOneReplicaIsOrdinaryBatchNorm) {
  std::vector<int64_t> sizes;
  const BatchNormOptions sync{.momentum = 0.5, .axis = 1, .cross_replica_sum = [&](Tensor& t) {
                                sizes.push_back(t.numel());
                              }};
  OSPREY_EXPECT_GRADCHECK([&](const Vars& v) { return batch_norm(v[0], v[1], v[2], sync); },
                          (Vars{input({3, 2, 2}, 11, true), input({2}, 12), input({2}, 13)}));
  Variable x = input({4, 3, 2}, 14, true), g = input({3}, 15), b = input({3}, 16);
  Tensor m1 = zeros({3}, {DType::float64}), v1 = ones({3}, {DType::float64});
  Tensor m2 = m1.clone(), v2 = v1.clone();
  sizes.clear();
  const Variable ys = batch_norm(x, g, b, m1, v1, sync);
  sum(mul(ys, ys)).backward();
  const Tensor dys = x.grad().clone();
  x.zero_grad();
  // One collective in forward ([2C + 1]: sums and count), one in backward ([2C]).
  EXPECT_EQ(sizes, (std::vector<int64_t>{7, 6}));
  const Variable yp = batch_norm(x, g, b, m2, v2, {.momentum = 0.5, .axis = 1});
  sum(mul(yp, yp)).backward();
  const Tensor dyp = x.grad();
  EXPECT_LE(max(abs(osprey::sub(ys.value(), yp.value()))).item(), 1e-12);
  EXPECT_LE(max(abs(osprey::sub(dys, dyp))).item(), 1e-12);
  EXPECT_LE(max(abs(osprey::sub(m1, m2))).item(), 1e-12);
  EXPECT_LE(max(abs(osprey::sub(v1, v2))).item(), 1e-12);
}

TEST(NormTest, BatchNormInferenceGradients) {
  Tensor mean = f64({0.5, -0.25, 1.0}, {3}), var = f64({1.5, 0.5, 2.0}, {3});
  Variable x = input({2, 2, 3}, 8, true), g = input({3}, 9), b = input({3}, 10);
  OSPREY_EXPECT_GRADCHECK(
      [&](const Vars& v) { return batch_norm(v[0], v[1], v[2], mean, var, {.training = false}); },
      (Vars{x, g, b}));
}

// Forward values from PyTorch 1.13 (torch.nn.functional.batch_norm, training=True, eps=1e-3).
// Running statistics follow Keras: moving = moving * 0.99 + batch * 0.01 with the biased variance.
TEST(NormTest, BatchNormTrainingMatchesPyTorchAndUpdatesKerasStyle) {
  const Variable x(f64({1.0, 2.0, -1.0, 0.5, -3.0, 2.0, 2.5, 0.0, 0.0, -1.0, 1.0, 4.0}, {4, 3}));
  const Variable g(f64({1.5, 0.5, -1.0}, {3})), b(f64({0.1, -0.2, 0.3}, {3}));
  Tensor mean = zeros({3}, {DType::float64}), var = ones({3}, {DType::float64});
  const Variable y = batch_norm(x, g, b, mean, var);
  expect_near_all(values(y),
                  {0.399904046055, 0.334446139829, 1.47154135653, -0.199904046055, -1.00166920974,
                   -0.0905137855101, 2.19932832239, -0.2, 0.950856309184, -1.99932832239,
                   0.0672230699145, -1.1318838802},
                  1e-10);
  // batch mean [0.75, 0, 1.25], biased variance [1.5625, 3.5, 3.6875]
  expect_near_all(values(mean), {0.0075, 0.0, 0.0125}, 1e-12);
  expect_near_all(values(var), {0.99 + 0.015625, 0.99 + 0.035, 0.99 + 0.036875}, 1e-12);
}

TEST(NormTest, BatchNormInferenceUsesRunningStatistics) {
  Tensor mean = f64({1.0, -1.0}, {2}), var = f64({4.0, 0.25}, {2});
  const Variable x(f64({3.0, 0.0, 1.0, -1.0}, {2, 2}));
  const Variable y =
      batch_norm(x, Variable(), Variable(), mean, var, {.training = false, .epsilon = 1e-3});
  expect_near_all(values(y), {2.0 / std::sqrt(4.001), 1.0 / std::sqrt(0.251), 0.0, 0.0}, 1e-12);
  EXPECT_EQ(values(mean), (std::vector<double>{1.0, -1.0}));  // inference leaves them alone
}

TEST(NormTest, LayerNormGradients) {
  Variable x = input({3, 4}, 11, true), g = input({4}, 12), b = input({4}, 13);
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return layer_norm(v[0], v[1], v[2]); },
                          (Vars{x, g, b}));
  // Over the two trailing axes, gamma shaped like them.
  Variable x3 = input({2, 2, 3}, 14, true), g3 = input({2, 3}, 15), b3 = input({2, 3}, 16);
  OSPREY_EXPECT_GRADCHECK(
      [](const Vars& v) { return layer_norm(v[0], v[1], v[2], {.begin_axis = 1}); },
      (Vars{x3, g3, b3}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return layer_norm(v[0], Variable(), Variable()); },
                          (Vars{input({2, 5}, 17)}));
}

// Values from PyTorch 1.13 (torch.nn.functional.layer_norm, eps=1e-3).
TEST(NormTest, LayerNormMatchesPyTorch) {
  const Variable x(f64({1.0, 2.0, 3.0, 5.0, -1.0, 0.5, 0.25, 2.0}, {2, 4}));
  const Variable g(f64({1.0, 0.5, 2.0, -1.0}, {4})), b(f64({0.0, 0.1, 0.2, 0.3}, {4}));
  expect_near_all(values(layer_norm(x, g, b)),
                  {-1.18294559995, -0.153488342846, 0.537984457128, -1.22093005708, -1.34769120948,
                   0.129297634989, -0.151571619866, -1.16488174944},
                  1e-10);
}

TEST(NormTest, BadParameterShapesAreErrors) {
  expect_error<ValueError>(
      [] {
        batch_norm(input({4, 3}, 1), input({2}, 2), Variable());
      },
      {"batch_norm", "gamma", "[3]", "[2]"});
  expect_error<ValueError>(
      [] {
        batch_norm(input({4, 3}, 1), Variable(), Variable(), {.axis = 2});
      },
      {"batch_norm", "axis 2"});
  Tensor m = zeros({3}, {DType::float64});
  Tensor undefined;
  expect_error<ValueError>(
      [&] {
        batch_norm(input({4, 3}, 1), Variable(), Variable(), m, undefined, {.training = false});
      },
      {"batch_norm", "running mean and variance"});
  expect_error<ValueError>(
      [] {
        layer_norm(input({2, 4}, 1), input({3}, 2), Variable());
      },
      {"layer_norm", "gamma", "4 values"});
}

TEST(RmsNormTest, GradientsAndBadArguments) {
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return rms_norm(v[0], v[1], 1e-3); },
                          (Vars{input({3, 5}, 11, true), input({5}, 12, true)}));
  OSPREY_EXPECT_GRADCHECK([](const Vars& v) { return rms_norm(v[0], Variable(), 1e-3); },
                          (Vars{input({2, 2, 4}, 13, true)}));
  expect_error<ValueError>(
      [] {
        rms_norm(input({3, 5}, 1), input({4}, 2));
      },
      {"rms_norm: scale must have the last axis's size [5]. Received: [4]"});
  expect_error<ValueError>(
      [] {
        rms_norm(input({3, 5}, 1), Variable(), 0.0);
      },
      {"rms_norm: epsilon must be positive. Received: 0"});
}

}  // namespace
}  // namespace osprey::autograd
