// Node: one recorded op of the autograd graph. It holds, for each input that wants a gradient, an
// edge: the node that produced it, or the leaf itself (strong references: the graph is a DAG from
// outputs back to leaves, so there are no cycles), and the backward function, a closure over only
// the tensors that function needs. An intermediate input's value is not held: the graph keeps
// alive what backward needs and nothing else (holding every op's inputs kept every activation of
// a step, about 40% more memory for a GPT).
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

enum class KeepInputs { no, yes };

namespace detail {
struct VariableImpl;
}

class Node {
 public:
  Node(const char* op, std::vector<Variable> inputs, BackwardFn backward);
  // Destroys long chains iteratively (a graph of a million ops would overflow the stack otherwise).
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const char* op() const noexcept { return op_; }
  size_t num_inputs() const noexcept { return edges_.size(); }
  // Input i: a leaf, an input the op kept (KeepInputs::yes, while its output lives), or an
  // intermediate that something else still holds; undefined for an input that wants no gradient
  // or that only the graph referred to (its value is gone).
  Variable input(size_t i) const;
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

  // Where an input's gradient goes: the producing node, or the leaf. Shape and dtype are what the
  // returned gradient is checked and cast against.
  struct Edge {
    std::shared_ptr<Node> producer;
    std::shared_ptr<detail::VariableImpl> leaf;
    Shape shape;
    DType dtype = DType::float32;
  };

 private:
  friend Variable make_variable(Tensor value, const char* op, std::vector<Variable> inputs,
                                BackwardFn backward, KeepInputs keep);
  friend class Engine;

  const char* op_;
  std::vector<Edge> edges_;  // one per input; neither pointer set: wants no gradient
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
// dropped unused). `op` must be a string literal (it is kept, not copied). KeepInputs::yes: the
// output keeps the input Variables themselves, reachable through grad_fn()->input(i) while the
// output lives; softmax and sigmoid do, so that a crossentropy loss can start from their logits
// (Keras's `_keras_logits`), without the graph keeping every softmax's input.
Variable make_variable(Tensor value, const char* op, std::vector<Variable> inputs,
                       BackwardFn backward, KeepInputs keep = KeepInputs::no);

}  // namespace osprey::autograd
