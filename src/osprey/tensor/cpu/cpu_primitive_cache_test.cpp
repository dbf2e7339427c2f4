// The primitive cache of the fast CPU backend: a repeated call creates no primitive and gives
// bitwise the same result, concurrent callers share entries safely, and ops reached through the
// public API land on the cpu backend.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>
#include <thread>

#include "osprey/core/parallel.h"
#include "osprey/tensor/cpu/cpu_test_util.h"
#include "osprey/tensor/cpu/primitive_cache.h"
#include "osprey/tensor/ops.h"

namespace osprey::cpu::testing {
namespace {

TEST(CpuPrimitiveCacheTest, ASecondIdenticalCallCreatesNoPrimitive) {
  const Tensor a = randn({64, 48}, 1), b = randn({48, 32}, 2), bias = randn({32}, 3);
  const Conv2dParams cp{.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1};
  const Tensor x = randn({2, 8, 8, 4}, 4), w = randn({3, 3, 4, 6}, 5);
  const Shape ys = conv2d_output_shape(x.shape(), w.shape(), cp);
  const Tensor dy = randn(ys, 6);
  const Pool2dParams pp{};
  const Tensor lx = randn({16, 20}, 7);
  auto step = [&] {
    Tensor out = Tensor::empty({64, 32});
    fast().matmul(a, b, &bias, out, {.activation = Activation::relu});
    Tensor y = Tensor::empty(ys), dx = Tensor::empty(x.shape()), dw = Tensor::empty(w.shape()),
           db = Tensor::empty({6});
    fast().conv2d_forward(x, w, nullptr, y, cp);
    fast().conv2d_backward_data(dy, w, dx, cp);
    fast().conv2d_backward_weights(dy, x, dw, &db, cp);
    Tensor py = Tensor::empty(pool2d_output_shape(x.shape(), pp)), ws;
    fast().max_pool2d_forward(x, py, &ws, pp);
    Tensor pdx = Tensor::empty(x.shape());
    fast().max_pool2d_backward(py, x, ws, pdx, pp);
    Tensor sy = Tensor::empty(lx.shape());
    fast().softmax_forward(lx, 1, true, sy);
    Tensor t = Tensor::empty(lx.shape());
    fast().unary(UnaryOp::exp, lx, t, {});
    Tensor m = Tensor::empty({16}), r = Tensor::empty({16});
    fast().layer_norm_forward(lx, nullptr, nullptr, 20, 1e-5, t, m, r);
    return std::vector<Tensor>{out, y, dx, dw, db, py, pdx, sy, t};
  };
  const std::vector<Tensor> first = step();
  const int64_t created = dnnl_primitives_created();
  EXPECT_GT(created, 0);
  const std::vector<Tensor> second = step();
  EXPECT_EQ(dnnl_primitives_created(), created);
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(first[i], second[i]))
        << "output " << i << " differs between identical calls";
  }
}

TEST(CpuPrimitiveCacheTest, ConcurrentCallersShareTheCacheAndGetCorrectResults) {
  const Tensor a = randn({96, 64}, 1), b = randn({64, 48}, 2);
  const Conv2dParams cp{.pad_top = 1, .pad_bottom = 1, .pad_left = 1, .pad_right = 1};
  const Tensor x = randn({2, 9, 9, 5}, 3), w = randn({3, 3, 5, 7}, 4);
  const Shape ys = conv2d_output_shape(x.shape(), w.shape(), cp);
  Tensor mw = Tensor::empty({96, 48}), cw = Tensor::empty(ys);
  ref().matmul(a, b, nullptr, mw, {});
  ref().conv2d_forward(x, w, nullptr, cw, cp);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      bool good = true;
      for (int i = 0; i < 20; ++i) {
        Tensor m = Tensor::empty({96, 48}), c = Tensor::empty(ys);
        fast().matmul(a, b, nullptr, m, {});
        fast().conv2d_forward(x, w, nullptr, c, cp);
        good = good && all_close(m, mw, 1e-4, 1e-4) && all_close(c, cw, 1e-4, 1e-4);
      }
      ok[static_cast<size_t>(t)] = good ? 1 : 0;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[static_cast<size_t>(t)], 1) << "thread " << t;
}

TEST(CpuPrimitiveCacheTest, APrimitiveIsCachedPerThreadCount) {
  // A replica worker limited to one thread must not run a primitive planned for more.
  const Tensor a = randn({64, 48}, 11), b = randn({48, 40}, 12);
  Tensor expect = Tensor::empty({64, 40});
  ref().matmul(a, b, nullptr, expect, {});
  auto product = [&] {
    Tensor out = Tensor::empty({64, 40});
    fast().matmul(a, b, nullptr, out, {});
    return out;
  };
  const Tensor wide = [&] {
    ThreadLimitGuard limit(2);
    product();
    return product();
  }();
  const int64_t created = dnnl_primitives_created();
  {
    ThreadLimitGuard limit(1);
    const Tensor narrow = product();
    EXPECT_EQ(dnnl_primitives_created(), created + 1);  // its own primitive
    EXPECT_TRUE(all_close(narrow, expect, 1e-4, 1e-4));
    product();
    EXPECT_EQ(dnnl_primitives_created(), created + 1);  // and cached
  }
  {
    ThreadLimitGuard limit(2);
    EXPECT_TRUE(bitwise_equal(product(), wide));
  }
  EXPECT_EQ(dnnl_primitives_created(), created + 1);
  EXPECT_TRUE(all_close(wide, expect, 1e-4, 1e-4));
}

TEST(CpuPrimitiveCacheTest, OpsThroughThePublicApiUseTheCpuBackend) {
  const char* forced = std::getenv("OSPREY_BACKEND");
  if (forced != nullptr && std::string_view(forced) == "reference")
    GTEST_SKIP() << "OSPREY_BACKEND=reference";
  EXPECT_STREQ(backend_for(Device::cpu(0)).name, "cpu");
  const Tensor x = randn({32, 16}, 1), w = randn({16, 8}, 2);
  const Tensor y1 = linear(x, w, nullptr, Activation::relu);
  const int64_t created = dnnl_primitives_created();
  const Tensor y2 = linear(x, w, nullptr, Activation::relu);
  EXPECT_EQ(dnnl_primitives_created(), created);
  EXPECT_TRUE(bitwise_equal(y1, y2));
}

}  // namespace
}  // namespace osprey::cpu::testing
