#include "osprey/data/labeled_arrays.h"

#include <cmath>

#include "osprey/core/error.h"

namespace osprey::data {
namespace {

Element parts_of(const LabeledArrays& a) {
  Element e{a.x};
  if (a.y.defined()) e.push_back(a.y);
  return e;
}

}  // namespace

int64_t LabeledArrays::size() const {
  if (!x.defined()) return 0;
  return leading_dim(parts_of(*this), "LabeledArrays");
}

Dataset LabeledArrays::dataset() const {
  OSPREY_CHECK(x.defined(), "LabeledArrays::dataset: x is undefined");
  return Dataset::from_tensors(parts_of(*this));
}

LabeledArrays LabeledArrays::slice(int64_t begin, int64_t end) const {
  const int64_t n = size();
  OSPREY_CHECK(0 <= begin && begin <= end && end <= n,
               "LabeledArrays::slice: expected 0 <= begin <= end <= {} (the number of rows). "
               "Received: begin={}, end={}",
               n, begin, end);
  LabeledArrays out;
  if (x.defined()) out.x = x.narrow(0, begin, end - begin);
  if (y.defined()) out.y = y.narrow(0, begin, end - begin);
  return out;
}

std::pair<LabeledArrays, LabeledArrays> LabeledArrays::split_tail(int64_t n) const {
  const int64_t total = size();
  OSPREY_CHECK(n >= 0 && n <= total,
               "split_tail: n must be in [0, {}] (the number of rows). Received: n={}", total, n);
  return {slice(0, total - n), slice(total - n, total)};
}

std::pair<LabeledArrays, LabeledArrays> LabeledArrays::split(double fraction) const {
  OSPREY_CHECK(fraction >= 0.0 && fraction <= 1.0,
               "split: fraction must be in [0, 1]. Received: fraction={}", fraction);
  const int64_t total = size();
  const auto head = static_cast<int64_t>(std::floor(fraction * static_cast<double>(total)));
  return {slice(0, head), slice(head, total)};
}

}  // namespace osprey::data
