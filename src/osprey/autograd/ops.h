// Every differentiable op, one include. Each family has its own header under ops/ (one file
// pair per family: elementwise, activation, attention, softmax, reduction, matmul, conv, pool,
// norm, dropout, embedding, shape, loss, rnn); all take and return Variables and live in
// osprey::autograd.
//   #include "osprey/autograd/ops.h"
//   using namespace osprey::autograd;
//   Variable loss = cross_entropy(linear(relu(linear(x, w1, b1)), w2, b2), labels);
#pragma once

#include "osprey/autograd/node.h"
#include "osprey/autograd/ops/activation.h"
#include "osprey/autograd/ops/attention.h"
#include "osprey/autograd/ops/cast.h"
#include "osprey/autograd/ops/conv.h"
#include "osprey/autograd/ops/dropout.h"
#include "osprey/autograd/ops/elementwise.h"
#include "osprey/autograd/ops/embedding.h"
#include "osprey/autograd/ops/loss.h"
#include "osprey/autograd/ops/matmul.h"
#include "osprey/autograd/ops/norm.h"
#include "osprey/autograd/ops/pool.h"
#include "osprey/autograd/ops/reduction.h"
#include "osprey/autograd/ops/rnn.h"
#include "osprey/autograd/ops/shape.h"
#include "osprey/autograd/ops/softmax.h"
#include "osprey/autograd/variable.h"
