// Fixture for the layering test: an include of a module the level table does not know.
#include "osprey/nosuch/thing.h"
