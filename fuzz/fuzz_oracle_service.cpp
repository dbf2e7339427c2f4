// oracle.proto's OracleService as a tuning chief serves it (osprey tune, osprey launch --tuners):
// GetState, UpdateSpace, CreateTrial, UpdateTrial, EndTrial and Heartbeat with any bytes
// (fuzz_rpc.h says how an input becomes calls). The chief's oracle is a random search over a
// small space, saving its study to a folder as a chief does; each restart of the server starts
// a fresh study, so trials accumulate only so far over a long run.
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "fuzz_rpc.h"
#include "fuzz_target.h"
#include "osprey/tune/oracle.pb.h"
#include "osprey/tune/oracle_service.h"
#include "osprey/tune/random_search.h"

namespace {

using namespace osprey::tune;
using osprey::fuzz::parses_as;

constexpr osprey::fuzz::Method kMethods[] = {
    {"/osprey.tune.wire.OracleService/GetState", parses_as<wire::GetStateRequest>},
    {"/osprey.tune.wire.OracleService/UpdateSpace", parses_as<wire::UpdateSpaceRequest>},
    {"/osprey.tune.wire.OracleService/CreateTrial", parses_as<wire::CreateTrialRequest>},
    {"/osprey.tune.wire.OracleService/UpdateTrial", parses_as<wire::UpdateTrialRequest>},
    {"/osprey.tune.wire.OracleService/EndTrial", parses_as<wire::EndTrialRequest>},
    {"/osprey.tune.wire.OracleService/Heartbeat", parses_as<wire::HeartbeatRequest>}};

// The chief: its oracle, its server and the study folder, all gone at exit.
struct Live {
  std::unique_ptr<Oracle> oracle;
  std::unique_ptr<OracleServer> server;
  std::filesystem::path dir;
  ~Live() {
    server.reset();
    oracle.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
} g_live;

std::string start() {
  g_live.server.reset();
  g_live.dir =
      std::filesystem::temp_directory_path() / ("osprey_fuzz_oracle_" + std::to_string(::getpid()));
  std::filesystem::remove_all(g_live.dir);
  HyperParameters space;
  space.Int("units", 8, 64, {.step = 8});
  space.Float("learning_rate", 1e-4, 1e-1, {.sampling = "log"});
  space.Choice("optimizer", {"adam", "sgd"});
  g_live.oracle = std::make_unique<RandomSearchOracle>(OracleOptions{
      .objective = "val_loss", .max_trials = 50, .seed = 1, .hyperparameters = space});
  g_live.oracle->set_directory(g_live.dir);
  g_live.server = std::make_unique<OracleServer>(
      *g_live.oracle, OracleServiceOptions{.listen = "127.0.0.1:0",
                                           .max_message_bytes = osprey::fuzz::kFuzzMaxMessageBytes,
                                           .lease_seconds = 30,
                                           .verbose = false});
  return g_live.server->address();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static osprey::fuzz::LiveService service(start);
  service.run(data, size, kMethods);
  return 0;
}
