// The umbrella header: everything a user program needs, under `namespace os = osprey;`.
#pragma once

#include "osprey/autograd/ops.h"
#include "osprey/autograd/variable.h"
#include "osprey/core/device.h"
#include "osprey/core/dtype.h"
#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/core/rng.h"
#include "osprey/data/dataset.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/tensor/tensor.h"
#include "osprey/version.h"
