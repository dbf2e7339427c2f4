// Tensors sent from one worker to every other over a cross-process communicator, shape included:
// what the strategies that keep different parts of a model on different processes
// (ModelParallel, PipelineParallel) use to give every process the whole model and every step's
// outputs.
#pragma once

#include "osprey/comm/communicator.h"
#include "osprey/tensor/tensor.h"

namespace osprey::distribute {

// `t` (any floating dtype, at most 7 dimensions) as held by `root`: every rank returns it as
// float32 with its shape; the others' `t` is ignored. An undefined `t` on root (a prediction
// without a mask) is undefined everywhere.
Tensor broadcast_tensor(comm::Communicator& c, const Tensor& t, int root);

}  // namespace osprey::distribute
