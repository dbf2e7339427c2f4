#include "osprey/autograd/creation_scope.h"

namespace osprey::autograd {

namespace {
thread_local const std::string* t_scope = nullptr;
}  // namespace

const std::string& creation_scope() noexcept {
  static const std::string none;
  return t_scope != nullptr ? *t_scope : none;
}

const std::string* exchange_creation_scope(const std::string* scope) noexcept {
  const std::string* previous = t_scope;
  t_scope = scope;
  return previous;
}

CreationScopeGuard::CreationScopeGuard(const std::string* scope) noexcept : previous_(t_scope) {
  t_scope = scope;
}
CreationScopeGuard::~CreationScopeGuard() { t_scope = previous_; }

}  // namespace osprey::autograd
