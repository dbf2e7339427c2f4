#include "osprey/autograd/variable.h"

#include <fmt/format.h>

#include "osprey/autograd/engine.h"
#include "osprey/autograd/node.h"
#include "osprey/autograd/variable_impl.h"

namespace osprey::autograd {

namespace {
void check_can_require_grad(const Tensor& value, bool requires_grad) {
  OSPREY_CHECK(!requires_grad || is_floating(value.dtype()),
               "Variable: only floating-point tensors can require gradients. Received: {}",
               value.describe());
}
}  // namespace

Variable::Variable(Tensor value, bool requires_grad, std::string name) {
  OSPREY_CHECK(value.defined(), "Variable: the value tensor is undefined{}",
               name.empty() ? std::string() : fmt::format(" (variable '{}')", name));
  check_can_require_grad(value, requires_grad);
  impl_ = std::make_shared<detail::VariableImpl>();
  impl_->value = std::move(value);
  impl_->requires_grad = requires_grad;
  impl_->name = std::move(name);
}

detail::VariableImpl& Variable::checked(const char* what) const {
  OSPREY_CHECK(impl_ != nullptr, "Variable::{}: the Variable is undefined", what);
  return *impl_;
}

const Tensor& Variable::value() const { return checked("value").value; }

void Variable::set_value(Tensor value) {
  detail::VariableImpl& v = checked("set_value");
  OSPREY_CHECK(value.defined(), "Variable::set_value: the new value is undefined");
  OSPREY_CHECK(v.grad_fn == nullptr,
               "Variable::set_value: only a leaf's value can be replaced; "
               "this Variable was produced by '{}'",
               v.grad_fn ? v.grad_fn->op() : "");
  check_can_require_grad(value, v.requires_grad);
  v.value = std::move(value);
  ++v.version;
}

uint64_t Variable::version() const { return checked("version").version; }
void Variable::mark_modified() { ++checked("mark_modified").version; }

const Tensor& Variable::grad() const { return checked("grad").grad; }
bool Variable::has_grad() const { return checked("has_grad").grad.defined(); }

void Variable::set_grad(Tensor grad) {
  detail::VariableImpl& v = checked("set_grad");
  OSPREY_CHECK(!grad.defined() || grad.shape() == v.value.shape(),
               "Variable::set_grad: the gradient's shape {} differs from the value's {}",
               grad.shape().to_string(), v.value.shape().to_string());
  v.grad = std::move(grad);
}

void Variable::zero_grad(bool set_to_none) {
  detail::VariableImpl& v = checked("zero_grad");
  if (set_to_none || !v.grad.defined()) {
    v.grad = Tensor();
  } else {
    v.grad.fill_(0.0);
  }
}

bool Variable::requires_grad() const noexcept { return impl_ && impl_->requires_grad; }

Variable& Variable::set_requires_grad(bool requires_grad) {
  detail::VariableImpl& v = checked("set_requires_grad");
  OSPREY_CHECK(v.grad_fn == nullptr,
               "Variable::set_requires_grad: only leaves can change requires_grad; this Variable "
               "was produced by '{}' (use detach() for a leaf copy)",
               v.grad_fn ? v.grad_fn->op() : "");
  check_can_require_grad(v.value, requires_grad);
  v.requires_grad = requires_grad;
  return *this;
}

bool Variable::is_leaf() const { return checked("is_leaf").grad_fn == nullptr; }

const std::shared_ptr<Node>& Variable::grad_fn() const { return checked("grad_fn").grad_fn; }

void Variable::retain_grad() {
  detail::VariableImpl& v = checked("retain_grad");
  OSPREY_CHECK(v.requires_grad, "Variable::retain_grad: the Variable does not require grad");
  v.retains_grad = true;
}

const std::string& Variable::name() const { return checked("name").name; }

Variable& Variable::set_name(std::string name) {
  checked("set_name").name = std::move(name);
  return *this;
}

const std::string& Variable::creation_scope() const {
  return checked("creation_scope").creation_scope;
}

Variable& Variable::set_creation_scope(std::string scope) {
  checked("set_creation_scope").creation_scope = std::move(scope);
  return *this;
}

const Tensor& Variable::mask() const { return checked("mask").mask; }

Variable& Variable::set_mask(Tensor mask) {
  checked("set_mask").mask = std::move(mask);
  return *this;
}

void Variable::backward(bool retain_graph) const {
  checked("backward");
  run_backward(*this, Tensor(), retain_graph);
}

void Variable::backward(const Tensor& grad, bool retain_graph) const {
  checked("backward");
  OSPREY_CHECK(grad.defined(), "backward: the gradient tensor is undefined");
  run_backward(*this, grad, retain_graph);
}

Variable Variable::detach() const {
  const detail::VariableImpl& v = checked("detach");
  return Variable(v.value, false, v.name);
}

void Variable::add_grad_ready_hook(std::function<void(const Variable&)> hook) {
  detail::VariableImpl& v = checked("add_grad_ready_hook");
  OSPREY_CHECK(v.grad_fn == nullptr && v.requires_grad,
               "Variable::add_grad_ready_hook: hooks go on leaves that require grad");
  v.grad_ready_hooks.push_back(std::move(hook));
}

std::string Variable::describe() const {
  if (!impl_) return "Variable(undefined)";
  std::string s = "Variable(";
  if (!impl_->name.empty()) s += "'" + impl_->name + "', ";
  s += impl_->value.describe();
  if (impl_->requires_grad) s += ", requires_grad";
  if (impl_->grad_fn) s += fmt::format(", grad_fn={}", impl_->grad_fn->op());
  return s + ")";
}

}  // namespace osprey::autograd
