// The backward pass. Two iterative sweeps over the graph reachable from the root:
//  1. discovery (depth-first, an explicit stack): every node, and how many of the graph's
//     consumers feed its output gradient (its dependency count); leaves with hooks likewise;
//  2. execution (Kahn's algorithm): a node runs once all its consumers have run, with the sum of
//     their contributions; among ready nodes the newest runs first, so the order (and therefore
//     every floating-point sum) is the same on every run.
// Without retain_graph each node frees its saved tensors right after it runs, so the peak memory
// of backward is no more than that of forward.
#include "osprey/autograd/engine.h"

#include <queue>
#include <unordered_map>

#include "osprey/autograd/node.h"
#include "osprey/autograd/variable_impl.h"
#include "osprey/core/trace.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::autograd {

namespace {

// The sum of two gradient contributions, out of place: a contribution may be a view of another
// (add returns its incoming gradient to both inputs), so none is ever written to.
Tensor accumulate(const Tensor& acc, Tensor g) {
  if (!acc.defined()) return g;
  return osprey::add(acc, g);
}

// Leaf gradients are contiguous and owned: the first contribution is copied unless nothing else
// refers to its storage (the caller holds the only reference), later ones are summed out of place.
void accumulate_leaf(detail::VariableImpl& leaf, Tensor g) {
  if (leaf.grad.defined()) {
    leaf.grad = osprey::add(leaf.grad, g);
    if (leaf.grad.dtype() != leaf.value.dtype()) leaf.grad = leaf.grad.to(leaf.value.dtype());
    return;
  }
  if (!g.is_contiguous() || g.storage().use_count() > 1) g = g.clone();
  leaf.grad = std::move(g);
}

void fire_hooks(const std::shared_ptr<detail::VariableImpl>& leaf) {
  const Variable v(leaf);
  for (const auto& hook : leaf->grad_ready_hooks) hook(v);
}

}  // namespace

class Engine {
 public:
  static void run(const Variable& root, Tensor grad, bool retain_graph) {
    const auto& root_impl = root.impl();
    if (!root_impl->grad_fn) {  // a leaf: its gradient is the seed itself
      accumulate_leaf(*root_impl, std::move(grad));
      if (!root_impl->grad_ready_hooks.empty()) fire_hooks(root_impl);
      return;
    }
    Engine e;
    e.discover(root_impl->grad_fn);
    e.execute(root_impl->grad_fn, std::move(grad), retain_graph);
  }

 private:
  struct NodeState {
    int dependencies = 0;
    Tensor grad;  // sum of the contributions received so far
  };

  static void check_alive(const Node& n) {
    OSPREY_CHECK(!n.released(),
                 "backward: the graph through '{}' was already freed by an earlier backward(); "
                 "call backward(retain_graph=true) to backpropagate through a graph twice",
                 n.op());
  }

  void discover(const std::shared_ptr<Node>& root) {
    check_alive(*root);
    state_.emplace(root.get(), NodeState{});
    nodes_.push_back(root);
    std::vector<Node*> stack{root.get()};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Node::Edge& e : n->edges_) {
        if (e.leaf) {
          if (!e.leaf->grad_ready_hooks.empty()) ++leaf_pending_[e.leaf.get()];
          continue;
        }
        if (!e.producer) continue;
        Node* child = e.producer.get();
        auto [it, inserted] = state_.try_emplace(child);
        ++it->second.dependencies;
        if (inserted) {
          check_alive(*child);
          nodes_.push_back(e.producer);
          stack.push_back(child);
        }
      }
    }
  }

  void execute(const std::shared_ptr<Node>& root, Tensor grad, bool retain_graph) {
    auto newer_last = [](const Node* a, const Node* b) {
      return a->sequence_nr() < b->sequence_nr();
    };
    std::priority_queue<Node*, std::vector<Node*>, decltype(newer_last)> ready(newer_last);
    state_[root.get()].grad = std::move(grad);
    ready.push(root.get());
    while (!ready.empty()) {
      Node* n = ready.top();
      ready.pop();
      Tensor g = std::move(state_[n].grad);
      if (auto out = n->output_.lock(); out && out->retains_grad && g.defined()) {
        out->grad = accumulate(out->grad, g.contiguous());
      }
      // A node whose consumers all sent "zero" contributes nothing, but still releases its inputs.
      std::vector<Tensor> grads;
      if (g.defined()) {
        const trace::Span span(trace::Category::op_backward, n->op(), [&](trace::Args& a) {
          a.emplace_back("grad_shape", g.shape().to_string());
          a.emplace_back("dtype", dtype_name(g.dtype()));
        });
        grads = n->apply(g);
      }
      g = Tensor();  // the only reference left to the incoming gradient is in `grads`, if any
      for (size_t i = 0; i < n->edges_.size(); ++i) {
        const Node::Edge& e = n->edges_[i];
        if (!e.producer && !e.leaf) continue;
        Tensor gi = grads.empty() ? Tensor() : std::move(grads[i]);
        if (e.producer) {
          NodeState& s = state_[e.producer.get()];
          if (gi.defined()) s.grad = accumulate(s.grad, std::move(gi));
          if (--s.dependencies == 0) ready.push(e.producer.get());
        } else {
          if (gi.defined()) accumulate_leaf(*e.leaf, std::move(gi));
          if (!e.leaf->grad_ready_hooks.empty() && --leaf_pending_[e.leaf.get()] == 0)
            fire_hooks(e.leaf);
        }
      }
      if (!retain_graph) n->release();
    }
  }

  std::unordered_map<Node*, NodeState> state_;
  std::unordered_map<detail::VariableImpl*, int> leaf_pending_;
  std::vector<std::shared_ptr<Node>> nodes_;  // keeps every node alive until the pass ends
};

void run_backward(const Variable& root, const Tensor& grad, bool retain_graph) {
  OSPREY_CHECK(root.requires_grad(),
               "backward: the Variable does not require grad and has no grad_fn ({}); nothing "
               "to differentiate",
               root.describe());
  const Tensor& value = root.value();
  Tensor seed;
  if (grad.defined()) {
    OSPREY_CHECK(grad.shape() == value.shape(),
                 "backward: the gradient's shape {} differs from the Variable's shape {}",
                 grad.shape().to_string(), value.shape().to_string());
    OSPREY_CHECK(grad.device() == value.device(),
                 "backward: the gradient is on {} but the Variable on {}",
                 grad.device().to_string(), value.device().to_string());
    seed = grad.to(value.dtype());
  } else {
    OSPREY_CHECK(value.numel() == 1,
                 "backward: a gradient can be created implicitly only for a one-element "
                 "(scalar) output, but the output has shape {}; call backward(grad) with a "
                 "gradient of that shape",
                 value.shape().to_string());
    seed = ones_like(value);
  }
  Engine::run(root, std::move(seed), retain_graph);
}

}  // namespace osprey::autograd
