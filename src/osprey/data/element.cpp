#include "osprey/data/element.h"

#include <algorithm>
#include <cstring>

#include "osprey/core/error.h"

namespace osprey::data {

const Tensor& Element::at(size_t i) const {
  OSPREY_CHECK(i < parts_.size(), "Element: component {} requested, but the element has {} {}", i,
               parts_.size(), parts_.size() == 1 ? "component" : "components");
  return parts_[i];
}

std::string Element::describe() const {
  std::string s = "(";
  for (size_t i = 0; i < parts_.size(); ++i) {
    if (i) s += ", ";
    const Tensor& t = parts_[i];
    s += t.defined() ? fmt::format("{}{}", dtype_name(t.dtype()), t.shape().to_string())
                     : "undefined";
  }
  return s + ")";
}

namespace {

Shape with_leading(int64_t n, const Shape& row) {
  Shape s = row;
  s.insert(0, n);
  return s;
}

// Rows that already sit back to back in one storage: return them as one view.
bool consecutive_rows(const std::vector<Element>& elements, size_t j) {
  const Tensor& first = elements[0][j];
  if (!first.is_contiguous() || first.numel() == 0) return false;
  const int64_t n = first.numel();
  for (size_t i = 1; i < elements.size(); ++i) {
    const Tensor& t = elements[i][j];
    if (!t.shares_storage(first) || !t.is_contiguous() ||
        t.offset() != first.offset() + static_cast<int64_t>(i) * n) {
      return false;
    }
  }
  return true;
}

// Component j of every element is defined and agrees with element 0's in dtype, and in shape
// (batch) or rank (padded_batch); ValueError naming the element and component otherwise.
void check_component(const std::vector<Element>& elements, size_t j, const char* op,
                     bool same_shape) {
  const Element& first = elements[0];
  const Tensor& f = first[j];
  OSPREY_CHECK(f.defined(), "{}: component {} of element 0 is undefined", op, j);
  for (size_t i = 1; i < elements.size(); ++i) {
    OSPREY_CHECK(elements[i].size() == first.size(),
                 "{}: element {} has {} components, element 0 has {}", op, i, elements[i].size(),
                 first.size());
    const Tensor& t = elements[i][j];
    const bool agrees = t.defined() && t.dtype() == f.dtype() &&
                        (same_shape ? t.shape() == f.shape() : t.ndim() == f.ndim());
    OSPREY_CHECK(agrees,
                 "{}: every element must have one {} and dtype per component{}. Component {}: "
                 "element 0 is {}{}, element {} is {}",
                 op, same_shape ? "shape" : "rank",
                 same_shape ? " (pad or resize in a map first)" : "", j, dtype_name(f.dtype()),
                 f.shape().to_string(), i,
                 t.defined() ? fmt::format("{}{}", dtype_name(t.dtype()), t.shape().to_string())
                             : std::string("undefined"));
  }
}

}  // namespace

Element stack_elements(const std::vector<Element>& elements, const char* op) {
  OSPREY_CHECK(!elements.empty(), "{}: cannot stack zero elements", op);
  const Element& first = elements[0];
  const auto n = static_cast<int64_t>(elements.size());
  Element out;
  for (size_t j = 0; j < first.size(); ++j) {
    const Tensor& f = first[j];
    check_component(elements, j, op, /*same_shape=*/true);
    const Shape shape = with_leading(n, f.shape());
    if (consecutive_rows(elements, j)) {
      out.push_back(Tensor::from_storage(f.storage(), shape, contiguous_strides(shape), f.offset(),
                                         f.dtype()));
      continue;
    }
    Tensor dst = Tensor::empty(shape, {f.dtype(), f.device()});
    const size_t row_bytes = f.nbytes();
    auto* base = static_cast<char*>(dst.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      const Tensor& src = elements[static_cast<size_t>(i)][j];
      if (src.is_contiguous() && src.device().is_cpu()) {
        if (row_bytes)
          std::memcpy(base + static_cast<size_t>(i) * row_bytes, src.raw_data(), row_bytes);
      } else {
        Tensor row = dst.select(0, i);
        row.copy_(src);
      }
    }
    out.push_back(std::move(dst));
  }
  return out;
}

Element pad_and_stack_elements(const std::vector<Element>& elements, double padding_value,
                               const char* op) {
  OSPREY_CHECK(!elements.empty(), "{}: cannot stack zero elements", op);
  const Element& first = elements[0];
  Element out;
  for (size_t j = 0; j < first.size(); ++j) {
    const Tensor& f = first[j];
    check_component(elements, j, op, /*same_shape=*/false);
    std::vector<int64_t> longest(f.shape().begin(), f.shape().end());
    for (size_t i = 1; i < elements.size(); ++i) {
      const Tensor& t = elements[i][j];
      for (int a = 0; a < t.ndim(); ++a)
        longest[static_cast<size_t>(a)] = std::max(longest[static_cast<size_t>(a)], t.size(a));
    }
    std::vector<int64_t> dims = {static_cast<int64_t>(elements.size())};
    dims.insert(dims.end(), longest.begin(), longest.end());
    Tensor dst = Tensor::empty(Shape(dims), {f.dtype(), f.device()});
    dst.fill_(padding_value);
    for (size_t i = 0; i < elements.size(); ++i) {
      const Tensor& src = elements[i][j];
      Tensor corner = dst.select(0, static_cast<int64_t>(i));
      for (int a = 0; a < src.ndim(); ++a) corner = corner.narrow(a, 0, src.size(a));
      if (src.numel() > 0) corner.copy_(src);
    }
    out.push_back(std::move(dst));
  }
  return out;
}

int64_t leading_dim(const Element& e, const char* op) {
  OSPREY_CHECK(!e.empty(), "{}: the element has no components", op);
  int64_t n = -1;
  for (size_t j = 0; j < e.size(); ++j) {
    const Tensor& t = e[j];
    OSPREY_CHECK(t.defined() && t.ndim() >= 1,
                 "{}: every component needs a leading axis to slice along. Component {} is {}", op,
                 j,
                 t.defined() ? fmt::format("{}{}", dtype_name(t.dtype()), t.shape().to_string())
                             : std::string("undefined"));
    if (j == 0) {
      n = t.shape()[0];
    } else {
      OSPREY_CHECK(t.shape()[0] == n,
                   "{}: every component must have the same size along axis 0. Component 0 has {} "
                   "rows ({}), component {} has {} ({})",
                   op, n, e[0].shape().to_string(), j, t.shape()[0], t.shape().to_string());
    }
  }
  return n;
}

Element slice_row(const Element& e, int64_t i) {
  Element out;
  for (const Tensor& t : e) out.push_back(t.select(0, i));
  return out;
}

Element slice_rows(const Element& e, int64_t begin, int64_t end) {
  Element out;
  for (const Tensor& t : e) out.push_back(t.narrow(0, begin, end - begin));
  return out;
}

}  // namespace osprey::data
