// Fixture for the layering test: an internal/ include that FIXTURE_EXCEPTIONS lists is not reported.
#include "osprey/distribute/ps/internal/ps_client.h"
