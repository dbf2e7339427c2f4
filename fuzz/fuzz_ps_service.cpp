// ps.proto's ParameterServer service as `osprey ps` serves it: Register, Pull, Push, Stats and
// Checkpoint with any bytes (fuzz_rpc.h says how an input becomes calls). The server runs in this
// process on loopback with a 1 MB message bound and a checkpoint folder.
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "fuzz_rpc.h"
#include "fuzz_target.h"
#include "osprey/distribute/ps/ps.pb.h"
#include "osprey/distribute/ps/ps_server.h"

namespace {

using namespace osprey::distribute::ps;
using osprey::fuzz::parses_as;

constexpr osprey::fuzz::Method kMethods[] = {
    {"/osprey.distribute.ps.ParameterServer/Register", parses_as<RegisterRequest>},
    {"/osprey.distribute.ps.ParameterServer/Pull", parses_as<PullRequest>},
    {"/osprey.distribute.ps.ParameterServer/Push", parses_as<PushRequest>},
    {"/osprey.distribute.ps.ParameterServer/Stats", parses_as<StatsRequest>},
    {"/osprey.distribute.ps.ParameterServer/Checkpoint", parses_as<CheckpointRequest>}};

// The server and its checkpoint folder, both gone at exit (the server writes a last checkpoint
// when it stops, so the folder goes after it).
struct Live {
  std::unique_ptr<PsServer> server;
  std::filesystem::path dir;
  ~Live() {
    server.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
} g_live;

std::string start() {
  g_live.server.reset();
  g_live.dir =
      std::filesystem::temp_directory_path() / ("osprey_fuzz_ps_" + std::to_string(::getpid()));
  std::filesystem::remove_all(g_live.dir);
  g_live.server = std::make_unique<PsServer>(
      PsServerOptions{.listen = "127.0.0.1:0",
                      .checkpoint_dir = g_live.dir.string(),
                      .max_message_bytes = osprey::fuzz::kFuzzMaxMessageBytes,
                      .name = "fuzz ps"});
  return g_live.server->address();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static osprey::fuzz::LiveService service(start);
  service.run(data, size, kMethods);
  return 0;
}
