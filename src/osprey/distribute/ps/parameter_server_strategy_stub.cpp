// ParameterServerStrategy in a build without gRPC (OSPREY_WITH_GRPC=OFF): it cannot be made.
#include "osprey/core/error.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/ps/parameter_server_strategy.h"

namespace osprey::distribute {

struct ParameterServerStrategy::Runtime {};

ParameterServerStrategy::ParameterServerStrategy(ParameterServerOptions options,
                                                 std::optional<ClusterResolver> cluster)
    : StrategyBase(resolve_devices({"cpu:0"}, "ParameterServerStrategy")),
      options_(std::move(options)),
      cluster_(cluster ? std::move(*cluster) : ClusterResolver::from_environment()) {
  OSPREY_THROW(NotImplementedError,
               "ParameterServerStrategy: osprey was built without gRPC (OSPREY_WITH_GRPC=OFF): "
               "parameter servers need libgrpc++-dev and protobuf-compiler-grpc; install them "
               "(scripts/setup.sh) and rebuild");
}

int ParameterServerStrategy::replicas_to_aggregate() const noexcept { return 0; }

std::string ParameterServerStrategy::describe() const { return name(); }

std::unique_ptr<train::StepExecutor> ParameterServerStrategy::make_executor(
    std::shared_ptr<models::Network>, std::shared_ptr<optim::Optimizer>) const {
  OSPREY_THROW(NotImplementedError, "ParameterServerStrategy: osprey was built without gRPC");
}

}  // namespace osprey::distribute
