// LabeledArrays: a dataset held as two whole tensors, features x [N, ...] and labels y [N]
// (y may be undefined for unlabeled data). It is what the built-in datasets and read_csv
// return: x and y for the fast whole-array path (fit(x, y)), .dataset() (or an implicit
// conversion) for a pipeline. Splits are views, no copy.
//   auto data = datasets::fashion_mnist::load();
//   auto [train, val] = data.train.split_tail(10000);            // 50000 / 10000 rows
//   Dataset ds = train.shuffle(50000, 42).batch(128).prefetch(kAutotune);
#pragma once

#include <cstdint>
#include <utility>

#include "osprey/data/dataset.h"
#include "osprey/tensor/tensor.h"

namespace osprey::data {

struct LabeledArrays {
  Tensor x;  // [N, ...]
  Tensor y;  // [N, ...] or undefined

  // N, the number of rows; 0 when x is undefined.
  int64_t size() const;
  // Rows of (x, y) as a Dataset: elements {x[i], y[i]}, or {x[i]} when y is undefined.
  Dataset dataset() const;
  operator Dataset() const {
    return dataset();
  }  // NOLINT(google-explicit-constructor): pass as a Dataset

  // Rows [begin, end) of both tensors (views).
  LabeledArrays slice(int64_t begin, int64_t end) const;
  // {all but the last n rows, the last n rows}.
  std::pair<LabeledArrays, LabeledArrays> split_tail(int64_t n) const;
  // {the first floor(fraction * N) rows, the rest}.
  std::pair<LabeledArrays, LabeledArrays> split(double fraction) const;

  // The usual first steps of a pipeline, so `train.shuffle(...).batch(...)` reads as in Keras.
  Dataset shuffle(int64_t buffer_size, uint64_t seed) const {
    return dataset().shuffle(buffer_size, seed);
  }
  Dataset shuffle(int64_t buffer_size, ShuffleOptions options = {}) const {
    return dataset().shuffle(buffer_size, options);
  }
  Dataset batch(int64_t size, bool drop_remainder = false) const {
    return dataset().batch(size, drop_remainder);
  }
};

}  // namespace osprey::data
