// Tensor: an n-dimensional strided view onto reference-counted storage. Views (reshape when the
// strides allow, transpose, permute, slice, expand) share storage and cost no copy; contiguous()
// copies only when needed. Arithmetic lives in tensor/ops.h (no gradients) and in autograd/
// (with gradients); this class holds layout, element access and printing.
//   Tensor x = zeros({2, 3});          // float32 on cpu:0
//   Tensor t = x.transpose(0, 1);      // [3, 2] view, shares x's storage
//   x.set({1, 2}, 5.0);  t.at({2, 1}) == 5.0
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "osprey/core/device.h"
#include "osprey/core/dtype.h"
#include "osprey/core/shape.h"

namespace osprey {

// Bytes owned by one or more tensors, from the caching allocator (64-byte aligned).
class Storage {
 public:
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const noexcept { return data_; }
  size_t bytes() const noexcept { return bytes_; }
  Device device() const noexcept { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
};

struct TensorOptions {
  DType dtype = DType::float32;
  Device device = Device::cpu(0);
};

class Tensor {
 public:
  Tensor() = default;  // undefined: holds no storage
  // Uninitialized contiguous tensor.
  static Tensor empty(const Shape& shape, TensorOptions options = {});
  // A view onto existing storage; checks that every reachable element lies inside it.
  static Tensor from_storage(std::shared_ptr<Storage> storage, const Shape& shape,
                             const Shape& strides, int64_t offset, DType dtype);

  bool defined() const noexcept { return storage_ != nullptr; }
  const Shape& shape() const noexcept { return shape_; }
  const Shape& strides() const noexcept { return strides_; }
  int64_t offset() const noexcept { return offset_; }
  int ndim() const noexcept { return shape_.ndim(); }
  int64_t size(int axis) const { return shape_.at(axis); }
  int64_t numel() const noexcept { return shape_.numel(); }
  DType dtype() const noexcept { return dtype_; }
  Device device() const noexcept { return storage_ ? storage_->device() : Device::cpu(0); }
  size_t itemsize() const noexcept { return dtype_size(dtype_); }
  size_t nbytes() const noexcept { return static_cast<size_t>(numel()) * itemsize(); }
  bool is_contiguous() const noexcept;
  const std::shared_ptr<Storage>& storage() const noexcept { return storage_; }
  bool shares_storage(const Tensor& other) const noexcept {
    return storage_ && storage_ == other.storage_;
  }

  // Address of element [0, ..., 0].
  void* raw_data() const noexcept;
  // Typed address of element [0, ..., 0]; throws ValueError when T does not match dtype().
  template <class T>
  T* data() const {
    check_dtype(dtype_of<std::remove_const_t<T>>(), "Tensor::data");
    return static_cast<T*>(raw_data());
  }

  // Views. Negative axes count from the end; -1 in a view/reshape shape is inferred.
  Tensor view(const Shape& shape) const;     // throws when the strides do not allow a view
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a contiguous copy
  Tensor flatten(int start_axis = 0, int end_axis = -1) const;
  Tensor transpose(int axis0, int axis1) const;
  Tensor permute(std::span<const int> axes) const;
  Tensor permute(std::initializer_list<int> axes) const {
    return permute(std::span<const int>(axes.begin(), axes.size()));
  }
  Tensor slice(int axis, int64_t start, int64_t stop,
               int64_t step = 1) const;          // Python-style bounds
  Tensor select(int axis, int64_t index) const;  // drops the axis
  Tensor narrow(int axis, int64_t start, int64_t length) const;
  Tensor expand(const Shape& shape) const;  // broadcast to shape, stride 0 on broadcast axes
  Tensor squeeze(int axis) const;
  Tensor unsqueeze(int axis) const;
  Tensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;

  // Copies.
  Tensor contiguous() const;     // *this when already contiguous
  Tensor clone() const;          // always a fresh contiguous copy
  Tensor to(DType dtype) const;  // *this when the dtype already matches
  Tensor to(Device device) const;
  // Copies src (broadcast to this shape, cast to this dtype) into this tensor's elements.
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(double value);

  // Element access for tests and small host-side work (slow: one element at a time).
  double item() const;  // requires numel() == 1
  double at(std::initializer_list<int64_t> index) const;
  void set(std::initializer_list<int64_t> index, double value);
  template <class T>
  std::vector<T> to_vector() const;

  // NumPy-like printing, truncated with "..." past 1000 elements.
  std::string to_string() const;
  std::string describe() const;  // "float32[128, 784] on cpu:0"

 private:
  void check_dtype(DType expected, const char* op) const;
  int64_t element_offset(std::initializer_list<int64_t> index, const char* op) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::float32;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

template <class T>
std::vector<T> Tensor::to_vector() const {
  const Tensor c = to(dtype_of<T>()).contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

}  // namespace osprey
