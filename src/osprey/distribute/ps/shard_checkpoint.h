// The on-disk form of a ParameterShard: a directory holding shard.safetensors (the variables as
// "variables/<path>", the non-trainable state as "state/<path>", the optimizer's state as
// optimizer.state("optimizer"): iterations and "optimizer/<path>/<slot>") and manifest.json
// (format, version, last step, the config with the optimizer's JSON, and the names in order).
// Written atomically (io::atomic_write_directory: a crash leaves the previous checkpoint whole);
// read back with every problem reported as an IoError naming the file.
//   write_shard_checkpoint("/tmp/ps0", checkpoint);
//   std::optional<ShardCheckpoint> c = read_shard_checkpoint("/tmp/ps0", "ps 0");
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "osprey/distribute/ps/parameter_shard.h"

namespace osprey::distribute::ps {

struct ShardCheckpoint {
  std::string name;  // the shard's name when written, for people reading the manifest
  ShardConfig config;
  int64_t version = 0;
  int64_t last_step = -1;
  NamedTensors variables, state;  // float32 variables; state of any dtype
  NamedTensors optimizer_state;   // Optimizer::state("optimizer")
};

inline constexpr char kShardManifestFile[] = "manifest.json";
inline constexpr char kShardTensorsFile[] = "shard.safetensors";

// Replaces dir with the checkpoint, atomically.
void write_shard_checkpoint(const std::filesystem::path& dir, const ShardCheckpoint& checkpoint);
// The checkpoint in dir; nullopt when dir holds none (absent, or without manifest.json and
// shard.safetensors). IoError naming the file for a damaged one (unreadable, malformed, a name
// the manifest lists but the tensors lack, or tensors it does not list); `who` prefixes messages.
std::optional<ShardCheckpoint> read_shard_checkpoint(const std::filesystem::path& dir,
                                                     const std::string& who);

}  // namespace osprey::distribute::ps
