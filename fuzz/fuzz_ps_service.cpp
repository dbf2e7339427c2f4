// ps.proto's ParameterServer service as `osprey ps` serves it: Register, Pull, Push, Stats and
// Checkpoint with any bytes (fuzz_rpc.h says how an input becomes calls). The server runs in this
// process on loopback with a 1 MB message bound and a checkpoint folder; it is replaced every 2,000
// inputs, so the variables registered by earlier inputs are reached without the shard growing
// without bound over a long run.
#include <memory>

#include "fuzz_rpc.h"
#include "fuzz_target.h"
#include "osprey/distribute/ps/internal/rpc.h"
#include "osprey/distribute/ps/ps.pb.h"
#include "osprey/distribute/ps/ps_server.h"

namespace {

using osprey::distribute::ps::PsServer;

constexpr const char* kMethods[] = {
    "/osprey.distribute.ps.ParameterServer/Register", "/osprey.distribute.ps.ParameterServer/Pull",
    "/osprey.distribute.ps.ParameterServer/Push", "/osprey.distribute.ps.ParameterServer/Stats",
    "/osprey.distribute.ps.ParameterServer/Checkpoint"};
// Whether a payload parses as each method's request, in kMethods' order.
constexpr bool (*kParses[])(std::string_view) = {
    osprey::fuzz::parses_as<osprey::distribute::ps::RegisterRequest>,
    osprey::fuzz::parses_as<osprey::distribute::ps::PullRequest>,
    osprey::fuzz::parses_as<osprey::distribute::ps::PushRequest>,
    osprey::fuzz::parses_as<osprey::distribute::ps::StatsRequest>,
    osprey::fuzz::parses_as<osprey::distribute::ps::CheckpointRequest>};
constexpr int64_t kMaxMessageBytes = 1 << 20;

struct Served {
  std::unique_ptr<PsServer> server;
  std::shared_ptr<grpc::Channel> channel;
  int inputs = 0;
};

Served& served() {
  static Served s;
  if (s.server == nullptr || s.inputs >= 2000) {
    s.server.reset();
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("osprey_fuzz_ps_" + std::to_string(::getpid())))
            .string();
    std::filesystem::remove_all(dir);
    s.server = std::make_unique<PsServer>(
        osprey::distribute::ps::PsServerOptions{.listen = "127.0.0.1:0",
                                                .checkpoint_dir = dir,
                                                .max_message_bytes = kMaxMessageBytes,
                                                .name = "fuzz ps"});
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
