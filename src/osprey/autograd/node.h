// Node: one recorded op of the autograd graph. It holds the input Variables that want a gradient
// (strong references: the graph is a DAG from outputs back to leaves, so there are no cycles) and
// the backward function, a closure over only the tensors that function needs.
// make_variable() is how every op records itself; the engine (engine.cpp) runs the nodes.
//
// Writing a differentiable op (the pattern every file in ops/ follows):
//   Variable scale(const Variable& x, const Variable& s) {
//     Tensor y = osprey::mul(x.value(), s.value());
//     if (!should_record(x, s)) return Variable(y);
//     return make_variable(y, "scale", {x, s},
//         [xv = x.value(), sv = s.value()](const Tensor& g, const std::vector<bool>& need) {
//           return std::vector<Tensor>{need[0] ? osprey::mul(g, sv) : Tensor(),
//                                      need[1] ? osprey::sum_to(osprey::mul(g, xv), sv.shape()) :
//                                      Tensor()};
//         });
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

// Maps the gradient of an op's output to the gradients of its inputs, one per input in the order
// given to make_variable. need[i] says whether input i wants one; an undefined Tensor means
// "zero" (and is what to return where need[i] is false). A returned gradient may have another
// dtype than its input (it is cast) but must have its shape.
using BackwardFn =
    std::function<std::vector<Tensor>(const Tensor& grad_output, const std::vector<bool>& need)>;

class Node {
 public:
  Node(const char* op, std::vector<Variable> inputs, BackwardFn backward);
  // Destroys long chains iteratively (a graph of a million ops would overflow the stack otherwise).
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const char* op() const noexcept { return op_; }
  // Inputs in op order; an undefined entry stands for an input that wants no gradient.
  const std::vector<Variable>& inputs() const noexcept { return inputs_; }
  // Creation order: the engine runs ready nodes newest first, which makes gradient sums
  // deterministic.
  uint64_t sequence_nr() const noexcept { return sequence_nr_; }
  // True once a backward pass without retain_graph has run this node and freed what it saved.
  bool released() const noexcept { return released_; }

  // Runs the backward function and checks its result: one gradient per input, shapes equal to
  // the inputs', dtypes cast to the inputs'. For the engine.
  std::vector<Tensor> apply(const Tensor& grad_output);
  // Frees the saved tensors and the references to the inputs.
  void release();

 private:
  friend Variable make_variable(Tensor value, const char* op, std::vector<Variable> inputs,
                                BackwardFn backward);
  friend class Engine;

  const char* op_;
  std::vector<Variable> inputs_;
  std::vector<bool> need_;
  BackwardFn backward_;
  uint64_t sequence_nr_;
  bool released_ = false;
  std::weak_ptr<detail::VariableImpl> output_;  // for retain_grad; weak, to avoid a cycle
};

// True when grad mode is on and any of the (possibly undefined) Variables requires a gradient:
// only then does an op need to save anything for backward.
template <class... V>
bool should_record(const V&... vs) noexcept {
  return is_grad_enabled() && (vs.requires_grad() || ...);
}
bool should_record(const std::vector<Variable>& vs) noexcept;

// Records `op`: returns a Variable holding `value` whose grad_fn computes input gradients with
// `backward`, or a constant Variable when should_record(inputs) is false (then `backward` is
// dropped unused). `op` must be a string literal (it is kept, not copied).
Variable make_variable(Tensor value, const char* op, std::vector<Variable> inputs,
                       BackwardFn backward);

}  // namespace osprey::autograd
