// The backward engine: from a root Variable, orders the graph's nodes topologically (iteratively,
// so graph depth is unbounded), runs each node once with the sum of its output's gradients, and
// accumulates into the leaves. Variable::backward() is its public face.
#pragma once

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

// grad: the gradient of root (root's shape; cast to root's dtype); undefined = ones for a
// one-element root, an error otherwise.
void run_backward(const Variable& root, const Tensor& grad, bool retain_graph);

}  // namespace osprey::autograd
