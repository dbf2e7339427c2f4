// The distribution scope variables are being created under, per thread: a strategy's label such
// as "MirroredStrategy(cpu:0, cpu:1) #3" (its description and its unique id, so two strategies
// that describe themselves alike still differ), empty outside any. distribute's scope() and the
// trainer set it; layers record it on the weights they create (Variable::creation_scope()) and
// optimizers on their first slots, so the trainer can say which variable was created under which
// strategy when a model or optimizer is used under another (mixing strategies is an error).
//   autograd::CreationScopeGuard guard(&name);   // name outlives the guard
//   Variable v = layer.add_weight(...);           // v.creation_scope() == name
#pragma once

#include <string>

namespace osprey::autograd {

// The scope open on this thread; empty when none is.
const std::string& creation_scope() noexcept;

// Makes `scope` (not copied: it must stay alive while open; null: none) the open one and returns
// the previous one, for guards that cannot be scoped blocks (train's strategy scopes).
const std::string* exchange_creation_scope(const std::string* scope) noexcept;

// Opens `scope` (not copied: it must outlive the guard; null: no scope) and restores the
// previous one. A pointer swap, so the trainer can open it every step without allocating.
class [[nodiscard]] CreationScopeGuard {
 public:
  explicit CreationScopeGuard(const std::string* scope) noexcept;
  ~CreationScopeGuard();
  CreationScopeGuard(const CreationScopeGuard&) = delete;
  CreationScopeGuard& operator=(const CreationScopeGuard&) = delete;

 private:
  const std::string* previous_;
};

}  // namespace osprey::autograd
