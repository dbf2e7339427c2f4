// Helpers for the layer tests (header-only, GoogleTest): deterministic inputs that a Python
// script can reproduce exactly (the PyTorch reference values in the *_test.cpp files were made
// from the same formula), exact error-message checks, and a float64 layer's weights set by hand.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "osprey/nn/layer.h"
#include "osprey/tensor/factory.h"

namespace osprey::nn::test {

// v[i] = sin(0.37 i + 0.11 tag) * scale + offset, row-major, float64. In Python:
//   v = [math.sin(0.37 * i + 0.11 * tag) * scale + offset for i in range(n)]
//   torch.tensor(v).reshape(shape)
inline Tensor wave(const Shape& shape, int tag, double scale = 1.0, double offset = 0.0) {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(0.37 * static_cast<double>(i) + 0.11 * tag) * scale + offset;
  return from_vector<double>(v, shape);
}

inline void expect_values_near(const Tensor& got, const std::vector<double>& want,
                               double tol = 1e-10) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}

// The exact message of the ValueError fn throws ("" when it throws nothing).
template <class F>
std::string value_error(F&& fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

// Replaces a built layer's weight by name (the layer keeps its Variable, so paths stay).
inline void set_weight(Layer& layer, const std::string& name, const Tensor& value) {
  for (const Weight& w : layer.own_weights()) {
    if (w.name == name) {
      Variable v = w.variable;
      v.set_value(value.to(w.variable.dtype()));
      return;
    }
  }
  ADD_FAILURE() << layer.name() << " has no weight " << name;
}

}  // namespace osprey::nn::test
