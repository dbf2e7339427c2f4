// Variable: a Tensor plus what reverse-mode autograd needs — an optional gradient, whether one is
// wanted, and the graph node (grad_fn) of the op that produced it. Ops in autograd/ops/ take and
// return Variables; each recorded op keeps only what its backward needs (flashlight's design).
// The graph lives in node.h; backward() runs the engine (engine.cpp); grad_mode.h switches
// recording off.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "osprey/autograd/grad_mode.h"
#include "osprey/tensor/tensor.h"

namespace osprey::autograd {

class Node;
namespace detail {
struct VariableImpl;
}

// A shared handle: copies of a Variable refer to one value, one gradient and one graph position.
//   Variable w(random_normal({3, 2}, {.seed = 1}), /*requires_grad=*/true, "dense/kernel");
//   Variable x(random_normal({4, 3}, {.seed = 2}));         // a constant: no gradient wanted
//   Variable loss = mean(relu(matmul(x, w)));               // records two nodes
//   loss.backward();                                        // w.grad(): float32[3, 2]
//   w.zero_grad();                                          // before the next step
//   { NoGradGuard no_grad; Variable y = matmul(x, w); }     // records nothing
//   Variable t = transpose(w, 0, 1);                        // a view; gradients flow through it
// Gradients accumulate: a Variable used twice (x * x) or over several backward() calls sums its
// contributions until zero_grad(). Only floating-point Variables can require gradients.
class Variable {
 public:
  Variable() = default;  // undefined: holds nothing; every accessor but defined() throws
  explicit Variable(Tensor value, bool requires_grad = false, std::string name = {});

  bool defined() const noexcept { return impl_ != nullptr; }
  const Tensor& value() const;
  // Replaces the value (optimizers update weights this way or in place through value()).
  void set_value(Tensor value);
  // A counter bumped by set_value() and mark_modified(): whoever writes the value in place
  // through value() (optimizers, weight copies to replicas) calls mark_modified(), so that
  // caches derived from the value (a layer's compute-dtype copy of its weights) know they are
  // stale.
  uint64_t version() const;
  void mark_modified();

  // The accumulated gradient, undefined until a backward pass reaches this Variable. A leaf's
  // gradient is always a contiguous tensor that nothing else aliases, so it may be updated in
  // place.
  const Tensor& grad() const;
  bool has_grad() const;
  void set_grad(Tensor grad);
  // Drops the gradient (set_to_none, as PyTorch's default), or fills it with zeros in place.
  void zero_grad(bool set_to_none = true);

  bool requires_grad() const noexcept;  // false for an undefined Variable
  // Only on leaves (Variables no recorded op produced); throws ValueError otherwise.
  Variable& set_requires_grad(bool requires_grad);
  bool is_leaf() const;
  // The node of the op that produced this Variable; null for leaves and constants.
  const std::shared_ptr<Node>& grad_fn() const;
  // Also keep the gradient of this non-leaf Variable in grad() during backward.
  void retain_grad();

  const std::string& name() const;
  Variable& set_name(std::string name);
  // The distribution scope this weight was created under (creation_scope.h; set by the layer
  // that created it), empty for one created outside any strategy's scope.
  const std::string& creation_scope() const;
  Variable& set_creation_scope(std::string scope);

  // Keras's mask (`_keras_mask`): bool [batch, steps], true where a step is real and false where
  // it is padding, carried with a sequence from the layer that makes it (Embedding with
  // mask_zero, Masking) to the layers that honour it (recurrent layers, attention, pooling) and
  // to the loss and metrics. Undefined: every step is real. Ops do not carry it; nn::Layer's call
  // sets it on each output (nn/layer.h says how).
  const Tensor& mask() const;
  Variable& set_mask(Tensor mask);

  // Backpropagates from this Variable. Without a gradient it must hold one element (a scalar loss)
  // and the seed is 1; with one, grad must have this Variable's shape (its dtype is cast). The
  // graph is freed as it is traversed unless retain_graph; a second backward through a freed
  // graph throws ValueError.
  void backward(bool retain_graph = false) const;
  void backward(const Tensor& grad, bool retain_graph = false) const;

  // A new leaf sharing this value (same storage), outside the graph: no gradient flows through it.
  Variable detach() const;

  // Called once per backward pass, when this leaf's gradient for that pass is complete (every
  // op that used it has contributed): the hook a gradient reducer uses to start early.
  void add_grad_ready_hook(std::function<void(const Variable&)> hook);

  // Shorthands for value().shape() and friends.
  const Shape& shape() const { return value().shape(); }
  int ndim() const { return value().ndim(); }
  int64_t size(int axis) const { return value().size(axis); }
  int64_t numel() const { return value().numel(); }
  DType dtype() const { return value().dtype(); }
  Device device() const { return value().device(); }
  double item() const { return value().item(); }
  // "Variable(float32[3, 2] on cpu:0, requires_grad, grad_fn=matmul)".
  std::string describe() const;

  bool is_same(const Variable& other) const noexcept { return impl_ == other.impl_; }
  // For the engine and graph code (node.cpp, engine.cpp).
  const std::shared_ptr<detail::VariableImpl>& impl() const noexcept { return impl_; }
  explicit Variable(std::shared_ptr<detail::VariableImpl> impl) : impl_(std::move(impl)) {}

 private:
  detail::VariableImpl& checked(const char* what) const;
  std::shared_ptr<detail::VariableImpl> impl_;
};

}  // namespace osprey::autograd
