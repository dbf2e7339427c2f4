#include "osprey/nn/seed_states.h"

#include <functional>
#include <map>

#include "osprey/core/error.h"

namespace osprey::nn {

namespace {

void visit(Layer& layer, const std::function<void(Layer&)>& fn) {
  fn(layer);
  for (const auto& sub : layer.sublayers()) visit(*sub, fn);
}

}  // namespace

SeedStates seed_states(const Layer& root) {
  SeedStates out;
  // visit() takes a mutable layer only to share one traversal with set_seed_states.
  visit(const_cast<Layer&>(root), [&](Layer& l) {  // NOLINT(cppcoreguidelines-pro-type-const-cast)
    if (l.seed_calls() != 0) out.emplace_back(l.path(), l.seed_calls());
  });
  return out;
}

void set_seed_states(Layer& root, const SeedStates& states) {
  std::map<std::string, uint64_t> wanted(states.begin(), states.end());
  visit(root, [&](Layer& l) {
    const auto it = wanted.find(l.path());
    l.set_seed_calls(it == wanted.end() ? 0 : it->second);
    if (it != wanted.end()) wanted.erase(it);
  });
  OSPREY_CHECK(wanted.empty(),
               "set_seed_states: no layer \"{}\" under {} (the seed states belong to another "
               "model)",
               wanted.empty() ? "" : wanted.begin()->first, root.path());
}

}  // namespace osprey::nn
