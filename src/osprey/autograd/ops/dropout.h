// Differentiable inverted dropout: in training each element is zeroed with probability `rate`
// and the survivors are scaled by 1 / (1 - rate), so inference is the identity. The mask comes
// from random_bernoulli with the given seed: the same seed gives the same mask on any thread
// count (counter-based Philox).
//   Variable h = dropout(x, 0.5, /*seed=*/step * 1000 + layer_index, /*training=*/true);
#pragma once

#include <cstdint>

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

// rate in [0, 1). Returns x itself when !training or rate == 0.
Variable dropout(const Variable& x, double rate, uint64_t seed, bool training = true);

}  // namespace osprey::autograd
