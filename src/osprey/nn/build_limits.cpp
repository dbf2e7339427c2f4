#include "osprey/nn/build_limits.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "osprey/core/error.h"

namespace osprey::nn {

namespace {
thread_local BuildLimitsScope* t_limits = nullptr;

// The element count, or nullopt when a dimension is negative or the product overflows: the shapes
// checked here come from files, so they may be anything.
std::optional<int64_t> elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}
}  // namespace

BuildLimitsScope::BuildLimitsScope(BuildLimits limits)
    : limits_(std::move(limits)), outer_(t_limits) {
  if (limits_.expected) {
    for (const auto& [name, w] : *limits_.expected) {
      const std::optional<int64_t> n = elements(w.shape);
      if (!n || __builtin_add_overflow(expected_elements_, *n, &expected_elements_))
        expected_elements_ = std::numeric_limits<int64_t>::max();
    }
  }
  t_limits = this;
}

BuildLimitsScope::~BuildLimitsScope() { t_limits = outer_; }

void check_new_weight(const std::string& path, const Shape& shape, DType dtype) {
  if (t_limits == nullptr) return;
  const BuildLimits& limits = t_limits->limits_;
  const std::optional<int64_t> n = elements(shape);
  if (limits.expected) {
    // A layer may be built before it joins its model (the functional API), so its weights' paths
    // gain their model's prefix later: "dense/kernel" now is "heads/dense/kernel" in the file.
    std::vector<const std::pair<const std::string, ExpectedWeight>*> named;
    for (const auto& entry : *limits.expected) {
      const std::string& name = entry.first;
      if (name == path || (name.size() > path.size() && name.ends_with(path) &&
                           name[name.size() - path.size() - 1] == '/'))
        named.push_back(&entry);
    }
    OSPREY_CHECK_T(IoError, !named.empty(), "{}: weight \"{}\" is missing", limits.source, path);
    const auto fits = [&](const auto* e) {
      return e->second.shape == shape && e->second.dtype == dtype;
    };
    if (std::none_of(named.begin(), named.end(), fits)) {
      const auto& [name, want] = *named.front();
      OSPREY_CHECK_T(IoError, want.shape == shape,
                     "{}: weight \"{}\" has shape {}, the model expects {}", limits.source, name,
                     want.shape.to_string(), shape.to_string());
      OSPREY_THROW(IoError, "{}: weight \"{}\" has dtype {}, the model expects {}", limits.source,
                   name, dtype_name(want.dtype), dtype_name(dtype));
    }
    // Each weight matches a tensor of the file, and no two weights the same one once loaded, so
    // together they hold at most what the file does.
    int64_t total = 0;
    const bool within = n &&
                        !__builtin_add_overflow(t_limits->expected_elements_used_, *n, &total) &&
                        total <= t_limits->expected_elements_;
    OSPREY_CHECK_T(IoError, within,
                   "{}: the model's weights need more than the {} elements the file holds (at "
                   "weight \"{}\" of shape {})",
                   limits.source, t_limits->expected_elements_, path, shape.to_string());
    t_limits->expected_elements_used_ = total;
  }
  if (limits.max_weight_elements >= 0) {
    int64_t total = 0;
    const bool fits = n && !__builtin_add_overflow(t_limits->weight_elements_, *n, &total) &&
                      total <= limits.max_weight_elements;
    OSPREY_CHECK(fits, "{}: weight \"{}\" of shape {} takes the model past {} weight elements",
                 limits.source, path, shape.to_string(), limits.max_weight_elements);
    t_limits->weight_elements_ = total;
  }
}

void check_shape_inference(const std::string& layer, const Shape& shape) {
  if (t_limits == nullptr || t_limits->limits_.max_activation_elements < 0) return;
  const BuildLimits& limits = t_limits->limits_;
  const std::optional<int64_t> n = elements(shape);
  OSPREY_CHECK(n && *n <= limits.max_activation_elements,
               "{}: {} would run on an input of shape {}, past {} elements", limits.source, layer,
               shape.to_string(), limits.max_activation_elements);
}

}  // namespace osprey::nn
