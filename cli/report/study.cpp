#include "cli/report/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cli/report/svg.h"
#include "osprey/core/error.h"
#include "osprey/io/json.h"

namespace osprey::cli::report {

namespace fs = std::filesystem;

namespace {

// A hyperparameter value as a cell: booleans become categories "true" / "false".
Cell cell_from_json(const io::JsonView& v) {
  const nlohmann::json& j = v.json();
  if (j.is_null()) return std::monostate{};
  if (j.is_boolean()) return std::string(j.get<bool>() ? "true" : "false");
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  v.fail(fmt::format("must be a bool, a number or a string, got {}", io::json_type_name(j)));
}

std::string category_text(const io::JsonView& v) {
  const Cell c = cell_from_json(v);
  if (const auto* d = std::get_if<double>(&c)) return format_number(*d);
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  return "";
}

std::vector<SpaceEntry> read_space(const io::JsonView& hps) {
  std::vector<SpaceEntry> space;
  for (const io::JsonView& h : hps["space"].elements()) {
    const io::JsonView config = h["config"];
    SpaceEntry e{.name = config.get<std::string>("name"), .kind = h.get<std::string>("class_name")};
    e.log = config.get_or<std::string>("sampling", "") == "log";
    if (e.kind == "Choice") {
      for (const io::JsonView& v : config["values"].elements())
        e.categories.push_back(category_text(v));
    } else if (e.kind == "Boolean") {
      e.categories = {"false", "true"};
    }
    space.push_back(std::move(e));
  }
  return space;
}

TrialInfo read_trial(const io::JsonView& t) {
  TrialInfo info{.id = t.get<std::string>("trial_id"), .status = t.get<std::string>("status")};
  if (const auto score = t.find("score"); score && !score->is_null())
    info.score = score->as<double>();
  info.best_step = t.get_or<int>("best_step", -1);
  for (const auto& [name, v] : t["hyperparameters"]["values"].items())
    info.values.emplace_back(name, cell_from_json(v));
  if (const auto metrics = t.find("metrics")) {
    for (const auto& [name, v] : metrics->items())
      info.final.emplace_back(name, metric_from_json(v));
  }
  const io::JsonView executions = t["executions"];
  info.executions = static_cast<int>(executions.size());
  if (info.executions > 0) info.curves = curves_from_records(executions[0]);
  info.curves.title = "trial " + info.id;
  info.message = t.get_or<std::string>("message", "");
  return info;
}

}  // namespace

const Cell* TrialInfo::value(const std::string& name) const {
  for (const auto& [k, v] : values)
    if (k == name) return &v;
  return nullptr;
}

const TrialInfo* Study::best() const {
  const TrialInfo* best = nullptr;
  for (const TrialInfo& t : trials) {
    if (!t.score || !std::isfinite(*t.score)) continue;
    if (best == nullptr || (maximize ? *t.score > *best->score : *t.score < *best->score))
      best = &t;
  }
  return best;
}

Curves Study::curves_of(const TrialInfo& trial) const {
  std::vector<const TrialInfo*> chain{&trial};  // the trial, its parent, its grandparent, ...
  while (chain.size() <= trials.size()) {
    const Cell* parent = chain.back()->value("tuner/trial_id");
    const auto* id = parent ? std::get_if<std::string>(parent) : nullptr;
    const auto it = id ? std::find_if(trials.begin(), trials.end(),
                                      [&](const TrialInfo& t) { return t.id == *id; })
                       : trials.end();
    if (it == trials.end()) break;
    chain.push_back(&*it);
  }
  Curves out;
  out.title = "trial " + trial.id;
  out.source = trial.curves.source;
  // Oldest first; each trial's epochs up to where its child took over.
  for (size_t i = chain.size(); i-- > 0;) {
    const Curves& c = chain[i]->curves;
    const double until = i == 0 || chain[i - 1]->curves.empty()
                             ? std::numeric_limits<double>::infinity()
                             : chain[i - 1]->curves.epochs.front();
    for (size_t e = 0; e < c.epochs.size() && c.epochs[e] < until; ++e) {
      if (!out.empty() && c.epochs[e] <= out.epochs.back()) continue;
      std::vector<std::pair<std::string, double>> values;
      for (const auto& [name, column] : c.metrics) values.emplace_back(name, column[e]);
      out.add_epoch(c.epochs[e], values);
    }
  }
  if (chain.size() > 1) out.title += fmt::format(" (continuing trial {})", chain[1]->id);
  return out;
}

Study read_study(const fs::path& dir) {
  const io::JsonDocument oracle = io::JsonDocument::read(dir / "oracle.json");
  const io::JsonView root = oracle.root();
  if (!root.is_object()) root.fail("must be a JSON object (an oracle's state)");
  Study s{.dir = dir, .tuner = root.get<std::string>("class_name")};
  const io::JsonView objective = root["objective"];
  s.objective = objective.get<std::string>("name");
  const auto direction = objective.get<std::string>("direction");
  if (direction != "min" && direction != "max")
    objective["direction"].fail(fmt::format("must be \"min\" or \"max\", got \"{}\"", direction));
  s.maximize = direction == "max";
  s.space = read_space(root["hyperparameters"]);
  if (const auto inline_trials = root.find("trials")) {
    for (const io::JsonView& t : inline_trials->elements()) s.trials.push_back(read_trial(t));
    return s;
  }
  for (const std::string& id : root.get<std::vector<std::string>>("trial_ids")) {
    const fs::path file = dir / ("trial_" + id) / "trial.json";
    OSPREY_CHECK_T(IoError, fs::exists(file), "{}: lists trial {} but {} does not exist",
                   (dir / "oracle.json").string(), id, file.string());
    const io::JsonDocument doc = io::JsonDocument::read(file);
    s.trials.push_back(read_trial(doc.root()));
  }
  return s;
}

}  // namespace osprey::cli::report
