// osprey::optim, one include: the optimizers (SGD, Adam, AdamW, RMSprop), their Optimizer base,
// LossScaleOptimizer, learning-rate schedules with the large-batch scaling and warmup rules,
// and get()/serialize().
//   #include "osprey/optim/optim.h"
//   auto opt = osprey::optim::get("adam");
#pragma once

#include "osprey/optim/adam.h"
#include "osprey/optim/factory.h"
#include "osprey/optim/loss_scale_optimizer.h"
#include "osprey/optim/optimizer.h"
#include "osprey/optim/rmsprop.h"
#include "osprey/optim/schedules.h"
#include "osprey/optim/sgd.h"
