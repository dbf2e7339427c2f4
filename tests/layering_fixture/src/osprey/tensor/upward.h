// Fixture for the layering test: a level-1 header including a level-2 module must be caught.
#pragma once
#include "osprey/autograd/variable.h"
