// The state a Variable handle shares: value, gradient, flags, the producing node and hooks.
// Internal to autograd (variable.cpp, node.cpp, engine.cpp); user code goes through Variable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "osprey/autograd/variable.h"

namespace osprey::autograd::detail {

struct VariableImpl {
  Tensor value;
  Tensor grad;
  bool requires_grad = false;
  uint64_t version = 0;           // see Variable::version()
  bool retains_grad = false;      // a non-leaf that keeps its gradient (retain_grad())
  std::shared_ptr<Node> grad_fn;  // null for leaves
  std::string name;
  std::string creation_scope;  // the strategy scope a layer created it under (creation_scope.h)
  Tensor mask;                 // see Variable::mask()
  std::vector<std::function<void(const Variable&)>> grad_ready_hooks;
  std::vector<Variable> kept_inputs;  // its op's inputs, for KeepInputs::yes (node.h)
};

}  // namespace osprey::autograd::detail
