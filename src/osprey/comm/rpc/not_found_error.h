// NotFoundError: a request names something a service does not hold (a variable a parameter
// server was never given). A ValueError, so callers that only care about bad input catch it as
// one; osprey's gRPC services answer it with NOT_FOUND (rpc.h), and it lives here,
// outside the gRPC code, so that the logic behind a service (ps/parameter_shard.h) can throw it
// in builds without gRPC.
//   OSPREY_THROW(comm::rpc::NotFoundError, "ps 0: no variable 'dense/kernel'");
#pragma once

#include "osprey/core/error.h"

namespace osprey::comm::rpc {

class NotFoundError : public ValueError {
 public:
  using ValueError::ValueError;
};

}  // namespace osprey::comm::rpc
