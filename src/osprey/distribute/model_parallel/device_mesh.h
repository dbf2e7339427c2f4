// Keras 3's model-parallel vocabulary as plain data (keras.distribution): a DeviceMesh names the
// axes of a grid of devices, a TensorLayout says which mesh axis (if any) splits each dimension of
// a variable, and a LayoutMap assigns layouts to variables by regexes fully matched against their
// paths. ModelParallel (model_parallel.h) executes models under them.
//   DeviceMesh mesh({2, 4}, {"data", "model"});         // cpu:0..cpu:7, row-major
//   LayoutMap layout(mesh);
//   layout["dense.*/kernel"] = {std::nullopt, "model"}; // columns split over "model"
//   layout["dense.*/bias"] = {"model"};
//   layout.lookup("sequential/dense_1/kernel");         // the first rule's layout
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "osprey/core/shape.h"

namespace osprey::distribute {

class DeviceMesh {
 public:
  // shape: the grid, one size per axis; axis_names: one unique name per axis; devices: "cpu:0",
  // ... (the product of shape; empty: cpu:0 .. cpu:N-1, virtual devices). ValueError naming the
  // argument for a mismatch, a repeated name or device, or a size below 1.
  DeviceMesh(std::vector<int64_t> shape, std::vector<std::string> axis_names,
             std::vector<std::string> devices = {});

  const std::vector<int64_t>& shape() const noexcept { return shape_; }
  const std::vector<std::string>& axis_names() const noexcept { return axis_names_; }
  const std::vector<std::string>& devices() const noexcept { return devices_; }
  int64_t size() const noexcept { return static_cast<int64_t>(devices_.size()); }
  // The position of `axis` among axis_names(), or -1.
  int axis_index(const std::string& axis) const noexcept;
  // The size of `axis`; ValueError naming it and the mesh's axes when the mesh has no such axis.
  int64_t axis_size(const std::string& axis) const;
  // Device i's coordinate along every axis (row-major: the last axis varies fastest).
  std::vector<int64_t> coordinates(int64_t device) const;
  // The device index at these coordinates.
  int64_t device_at(const std::vector<int64_t>& coordinates) const;
  // "DeviceMesh({2, 4}, {data, model})"
  std::string to_string() const;

 private:
  std::vector<int64_t> shape_;
  std::vector<std::string> axis_names_;
  std::vector<std::string> devices_;
};

// One entry per dimension of a variable: the mesh axis that splits it, or nullopt (replicated
// along it). An empty layout replicates the whole variable.
class TensorLayout {
 public:
  TensorLayout() = default;
  TensorLayout(std::initializer_list<std::optional<std::string>> axes) : axes_(axes) {}  // NOLINT
  explicit TensorLayout(std::vector<std::optional<std::string>> axes) : axes_(std::move(axes)) {}
  const std::vector<std::optional<std::string>>& axes() const noexcept { return axes_; }
  bool replicated() const noexcept;
  // The dimension split by `axis`, or -1.
  int dim_of(const std::string& axis) const noexcept;
  // "(None, 'model')", Keras's spelling of the tuple.
  std::string to_string() const;
  bool operator==(const TensorLayout&) const = default;

 private:
  std::vector<std::optional<std::string>> axes_;
};

// The part of a variable one device holds: for each dimension, [start, start + length).
struct ShardSlice {
  std::vector<int64_t> start, length;
};

// The slice of a variable of `shape` under `layout` held by mesh device `device`. ValueError
// naming `path`, the dimension, the axis and both sizes when the layout's rank differs from the
// variable's, names an axis the mesh lacks, uses an axis twice, or splits a dimension the axis size
// does not divide.
ShardSlice shard_slice(const std::string& path, const Shape& shape, const TensorLayout& layout,
                       const DeviceMesh& mesh, int64_t device);
// Checks layout against a variable of this shape and path (the errors of shard_slice).
void check_layout(const std::string& path, const Shape& shape, const TensorLayout& layout,
                  const DeviceMesh& mesh);

class LayoutMap {
 public:
  explicit LayoutMap(DeviceMesh mesh) : mesh_(std::move(mesh)) {}
  const DeviceMesh& device_mesh() const noexcept { return mesh_; }

  // The layout of rule `key` (a regex fully matched against variable paths), created empty when
  // new; ValueError naming the key when it is not a valid regex. Rules keep insertion order.
  TensorLayout& operator[](const std::string& key);
  // The layout for `path`: the one rule whose regex fully matches it, or nullopt when none does;
  // ValueError naming the path and both keys when two rules match.
  std::optional<TensorLayout> lookup(const std::string& path) const;
  std::vector<std::string> keys() const;
  // The paths no rule matches (Keras replicates them without a word): the lint.
  std::vector<std::string> unmatched(const std::vector<std::string>& paths) const;

 private:
  struct Rule {
    std::string key;
    std::regex regex;
    TensorLayout layout;
  };
  DeviceMesh mesh_;
  std::vector<Rule> rules_;
};

// A text picture of how a variable of `shape` is split over the mesh (the seed's
// visualize_sharding): a header line, then one box per distinct shard with the index ranges it
// holds and the devices that hold it, e.g. for a [784, 512] kernel with (None, 'model') on a 2x4
// mesh, four column blocks each held by two devices.
std::string visualize_sharding(const std::string& path, const Shape& shape,
                               const TensorLayout& layout, const DeviceMesh& mesh);

}  // namespace osprey::distribute
