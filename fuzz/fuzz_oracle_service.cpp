// oracle.proto's OracleService as a tuning chief serves it (osprey tune, osprey launch --tuners):
// GetState, UpdateSpace, CreateTrial, UpdateTrial, EndTrial and Heartbeat with any bytes
// (fuzz_rpc.h says how an input becomes calls). The chief's oracle is a random search over a
// small space, saving its study to a folder as a chief does; server, oracle and folder are
// replaced every 2,000 inputs, so trials accumulate only so far over a long run.
#include <memory>

#include "fuzz_rpc.h"
#include "fuzz_target.h"
#include "osprey/distribute/ps/internal/rpc.h"
#include "osprey/tune/oracle.pb.h"
#include "osprey/tune/oracle_service.h"
#include "osprey/tune/random_search.h"

namespace {

using namespace osprey::tune;

constexpr const char* kMethods[] = {
    "/osprey.tune.wire.OracleService/GetState",    "/osprey.tune.wire.OracleService/UpdateSpace",
    "/osprey.tune.wire.OracleService/CreateTrial", "/osprey.tune.wire.OracleService/UpdateTrial",
    "/osprey.tune.wire.OracleService/EndTrial",    "/osprey.tune.wire.OracleService/Heartbeat"};
// Whether a payload parses as each method's request, in kMethods' order.
constexpr bool (*kParses[])(std::string_view) = {osprey::fuzz::parses_as<wire::GetStateRequest>,
                                                 osprey::fuzz::parses_as<wire::UpdateSpaceRequest>,
                                                 osprey::fuzz::parses_as<wire::CreateTrialRequest>,
                                                 osprey::fuzz::parses_as<wire::UpdateTrialRequest>,
                                                 osprey::fuzz::parses_as<wire::EndTrialRequest>,
                                                 osprey::fuzz::parses_as<wire::HeartbeatRequest>};
constexpr int64_t kMaxMessageBytes = 1 << 20;

struct Served {
  std::unique_ptr<Oracle> oracle;
  std::unique_ptr<OracleServer> server;
  std::shared_ptr<grpc::Channel> channel;
  int inputs = 0;
};

Served& served() {
  static Served s;
  if (s.server == nullptr || s.inputs >= 2000) {
    s.server.reset();
    const auto dir = std::filesystem::temp_directory_path() /
                     ("osprey_fuzz_oracle_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    HyperParameters space;
    space.Int("units", 8, 64, {.step = 8});
    space.Float("learning_rate", 1e-4, 1e-1, {.sampling = "log"});
    space.Choice("optimizer", {"adam", "sgd"});
    s.oracle = std::make_unique<RandomSearchOracle>(OracleOptions{
        .objective = "val_loss", .max_trials = 50, .seed = 1, .hyperparameters = space});
    s.oracle->set_directory(dir);
    s.server = std::make_unique<OracleServer>(
        *s.oracle, OracleServiceOptions{.listen = "127.0.0.1:0",
                                        .max_message_bytes = kMaxMessageBytes,
                                        .lease_seconds = 30,
                                        .verbose = false});
    s.channel = osprey::distribute::rpc::make_channel(s.server->address(), kMaxMessageBytes);
    s.inputs = 0;
  }
  ++s.inputs;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Served& s = served();
  for (const osprey::fuzz::RawCall& c :
       osprey::fuzz::split_calls(data, size, std::size(kMethods), 8)) {
    osprey::fuzz::call_and_check(s.channel, kMethods[c.method], c.payload,
                                 kParses[c.method](c.payload));
  }
  return 0;
}
