// Fixture for the layering test: distribute may include comm, but not comm's internal/ headers.
// Its own internal/ headers it may include.
#include "osprey/comm/communicator.h"
#include "osprey/comm/internal/socket.h"
#include "osprey/distribute/ps/internal/ps_client.h"
