#include "osprey/distribute/model_parallel/device_mesh.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "osprey/core/error.h"
#include "osprey/distribute/devices.h"

namespace osprey::distribute {

DeviceMesh::DeviceMesh(std::vector<int64_t> shape, std::vector<std::string> axis_names,
                       std::vector<std::string> devices)
    : shape_(std::move(shape)), axis_names_(std::move(axis_names)), devices_(std::move(devices)) {
  OSPREY_CHECK(!shape_.empty(), "DeviceMesh: shape must have at least one axis. Received: {{}}");
  OSPREY_CHECK(shape_.size() == axis_names_.size(),
               "DeviceMesh: shape and axis_names must have the same length. Received: shape={{{}}} "
               "({} axes), axis_names={{{}}} ({} names)",
               fmt::join(shape_, ", "), shape_.size(), fmt::join(axis_names_, ", "),
               axis_names_.size());
  int64_t total = 1;
  for (size_t i = 0; i < shape_.size(); ++i) {
    OSPREY_CHECK(shape_[i] >= 1, "DeviceMesh: axis '{}' must have size >= 1. Received: {}",
                 axis_names_[i], shape_[i]);
    OSPREY_CHECK(!axis_names_[i].empty(), "DeviceMesh: axis {} has an empty name", i);
    for (size_t j = 0; j < i; ++j)
      OSPREY_CHECK(axis_names_[j] != axis_names_[i],
                   "DeviceMesh: axis name '{}' is used twice in {{{}}}", axis_names_[i],
                   fmt::join(axis_names_, ", "));
    total *= shape_[i];
  }
  if (devices_.empty()) devices_ = virtual_devices(static_cast<int>(total));
  OSPREY_CHECK(static_cast<int64_t>(devices_.size()) == total,
               "DeviceMesh: a mesh of shape {{{}}} needs {} devices. Received: {} ({})",
               fmt::join(shape_, ", "), total, devices_.size(), fmt::join(devices_, ", "));
  resolve_devices(devices_, "DeviceMesh");  // parsable and unique
}

int DeviceMesh::axis_index(const std::string& axis) const noexcept {
  for (size_t i = 0; i < axis_names_.size(); ++i)
    if (axis_names_[i] == axis) return static_cast<int>(i);
  return -1;
}

int64_t DeviceMesh::axis_size(const std::string& axis) const {
  const int i = axis_index(axis);
  OSPREY_CHECK(i >= 0, "DeviceMesh: no axis '{}' in {}", axis, to_string());
  return shape_[static_cast<size_t>(i)];
}

std::vector<int64_t> DeviceMesh::coordinates(int64_t device) const {
  OSPREY_ASSERT(device >= 0 && device < size(), "device {} outside a mesh of {}", device, size());
  std::vector<int64_t> c(shape_.size());
  for (size_t i = shape_.size(); i-- > 0;) {
    c[i] = device % shape_[i];
    device /= shape_[i];
  }
  return c;
}

int64_t DeviceMesh::device_at(const std::vector<int64_t>& coordinates) const {
  int64_t d = 0;
  for (size_t i = 0; i < shape_.size(); ++i) d = d * shape_[i] + coordinates[i];
  return d;
}

std::string DeviceMesh::to_string() const {
  return fmt::format("DeviceMesh({{{}}}, {{{}}})", fmt::join(shape_, ", "),
                     fmt::join(axis_names_, ", "));
}

bool TensorLayout::replicated() const noexcept {
  return std::none_of(axes_.begin(), axes_.end(), [](const auto& a) { return a.has_value(); });
}

int TensorLayout::dim_of(const std::string& axis) const noexcept {
  for (size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i] == axis) return static_cast<int>(i);
  return -1;
}

std::string TensorLayout::to_string() const {
  std::vector<std::string> parts;
  parts.reserve(axes_.size());
  for (const auto& a : axes_) parts.push_back(a ? fmt::format("'{}'", *a) : "None");
  if (parts.size() == 1) return fmt::format("({},)", parts[0]);
  return fmt::format("({})", fmt::join(parts, ", "));
}

void check_layout(const std::string& path, const Shape& shape, const TensorLayout& layout,
                  const DeviceMesh& mesh) {
  const auto& axes = layout.axes();
  if (axes.empty()) return;  // replicated
  OSPREY_CHECK(static_cast<int>(axes.size()) == shape.ndim(),
               "LayoutMap: the layout {} of '{}' has {} entries, but the variable has {} "
               "dimensions (shape {})",
               layout.to_string(), path, axes.size(), shape.ndim(), shape.to_string());
  std::set<std::string> seen;
  for (int d = 0; d < shape.ndim(); ++d) {
    const auto& a = axes[static_cast<size_t>(d)];
    if (!a) continue;
    OSPREY_CHECK(mesh.axis_index(*a) >= 0,
                 "LayoutMap: the layout {} of '{}' names axis '{}', which {} does not have",
                 layout.to_string(), path, *a, mesh.to_string());
    OSPREY_CHECK(seen.insert(*a).second,
                 "LayoutMap: the layout {} of '{}' uses mesh axis '{}' for two dimensions",
                 layout.to_string(), path, *a);
    const int64_t n = mesh.axis_size(*a);
    OSPREY_CHECK(shape[d] % n == 0,
                 "LayoutMap: '{}' (shape {}): dimension {} of size {} cannot be split evenly over "
                 "mesh axis '{}' of size {}",
                 path, shape.to_string(), d, shape[d], *a, n);
  }
}

ShardSlice shard_slice(const std::string& path, const Shape& shape, const TensorLayout& layout,
                       const DeviceMesh& mesh, int64_t device) {
  check_layout(path, shape, layout, mesh);
  ShardSlice s;
  s.start.assign(static_cast<size_t>(shape.ndim()), 0);
  s.length = shape.to_vector();
  if (layout.axes().empty()) return s;
  const std::vector<int64_t> coords = mesh.coordinates(device);
  for (int d = 0; d < shape.ndim(); ++d) {
    const auto& a = layout.axes()[static_cast<size_t>(d)];
    if (!a) continue;
    const int i = mesh.axis_index(*a);
    const int64_t n = mesh.shape()[static_cast<size_t>(i)];
    const auto k = static_cast<size_t>(d);
    s.length[k] = shape[d] / n;
    s.start[k] = coords[static_cast<size_t>(i)] * s.length[k];
  }
  return s;
}

TensorLayout& LayoutMap::operator[](const std::string& key) {
  for (auto& r : rules_)
    if (r.key == key) return r.layout;
  std::regex regex;
  try {
    regex = std::regex(key, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    OSPREY_THROW(ValueError, "LayoutMap: the key '{}' is not a valid regex: {}", key, e.what());
  }
  rules_.push_back({key, std::move(regex), {}});
  return rules_.back().layout;
}

std::optional<TensorLayout> LayoutMap::lookup(const std::string& path) const {
  const Rule* found = nullptr;
  for (const auto& r : rules_) {
    if (!std::regex_match(path, r.regex)) continue;
    OSPREY_CHECK(found == nullptr,
                 "LayoutMap: the variable '{}' matches two keys, '{}' and '{}'; make the regexes "
                 "exclusive",
                 path, found->key, r.key);
    found = &r;
  }
  if (found == nullptr) return std::nullopt;
  return found->layout;
}

std::vector<std::string> LayoutMap::keys() const {
  std::vector<std::string> k;
  k.reserve(rules_.size());
  for (const auto& r : rules_) k.push_back(r.key);
  return k;
}

std::vector<std::string> LayoutMap::unmatched(const std::vector<std::string>& paths) const {
  std::vector<std::string> out;
  for (const auto& p : paths)
    if (!lookup(p)) out.push_back(p);
  return out;
}

std::string visualize_sharding(const std::string& path, const Shape& shape,
                               const TensorLayout& layout, const DeviceMesh& mesh) {
  check_layout(path, shape, layout, mesh);
  std::string out = fmt::format("{} {} {} on {}\n", path, shape.to_string(), layout.to_string(),
                                mesh.to_string());
  // Distinct shards in the order of their first device, each with every device holding it.
  std::map<std::vector<int64_t>, std::vector<std::string>> holders;
  std::vector<std::vector<int64_t>> order;
  for (int64_t d = 0; d < mesh.size(); ++d) {
    const ShardSlice s = shard_slice(path, shape, layout, mesh, d);
    auto [it, fresh] = holders.try_emplace(s.start);
    if (fresh) order.push_back(s.start);
    it->second.push_back(mesh.devices()[static_cast<size_t>(d)]);
  }
  std::vector<std::string> ranges, devices;
  const ShardSlice first = shard_slice(path, shape, layout, mesh, 0);  // every shard's lengths
  for (const auto& start : order) {
    std::vector<std::string> dims;
    for (size_t d = 0; d < start.size(); ++d)
      dims.push_back(fmt::format("{}:{}", start[d], start[d] + first.length[d]));
    ranges.push_back(fmt::format("[{}]", fmt::join(dims, ", ")));
    devices.push_back(fmt::format("{}", fmt::join(holders[start], " ")));
  }
  size_t width = 0;
  for (size_t i = 0; i < ranges.size(); ++i)
    width = std::max({width, ranges[i].size(), devices[i].size()});
  // A grid for vectors and matrices (shards of dimension 0 down, of dimension 1 across, as
  // jax.debug.visualize_sharding draws them); one box per shard, stacked, for higher ranks.
  size_t columns = 1;
  if (shape.ndim() == 1) columns = ranges.size();
  if (shape.ndim() == 2) columns = static_cast<size_t>(shape[1] / first.length[1]);
  std::string rule = "+";
  for (size_t c = 0; c < columns; ++c) rule += std::string(width + 2, '-') + "+";
  rule += "\n";
  // order[] is row-major over the split dimensions: dimension 0's index varies slowest.
  std::vector<size_t> by_position(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) {
    size_t pos = 0;
    if (shape.ndim() >= 1 && shape.ndim() <= 2) {
      const auto row = static_cast<size_t>(order[i][0] / first.length[0]);
      const size_t col = shape.ndim() == 2 ? static_cast<size_t>(order[i][1] / first.length[1]) : 0;
      pos = shape.ndim() == 1 ? row : row * columns + col;
    } else {
      pos = i;
    }
    by_position[pos] = i;
  }
  for (size_t start = 0; start < ranges.size(); start += columns) {
    out += rule;
    for (const auto* lines : {&ranges, &devices}) {
      out += "|";
      for (size_t c = start; c < start + columns; ++c)
        out += fmt::format(" {:<{}} |", (*lines)[by_position[c]], width);
      out += "\n";
    }
  }
  return out + rule;
}

}  // namespace osprey::distribute
