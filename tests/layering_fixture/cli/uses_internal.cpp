// Fixture for the layering test: cli/ includes another module's internal/ header, with no exception.
#include "osprey/distribute/ps/internal/ps_client.h"
#include "osprey/train/model.h"
