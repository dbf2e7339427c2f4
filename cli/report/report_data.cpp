#include "cli/report/report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "cli/usage_error.h"
#include "osprey/core/error.h"
#include "osprey/io/json.h"

namespace osprey::cli::report {

namespace fs = std::filesystem;

const char* const kLookedFor =
    "run.json (osprey run --output), oracle.json in it or in a folder just below (osprey tune "
    "--directory), ensemble.json (osprey ensemble --output), history.json or a CSV log with an "
    "epoch column (osprey train --csv-log) in it or up to two folders below";

namespace {

// DIR's sub-folders (links to folders included), sorted so the report is the same every time.
std::vector<fs::path> subfolders(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// history.json and CSV logs in `dir`, titled by where they are relative to the report's folder.
void read_logs(const fs::path& root, const fs::path& dir, std::vector<Curves>& out) {
  for (const fs::path& file : files_in(dir)) {
    std::optional<Curves> c;
    if (file.filename() == "history.json") {
      c = read_history(file);
    } else if (file.extension() == ".csv") {
      c = read_csv_log(file);
    }
    if (!c || c->empty()) continue;
    const fs::path rel = fs::relative(file, root);
    c->title = file.filename() == "history.json"
                   ? (rel.has_parent_path() ? rel.parent_path().string() : std::string("training"))
                   : rel.string();
    out.push_back(std::move(*c));
  }
}

}  // namespace

RunInfo read_run(const fs::path& file) {
  const io::JsonDocument doc = io::JsonDocument::read(file);
  const io::JsonView root = doc.root();
  if (!root.is_object() || !root.contains("options"))
    root.fail("is not osprey run's state (an object with \"options\" and \"stages\")");
  RunInfo run{.file = file, .elapsed_seconds = root.get_or<double>("elapsed_seconds", 0)};
  for (const auto& [key, v] : root["options"].items())
    run.options.emplace_back(key, v.json().is_string() ? v.as<std::string>() : v.json().dump());
  const auto stages = root.find("stages");
  if (!stages) return run;
  std::vector<std::pair<double, StageInfo>> started;  // stages sorted by when they started
  for (const auto& [name, stage] : stages->items()) {
    const auto row = stage.find("row");
    if (!row) continue;  // under way
    const auto notes = stage.find("notes");
    StageInfo s{.stage = row->get<std::string>("stage"),
                .what = row->get<std::string>("what"),
                .test_accuracy = row->get<double>("test_accuracy"),
                .samples_per_second = row->get<double>("samples_per_second"),
                .seconds = row->get<double>("seconds"),
                .size_bytes = row->get<int64_t>("size_bytes")};
    double at = std::numeric_limits<double>::infinity();
    if (notes && notes->is_object()) {
      s.precision = notes->get_or<std::string>("precision", "");
      at = notes->get_or<double>("started_at", at);
      if (const auto members = notes->find("members")) {
        for (const io::JsonView& m : members->elements())
          run.member_test_accuracy[m.get<std::string>("name")] = m.get<double>("test_accuracy");
      }
    }
    started.emplace_back(at, std::move(s));
  }
  std::stable_sort(started.begin(), started.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [at, s] : started) run.stages.push_back(std::move(s));
  return run;
}

EnsembleInfo read_ensemble(const fs::path& dir) {
  const io::JsonDocument doc = io::JsonDocument::read(dir / "ensemble.json");
  const io::JsonView root = doc.root();
  if (!root.is_object()) root.fail("must be a JSON object (an ensemble's manifest)");
  EnsembleInfo e{.dir = dir, .combiner = root.get_or<std::string>("combiner", "")};
  const io::JsonView members = root["members"];
  const auto weights = root.get<std::vector<double>>("weights");
  if (weights.size() != members.size()) {
    root["weights"].fail(fmt::format("must hold one weight per member ({} members), holds {}",
                                     members.size(), weights.size()));
  }
  for (size_t i = 0; i < members.size(); ++i) {
    e.members.push_back({.name = members[i].get<std::string>("name"),
                         .kind = members[i].get_or<std::string>("kind", ""),
                         .weight = weights[i],
                         .test_accuracy = kNaN});
  }
  return e;
}

ReportData read_report_data(const fs::path& given) {
  fs::path dir = given.lexically_normal();
  if (dir.filename().empty() && dir.has_parent_path()) dir = dir.parent_path();  // "runs/a/"
  OSPREY_CHECK_T(cli::UsageError, fs::exists(dir),
                 "osprey report: {} does not exist. Expected a folder written by osprey run, "
                 "osprey tune or osprey train, holding {}",
                 dir.string(), kLookedFor);
  OSPREY_CHECK_T(cli::UsageError, fs::is_directory(dir),
                 "osprey report: {} is not a folder. Expected a folder written by osprey run, "
                 "osprey tune or osprey train, holding {}",
                 dir.string(), kLookedFor);
  ReportData data{.dir = dir};
  if (fs::exists(dir / "run.json")) data.run = read_run(dir / "run.json");

  std::vector<fs::path> below = subfolders(dir);
  std::vector<fs::path> here_and_below{dir};
  here_and_below.insert(here_and_below.end(), below.begin(), below.end());
  for (const fs::path& d : here_and_below) {
    if (fs::is_regular_file(d / "oracle.json")) data.studies.push_back(read_study(d));
    if (fs::is_regular_file(d / "ensemble.json")) data.ensembles.push_back(read_ensemble(d));
  }
  // Training logs two levels deep at most: a study's trial folders hold no history.json, and a
  // deeper walk would descend into every checkpoint.
  read_logs(dir, dir, data.curves);
  for (const fs::path& d : below) {
    read_logs(dir, d, data.curves);
    for (const fs::path& dd : subfolders(d)) read_logs(dir, dd, data.curves);
  }

  // osprey run's notes give its ensemble's members their test accuracies.
  for (EnsembleInfo& e : data.ensembles) {
    if (!data.run || e.dir != dir / "ensemble") continue;
    for (EnsembleMember& m : e.members) {
      const auto it = data.run->member_test_accuracy.find(m.name);
      if (it != data.run->member_test_accuracy.end()) m.test_accuracy = it->second;
    }
  }
  OSPREY_CHECK_T(
      cli::UsageError,
      data.run || !data.studies.empty() || !data.ensembles.empty() || !data.curves.empty(),
      "osprey report: {} holds nothing to report. Looked for {}", dir.string(), kLookedFor);
  return data;
}

}  // namespace osprey::cli::report
