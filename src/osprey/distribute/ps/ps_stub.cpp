// Parameter-server entry points for a build without gRPC (OSPREY_WITH_GRPC=OFF): they exist, so
// everything links, and the first one a program reaches throws NotImplementedError saying how
// to get them. The shard logic (parameter_shard.cpp) needs no gRPC and builds everywhere.
#include "osprey/core/error.h"
#include "osprey/distribute/ps/ps_server.h"

namespace osprey::distribute::ps {

namespace {

[[noreturn]] void throw_without_grpc() {
  throw NotImplementedError(
      "osprey was built without gRPC (OSPREY_WITH_GRPC=OFF): parameter servers need "
      "libgrpc++-dev; install it (scripts/setup.sh) and rebuild");
}

}  // namespace

struct PsServer::Impl {};

PsServer::PsServer(PsServerOptions) { throw_without_grpc(); }
PsServer::~PsServer() = default;
int PsServer::port() const { throw_without_grpc(); }
std::string PsServer::address() const { throw_without_grpc(); }
void PsServer::wait() { throw_without_grpc(); }
void PsServer::shutdown() { throw_without_grpc(); }
ParameterShard& PsServer::shard() { throw_without_grpc(); }

}  // namespace osprey::distribute::ps
