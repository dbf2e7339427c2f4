// The seed streams of a layer tree (its layers' seed_calls(), by layer path), read and written as
// a whole: a training backup saves them and a resumed run restores them, and in-process replicas
// take the primary's, so every copy of a seeded Dropout draws what the primary would.
//   auto states = nn::seed_states(model.network());     // {{"sequential/dropout", 120}, ...}
//   nn::set_seed_states(other.network(), states);       // every other layer's stream starts over
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "osprey/nn/layer.h"

namespace osprey::nn {

using SeedStates = std::vector<std::pair<std::string, uint64_t>>;

// Every layer under root (root included) whose stream has moved, by path, in traversal order.
SeedStates seed_states(const Layer& root);
// Sets each listed layer's stream and every other layer's to 0; ValueError naming the path when
// a listed path is not a layer under root.
void set_seed_states(Layer& root, const SeedStates& states);

}  // namespace osprey::nn
