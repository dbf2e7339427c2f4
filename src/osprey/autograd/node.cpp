#include "osprey/autograd/node.h"

#include <atomic>

#include "osprey/autograd/variable_impl.h"
#include "osprey/core/trace.h"

namespace osprey::autograd {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};

// Moves into `stack` the producer nodes that only `edges` keep alive, then drops the edges:
// destroying them then recurses no deeper than one level.
void steal_sole_producers(std::vector<Node::Edge>& edges,
                          std::vector<std::shared_ptr<Node>>& stack) {
  for (Node::Edge& e : edges) {
    if (e.producer && e.producer.use_count() == 1) stack.push_back(std::move(e.producer));
  }
  edges.clear();
}
}  // namespace

Node::Node(const char* op, std::vector<Variable> inputs, BackwardFn backward)
    : op_(op),
      backward_(std::move(backward)),
      sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {
  edges_.reserve(inputs.size());
  need_.reserve(inputs.size());
  for (const Variable& v : inputs) {
    Edge e;
    if (v.defined()) {
      const auto& impl = v.impl();
      if (impl->grad_fn) {
        e.producer = impl->grad_fn;
      } else {
        e.leaf = impl;
      }
      e.shape = impl->value.shape();
      e.dtype = impl->value.dtype();
    }
    need_.push_back(v.defined());
    edges_.push_back(std::move(e));
  }
}

Node::~Node() {
  std::vector<std::shared_ptr<Node>> stack;
  steal_sole_producers(edges_, stack);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    steal_sole_producers(n->edges_, stack);
    n->backward_ = nullptr;  // n is destroyed here, with nothing left to recurse into
  }
}

Variable Node::input(size_t i) const {
  OSPREY_CHECK(i < edges_.size(), "Node '{}': input {} of {}", op_, i, edges_.size());
  const auto out = output_.lock();
  if (out && !out->kept_inputs.empty()) return out->kept_inputs[i];
  const Edge& e = edges_[i];
  if (e.leaf) return Variable(e.leaf);
  if (e.producer) {
    if (auto out = e.producer->output_.lock()) return Variable(std::move(out));
  }
  return {};
}

void Node::release() {
  released_ = true;
  backward_ = nullptr;
  std::vector<std::shared_ptr<Node>> stack;
  steal_sole_producers(edges_, stack);
  // The stolen nodes are destroyed when `stack` goes out of scope, each iteratively.
}

std::vector<Tensor> Node::apply(const Tensor& grad_output) {
  OSPREY_ASSERT(!released_ && backward_, "Node::apply on the released node '{}'", op_);
  std::vector<Tensor> grads = backward_(grad_output, need_);
  OSPREY_ASSERT(grads.size() == edges_.size(),
                "backward of '{}' returned {} gradients for {} inputs", op_, grads.size(),
                edges_.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!need_[i]) {
      grads[i] = Tensor();
      continue;
    }
    Tensor& g = grads[i];
    if (!g.defined()) continue;
    const Edge& e = edges_[i];
    OSPREY_ASSERT(g.shape() == e.shape,
                  "backward of '{}' returned a gradient of shape {} for input {} of shape {}", op_,
                  g.shape().to_string(), i, e.shape.to_string());
    if (g.dtype() != e.dtype) g = g.to(e.dtype);
  }
  return grads;
}

bool should_record(const std::vector<Variable>& vs) noexcept {
  if (!is_grad_enabled()) return false;
  for (const Variable& v : vs) {
    if (v.requires_grad()) return true;
  }
  return false;
}

Variable make_variable(Tensor value, const char* op, std::vector<Variable> inputs,
                       BackwardFn backward, KeepInputs keep) {
  // The op's forward span, begun when it checked its inputs (ops/common.cpp).
  trace::end_marked_op(op, [&](trace::Args& a) {
    std::string shapes;
    for (const Variable& v : inputs) {
      if (!shapes.empty()) shapes += ' ';
      shapes += v.defined() ? v.shape().to_string() : std::string("None");
    }
    a.emplace_back("input_shapes", std::move(shapes));
    a.emplace_back("output_shape", value.shape().to_string());
    a.emplace_back("dtype", dtype_name(value.dtype()));
  });
  if (!should_record(inputs)) return Variable(std::move(value));
  // Inputs that want no gradient are not kept: the graph must not extend their lifetime.
  for (Variable& v : inputs) {
    if (!v.requires_grad()) v = Variable();
  }
  auto impl = std::make_shared<detail::VariableImpl>();
  impl->value = std::move(value);
  impl->requires_grad = true;
  if (keep == KeepInputs::yes) impl->kept_inputs = inputs;
  impl->grad_fn = std::make_shared<Node>(op, std::move(inputs), std::move(backward));
  impl->grad_fn->output_ = impl;
  return Variable(std::move(impl));
}

}  // namespace osprey::autograd
