#include "osprey/ensemble/ensemble.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "osprey/core/error.h"
#include "osprey/io/atomic_directory.h"
#include "osprey/io/json.h"
#include "osprey/quant/quantize.h"

namespace osprey::ensemble {

namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "ensemble.json";
constexpr const char* kMembersFolder = "members";

// Member names become folder names: keep them to characters that are safe everywhere.
bool is_folder_name(const std::string& name) {
  if (name.empty() || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::vector<std::string> names_of(const std::vector<std::shared_ptr<Member>>& members) {
  std::vector<std::string> names;
  names.reserve(members.size());
  for (const auto& m : members) names.push_back(m->name());
  return names;
}

}  // namespace

Ensemble& Ensemble::add(Model model, std::string name, ModelMemberOptions options) {
  return add(std::make_shared<ModelMember>(std::move(model), std::move(name), options));
}

Ensemble& Ensemble::add(std::shared_ptr<Member> member) {
  OSPREY_CHECK(member != nullptr, "Ensemble::add: the member is null");
  const std::string& name = member->name();
  OSPREY_CHECK(is_folder_name(name),
               "Ensemble::add: a member's name must be a folder name of letters, digits, '.', "
               "'_' and '-', not starting with '.'. Received: '{}'",
               name);
  for (const auto& m : members_) {
    OSPREY_CHECK(m->name() != name,
                 "Ensemble::add: member names must be unique. Received: '{}' again (members: "
                 "{})",
                 name, fmt::join(names_of(members_), ", "));
  }
  members_.push_back(std::move(member));
  weights_ = average_weights(members_.size());
  combiner_ = "average";
  return *this;
}

std::shared_ptr<Member> Ensemble::member(const std::string& name) const {
  for (const auto& m : members_) {
    if (m->name() == name) return m;
  }
  OSPREY_THROW(ValueError, "Ensemble::member: no member is named '{}'. Members: [{}]", name,
               fmt::join(names_of(members_), ", "));
}

void Ensemble::check_not_empty(const char* what) const {
  OSPREY_CHECK(!members_.empty(), "{}: the ensemble has no members; add() some first", what);
}

void Ensemble::set_weights(const std::vector<double>& weights, std::string combiner) {
  check_not_empty("Ensemble::set_weights");
  weights_ = normalize_weights(weights, members_.size(), "Ensemble::set_weights");
  combiner_ = std::move(combiner);
}

const std::vector<double>& Ensemble::fit_weights(const Tensor& x_val, const Tensor& y_val,
                                                 const std::string& combiner,
                                                 const CombinerOptions& options) {
  check_not_empty("Ensemble::fit_weights");
  return fit_weights_from_predictions(predict_members(x_val), y_val, combiner, options);
}

const std::vector<double>& Ensemble::fit_weights_from_predictions(
    const std::vector<Tensor>& member_val_probs, const Tensor& y_val, const std::string& combiner,
    const CombinerOptions& options) {
  check_not_empty("Ensemble::fit_weights_from_predictions");
  OSPREY_CHECK(member_val_probs.size() == members_.size(),
               "Ensemble::fit_weights_from_predictions: needs one prediction tensor per member "
               "({}: {}). Received: {} tensors",
               members_.size(), fmt::join(names_of(members_), ", "), member_val_probs.size());
  // The combiners return weights >= 0 that sum to 1: kept as they are (bits included).
  weights_ = ensemble::fit_weights(combiner, member_val_probs, y_val, options);
  combiner_ = combiner;
  return weights_;
}

std::vector<Tensor> Ensemble::predict_members(const Tensor& x) const {
  check_not_empty("Ensemble::predict");
  std::vector<Tensor> probs;
  probs.reserve(members_.size());
  for (const auto& m : members_) {
    Tensor p = m->predict(x);
    OSPREY_CHECK(p.ndim() == 2,
                 "Ensemble: member '{}' must predict [N, C] class probabilities. Received: {}",
                 m->name(), p.describe());
    OSPREY_CHECK(probs.empty() || p.shape() == probs[0].shape(),
                 "Ensemble: every member must predict the same [N, C] shape. Received: member "
                 "'{}' {}, member '{}' {}",
                 m->name(), p.shape().to_string(), members_[0]->name(),
                 probs.empty() ? "" : probs[0].shape().to_string());
    probs.push_back(std::move(p));
  }
  return probs;
}

Tensor Ensemble::predict(const Tensor& x) const {
  return weighted_average(predict_members(x), weights_);
}

train::Logs Ensemble::evaluate(const Tensor& x, const Tensor& y) const {
  const Tensor p = predict(x);
  train::Logs logs;
  logs.set("loss", log_loss(p, y));
  logs.set("accuracy", accuracy(p, y));
  return logs;
}

std::vector<train::Logs> Ensemble::evaluate_members(const Tensor& x, const Tensor& y) const {
  std::vector<train::Logs> out;
  for (const Tensor& p : predict_members(x)) {
    train::Logs logs;
    logs.set("loss", log_loss(p, y));
    logs.set("accuracy", accuracy(p, y));
    out.push_back(std::move(logs));
  }
  return out;
}

void Ensemble::quantize(const std::string& mode) {
  check_not_empty("Ensemble::quantize");
  const auto& modes = quant::quantization_modes();
  OSPREY_CHECK(std::find(modes.begin(), modes.end(), mode) != modes.end(),
               "Ensemble::quantize: unknown mode '{}'. Expected one of: {}", mode,
               fmt::join(modes, ", "));
  for (const auto& m : members_) m->quantize(mode);
}

int64_t Ensemble::size_bytes() const {
  int64_t bytes = 0;
  for (const auto& m : members_) bytes += m->size_bytes();
  return bytes;
}

void Ensemble::save(const fs::path& dir) const {
  check_not_empty("Ensemble::save");
  nlohmann::json manifest = {{"format", kFormat},
                             {"version", kVersion},
                             {"combiner", combiner_},
                             {"weights", weights_},
                             {"members", nlohmann::json::array()}};
  for (const auto& m : members_) {
    manifest["members"].push_back({{"name", m->name()},
                                   {"kind", m->kind()},
                                   {"path", fmt::format("{}/{}", kMembersFolder, m->name())},
                                   {"config", m->config()}});
  }
  if (dir.has_parent_path()) fs::create_directories(dir.parent_path());
  io::atomic_write_directory(dir, [&](const fs::path& staging) {
    fs::create_directories(staging / kMembersFolder);
    for (const auto& m : members_) m->save(staging / kMembersFolder / m->name());
    io::write_json_file(staging / kManifest, manifest);
  });
}

Ensemble Ensemble::load(const fs::path& dir) {
  const fs::path file = dir / kManifest;
  OSPREY_CHECK_T(IoError, fs::is_regular_file(file),
                 "Ensemble::load: {} does not exist, so {} is not a saved ensemble (Ensemble::save "
                 "writes ensemble.json into its folder)",
                 file.string(), dir.string());
  const io::JsonDocument doc = io::JsonDocument::read(file);
  const io::JsonView root = doc.root();
  if (!root.is_object()) root.fail("must be a JSON object");
  const auto format = root.get<std::string>("format");
  if (format != kFormat)
    root["format"].fail(fmt::format("must be \"{}\", got \"{}\"", kFormat, format));
  const int version = root.get<int>("version");
  if (version != kVersion) {
    root["version"].fail(
        fmt::format("is {}; this osprey reads ensemble version {}", version, kVersion));
  }
  const auto combiner = root.get<std::string>("combiner");
  const io::JsonView members = root["members"];
  if (!members.is_array()) members.fail("must be an array");
  const auto weights = root.get<std::vector<double>>("weights");
  if (weights.size() != members.size()) {
    root["weights"].fail(
        fmt::format("must hold one weight per member ({} members). Received: {} weights",
                    members.size(), weights.size()));
  }
  if (members.size() == 0) members.fail("is empty: an ensemble has at least one member");
  double sum = 0.0;
  for (size_t m = 0; m < weights.size(); ++m) {
    if (!std::isfinite(weights[m]) || weights[m] < 0.0)
      root["weights"][m].fail(fmt::format("must be finite and >= 0, got {}", weights[m]));
    sum += weights[m];
  }
  if (sum <= 0.0) root["weights"].fail("must not all be 0");

  Ensemble ensemble;
  for (const io::JsonView& entry : members.elements()) {
    const auto name = entry.get<std::string>("name");
    if (!is_folder_name(name)) {
      entry["name"].fail(fmt::format(
          "must be a folder name of letters, digits, '.', '_' and '-', got \"{}\"", name));
    }
    for (const auto& m : ensemble.members_) {
      if (m->name() == name) entry["name"].fail(fmt::format("repeats the name \"{}\"", name));
    }
    const auto kind = entry.get<std::string>("kind");
    const auto& kinds = member_kinds();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      entry["kind"].fail(fmt::format("is \"{}\", not a member kind this osprey knows ({})", kind,
                                     fmt::join(kinds, ", ")));
    }
    const fs::path relative(entry.get<std::string>("path"));
    const bool inside =
        relative.is_relative() && std::none_of(relative.begin(), relative.end(),
                                               [](const fs::path& part) { return part == ".."; });
    if (!inside) {
      entry["path"].fail(
          fmt::format("must be a path inside the ensemble folder, got \"{}\"", relative.string()));
    }
    const fs::path folder = dir / relative;
    if (!fs::is_directory(folder)) {
      entry["path"].fail(
          fmt::format("names the member folder {}, which does not exist", folder.string()));
    }
    const io::JsonView config_view = entry["config"];
    if (!config_view.is_object()) config_view.fail("must be a JSON object");
    nlohmann::json config = config_view.json();
    config["kind"] = kind;
    config["name"] = name;
    ensemble.add(load_member(config, folder));
  }
  // Weights as saved, bit for bit; normalized only when a hand-edited file does not sum to 1.
  ensemble.weights_ = std::abs(sum - 1.0) <= 1e-12
                          ? weights
                          : normalize_weights(weights, weights.size(), "Ensemble::load");
  ensemble.combiner_ = combiner;
  return ensemble;
}

}  // namespace osprey::ensemble
