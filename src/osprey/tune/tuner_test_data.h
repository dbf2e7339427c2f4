// The small classification problem the tuner tests train on (tuner_test.cpp, asha_test.cpp):
// 4 features, 2 classes split by a line, 240 training rows (8 batches of 32 an epoch) and 80
// validation rows, the same every run. Test-only: not installed.
#pragma once

#include <random>
#include <vector>

#include "osprey/tensor/factory.h"

namespace osprey::tune::test_data {

struct Data {
  Tensor x, y, xv, yv;
};

inline Data make_data() {
  std::mt19937 gen(123);
  std::normal_distribution<float> n(0, 1);
  auto make = [&](int rows, Tensor& x, Tensor& y) {
    std::vector<float> xs(static_cast<size_t>(rows) * 4);
    std::vector<int64_t> ys(static_cast<size_t>(rows));
    for (size_t i = 0; i < static_cast<size_t>(rows); ++i) {
      for (size_t k = 0; k < 4; ++k) xs[i * 4 + k] = n(gen);
      ys[i] = xs[i * 4] + 0.5f * xs[i * 4 + 1] > 0 ? 1 : 0;
    }
    x = from_vector(xs, Shape{rows, 4});
    y = from_vector(ys, Shape{rows});
  };
  Data d;
  make(240, d.x, d.y);
  make(80, d.xv, d.yv);
  return d;
}

}  // namespace osprey::tune::test_data
