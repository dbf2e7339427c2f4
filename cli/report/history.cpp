#include "cli/report/history.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "osprey/core/error.h"
#include "osprey/io/json.h"

namespace osprey::cli::report {

namespace {
constexpr const char* kFormat = train::kHistoryFormat;
constexpr int kVersion = train::kHistoryVersion;
}  // namespace

void Curves::add_epoch(double epoch, const std::vector<std::pair<std::string, double>>& values) {
  epochs.push_back(epoch);
  for (const auto& [name, v] : values) {
    auto& column = metrics[name];
    column.resize(epochs.size() - 1, kNaN);  // a metric first seen now
    column.push_back(v);
  }
  for (auto& [name, column] : metrics) column.resize(epochs.size(), kNaN);
}

double metric_from_json(const io::JsonView& view) {
  const nlohmann::json& v = view.json();
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "nan" || s == "-nan") return kNaN;
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  if (v.is_null()) return kNaN;  // how nlohmann itself writes a NaN
  view.fail(fmt::format("must be a number, \"nan\", \"inf\" or \"-inf\", got {}", v.dump()));
}

Curves curves_from_records(const io::JsonView& root) {
  if (!root.is_array()) root.fail("must be an array of {\"epoch\", \"metrics\"} records");
  Curves c;
  c.source = root.source();
  for (const io::JsonView& r : root.elements()) {
    std::vector<std::pair<std::string, double>> values;
    const io::JsonView metrics = r["metrics"];
    if (!metrics.is_object()) metrics.fail("must be an object of metric values");
    for (const auto& [name, v] : metrics.items()) values.emplace_back(name, metric_from_json(v));
    c.add_epoch(r.get<int>("epoch") + 1, values);
  }
  return c;
}

Curves read_history(const std::filesystem::path& file) {
  const io::JsonDocument doc = io::JsonDocument::read(file);
  const io::JsonView root = doc.root();
  if (!root.is_object() || root.get_or<std::string>("format", "") != kFormat) {
    root.fail(fmt::format("is not an osprey history (an object with \"format\": \"{}\")", kFormat));
  }
  const int version = root.get<int>("version");
  if (version != kVersion)
    root["version"].fail(fmt::format("is {}; this osprey reads version {}", version, kVersion));
  return curves_from_records(root["epochs"]);
}

std::optional<Curves> read_csv_log(const std::filesystem::path& file) {
  std::ifstream in(file);
  OSPREY_CHECK_T(IoError, in.good(), "{}: cannot be read", file.string());
  const auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    return cells;
  };
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::vector<std::string> header = split(line);
  if (header.empty() || header[0] != "epoch") return std::nullopt;
  Curves c;
  c.source = file.string();
  for (int row = 2; std::getline(in, line); ++row) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::vector<std::string> cells = split(line);
    OSPREY_CHECK_T(IoError, cells.size() <= header.size(),
                   "{}:{}: {} cells, but the header names {} columns", file.string(), row,
                   cells.size(), header.size());
    const auto number = [](const std::string& s) {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      return s.empty() || end != s.c_str() + s.size() ? kNaN : v;
    };
    std::vector<std::pair<std::string, double>> values;
    for (size_t k = 1; k < cells.size(); ++k) values.emplace_back(header[k], number(cells[k]));
    // CSVLogger counts epochs from 0, as Keras; a resumed log (append) keeps counting.
    c.add_epoch(number(cells[0]) + 1, values);
  }
  return c;
}

}  // namespace osprey::cli::report
