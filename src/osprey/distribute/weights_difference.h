// Test helpers for the distribute tests: how far apart two models' weight lists are.
#pragma once

#include <algorithm>
#include <vector>

#include "osprey/tensor/ops.h"

namespace osprey::distribute::testing {

// max |a - b| / max |b| over each weight tensor, the worst of them.
inline double max_relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = max(abs(sub(a[i], b[i]))).item();
    const double scale = std::max(max(abs(b[i])).item(), 1e-30);
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

inline double max_abs_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, max(abs(sub(a[i], b[i]))).item());
  return worst;
}

}  // namespace osprey::distribute::testing
