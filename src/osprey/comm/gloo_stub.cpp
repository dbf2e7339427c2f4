// GlooGroup for builds without Gloo (OSPREY_WITH_GLOO off): a clear error, so the rest of osprey
// compiles and passes its tests.
#include "osprey/comm/gloo.h"
#include "osprey/core/error.h"

namespace osprey::comm {

struct GlooGroup::Impl {};

bool gloo_built() noexcept { return false; }

GlooGroup::GlooGroup(GlooOptions options) : options_(std::move(options)) {
  OSPREY_THROW(
      NotImplementedError,
      "osprey was built without Gloo: install libgloo-dev (scripts/setup.sh does) and rebuild with "
      "-DOSPREY_WITH_GLOO=ON");
}

GlooGroup::~GlooGroup() = default;

std::unique_ptr<Communicator> GlooGroup::make_communicator(const std::string&,
                                                           std::optional<bool>) {
  OSPREY_THROW(NotImplementedError, "osprey was built without Gloo");
}

}  // namespace osprey::comm
