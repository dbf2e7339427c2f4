// The oracle service in a build without gRPC (OSPREY_WITH_GRPC=OFF): every entry point says so.
#include "osprey/tune/oracle_service.h"

namespace osprey::tune {

namespace {
[[noreturn]] void no_grpc(const char* what) {
  OSPREY_THROW(NotImplementedError,
               "{}: osprey was built without gRPC, which distributed tuning needs: install "
               "libgrpc++-dev and protobuf-compiler-grpc and rebuild with -DOSPREY_WITH_GRPC=ON",
               what);
}
}  // namespace

struct OracleServer::Impl {};

OracleServer::OracleServer(Oracle&, OracleServiceOptions, EndCallback) { no_grpc("OracleServer"); }
OracleServer::~OracleServer() = default;
int OracleServer::port() const { no_grpc("OracleServer"); }
std::string OracleServer::address() const { no_grpc("OracleServer"); }
std::mutex& OracleServer::mutex() { no_grpc("OracleServer"); }
void OracleServer::wait_until_done() { no_grpc("OracleServer"); }
void OracleServer::shutdown() {}

std::unique_ptr<Oracle> connect_oracle(std::unique_ptr<Oracle>, OracleClientOptions) {
  no_grpc("connect_oracle");
}

}  // namespace osprey::tune
