#include "osprey/autograd/node.h"

#include <atomic>

#include "osprey/autograd/variable_impl.h"
#include "osprey/core/trace.h"

namespace osprey::autograd {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};

// Moves into `stack` the producer nodes that only `inputs` keep alive, then drops the inputs:
// destroying them then recurses no deeper than one level.
void steal_sole_producers(std::vector<Variable>& inputs,
                          std::vector<std::shared_ptr<Node>>& stack) {
  for (Variable& v : inputs) {
    const auto& impl = v.impl();
    if (impl && impl.use_count() == 1 && impl->grad_fn && impl->grad_fn.use_count() == 1) {
      stack.push_back(std::move(impl->grad_fn));
    }
  }
  inputs.clear();
}
}  // namespace

Node::Node(const char* op, std::vector<Variable> inputs, BackwardFn backward)
    : op_(op),
      inputs_(std::move(inputs)),
      backward_(std::move(backward)),
      sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {
  need_.reserve(inputs_.size());
  for (const Variable& v : inputs_) need_.push_back(v.defined());
}

Node::~Node() {
  std::vector<std::shared_ptr<Node>> stack;
  steal_sole_producers(inputs_, stack);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    steal_sole_producers(n->inputs_, stack);
    n->backward_ = nullptr;  // n is destroyed here, with nothing left to recurse into
  }
}

void Node::release() {
  released_ = true;
  backward_ = nullptr;
  std::vector<std::shared_ptr<Node>> stack;
  steal_sole_producers(inputs_, stack);
  // The stolen nodes are destroyed when `stack` goes out of scope, each iteratively.
}

std::vector<Tensor> Node::apply(const Tensor& grad_output) {
  OSPREY_ASSERT(!released_ && backward_, "Node::apply on the released node '{}'", op_);
  std::vector<Tensor> grads = backward_(grad_output, need_);
  OSPREY_ASSERT(grads.size() == inputs_.size(),
                "backward of '{}' returned {} gradients for {} inputs", op_, grads.size(),
                inputs_.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!need_[i]) {
      grads[i] = Tensor();
      continue;
    }
    Tensor& g = grads[i];
    if (!g.defined()) continue;
    const Tensor& v = inputs_[i].value();
    OSPREY_ASSERT(g.shape() == v.shape(),
                  "backward of '{}' returned a gradient of shape {} for input {} of shape {}", op_,
                  g.shape().to_string(), i, v.shape().to_string());
    if (g.dtype() != v.dtype()) g = g.to(v.dtype());
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
                       BackwardFn backward) {
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
  impl->grad_fn = std::make_shared<Node>(op, std::move(inputs), std::move(backward));
  impl->grad_fn->output_ = impl;
  return Variable(std::move(impl));
}

}  // namespace osprey::autograd
