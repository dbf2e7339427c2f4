// Shard checkpoints (shard_checkpoint.h).
#include "osprey/distribute/ps/shard_checkpoint.h"

#include <nlohmann/json.hpp>
#include <set>

#include "osprey/core/error.h"
#include "osprey/io/atomic_directory.h"
#include "osprey/io/json.h"
#include "osprey/io/safetensors.h"

namespace osprey::distribute::ps {

namespace fs = std::filesystem;

namespace {

constexpr char kFormat[] = "osprey.ps_shard";
constexpr int kFormatVersion = 1;
constexpr std::string_view kVariablePrefix = "variables/";
constexpr std::string_view kStatePrefix = "state/";
constexpr std::string_view kOptimizerPrefix = "optimizer/";

nlohmann::json config_to_json(const ShardConfig& c) {
  return {{"optimizer", nlohmann::json::parse(c.optimizer)},
          {"mode", c.mode},
          {"replicas_to_aggregate", c.replicas_to_aggregate},
          {"total_replicas", c.total_replicas},
          {"staleness",
           {{"max_staleness", c.staleness.max_staleness},
            {"down_weight_beyond", c.staleness.down_weight_beyond},
            {"staleness_aware_lr", c.staleness.staleness_aware_lr}}}};
}

ShardConfig config_from_json(const io::JsonView& v) {
  ShardConfig c;
  const io::JsonView opt = v["optimizer"];
  if (!opt.is_object()) opt.fail("must be the optimizer's serialized config (an object)");
  c.optimizer = opt.json().dump();
  c.mode = v.get<std::string>("mode");
  c.replicas_to_aggregate = v.get<int>("replicas_to_aggregate");
  c.total_replicas = v.get<int>("total_replicas");
  const io::JsonView s = v["staleness"];
  c.staleness.max_staleness = s.get<int64_t>("max_staleness");
  c.staleness.down_weight_beyond = s.get<bool>("down_weight_beyond");
  c.staleness.staleness_aware_lr = s.get<bool>("staleness_aware_lr");
  return c;
}

nlohmann::json names_of(const NamedTensors& tensors) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& [name, t] : tensors) names.push_back(name);
  return names;
}

[[noreturn]] void throw_damaged(const std::string& who, const fs::path& file,
                                const std::string& why) {
  OSPREY_THROW(IoError, "{}: damaged checkpoint {}: {}", who, file.string(), why);
}

}  // namespace

void write_shard_checkpoint(const fs::path& dir, const ShardCheckpoint& c) {
  NamedTensors tensors;
  tensors.reserve(c.variables.size() + c.state.size() + c.optimizer_state.size());
  for (const auto& [name, t] : c.variables)
    tensors.emplace_back(fmt::format("{}{}", kVariablePrefix, name), t);
  for (const auto& [name, t] : c.state)
    tensors.emplace_back(fmt::format("{}{}", kStatePrefix, name), t);
  for (const auto& [name, t] : c.optimizer_state) {
    OSPREY_ASSERT(name.starts_with(kOptimizerPrefix), "optimizer state entry '{}'", name);
    tensors.emplace_back(name, t);
  }
  const nlohmann::json manifest = {{"format", kFormat},
                                   {"format_version", kFormatVersion},
                                   {"name", c.name},
                                   {"version", c.version},
                                   {"last_step", c.last_step},
                                   {"config", config_to_json(c.config)},
                                   {"variables", names_of(c.variables)},
                                   {"state", names_of(c.state)}};
  io::atomic_write_directory(dir, [&](const fs::path& staging) {
    io::save_safetensors(staging / kShardTensorsFile, tensors);
    io::write_json_file(staging / kShardManifestFile, manifest);
  });
}

std::optional<ShardCheckpoint> read_shard_checkpoint(const fs::path& dir, const std::string& who) {
  const fs::path manifest_path = dir / kShardManifestFile;
  const fs::path tensors_path = dir / kShardTensorsFile;
  std::error_code ec;
  const bool has_manifest = fs::exists(manifest_path, ec);
  const bool has_tensors = fs::exists(tensors_path, ec);
  if (!has_manifest && !has_tensors) return std::nullopt;
  OSPREY_CHECK_T(IoError, has_manifest && has_tensors,
                 "{}: damaged checkpoint in {}: {} is missing", who, dir.string(),
                 (has_manifest ? tensors_path : manifest_path).string());

  ShardCheckpoint c;
  std::vector<std::string> variable_names, state_names;
  {
    // JsonView's errors name the file and the field, and are IoErrors (is_file).
    const io::JsonDocument doc = io::JsonDocument::read(manifest_path);
    const io::JsonView m = doc.root();
    if (m.get<std::string>("format") != kFormat) {
      m["format"].fail(
          fmt::format("must be \"{}\": this is not a parameter-server checkpoint", kFormat));
    }
    if (m.get<int>("format_version") != kFormatVersion) {
      m["format_version"].fail(fmt::format("must be {}", kFormatVersion));
    }
    c.name = m.get_or<std::string>("name", "");
    c.version = m.get<int64_t>("version");
    c.last_step = m.get<int64_t>("last_step");
    c.config = config_from_json(m["config"]);
    variable_names = m.get<std::vector<std::string>>("variables");
    state_names = m.get<std::vector<std::string>>("state");
  }

  // The loader checks the header and the data's CRC32C; what is left is agreement with the
  // manifest.
  const io::SafetensorsFile f = io::load_safetensors(tensors_path);
  const auto damaged = [&](const std::string& why) { throw_damaged(who, tensors_path, why); };
  std::set<std::string> listed;  // no name twice
  for (const std::string& name : variable_names) {
    const std::string key = fmt::format("{}{}", kVariablePrefix, name);
    const Tensor* t = f.find(key);
    if (t == nullptr)
      throw_damaged(who, tensors_path,
                    fmt::format("variable '{}' (tensor '{}') is missing", name, key));
    if (t->dtype() != DType::float32) {
      damaged(fmt::format("variable '{}' must be float32, found {}", name, t->describe()));
    }
    if (!listed.insert(key).second) damaged(fmt::format("variable '{}' is listed twice", name));
    c.variables.emplace_back(name, *t);
  }
  for (const std::string& name : state_names) {
    const std::string key = fmt::format("{}{}", kStatePrefix, name);
    const Tensor* t = f.find(key);
    if (t == nullptr)
      throw_damaged(who, tensors_path,
                    fmt::format("state '{}' (tensor '{}') is missing", name, key));
    if (!listed.insert(key).second) damaged(fmt::format("state '{}' is listed twice", name));
    c.state.emplace_back(name, *t);
  }
  for (const auto& [name, t] : f.tensors) {
    if (std::string_view(name).starts_with(kOptimizerPrefix))
      c.optimizer_state.emplace_back(name, t);
  }
  const size_t named = c.variables.size() + c.state.size() + c.optimizer_state.size();
  if (named != f.tensors.size()) {
    damaged(fmt::format("it holds {} tensors, but the manifest accounts for {}", f.tensors.size(),
                        named));
  }
  return c;
}

}  // namespace osprey::distribute::ps
