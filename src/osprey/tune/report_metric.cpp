#include "osprey/tune/report_metric.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "osprey/core/error.h"

namespace osprey::tune {

namespace {

bool is_report_key(std::string_view name) {
  return std::any_of(std::begin(kReportKeys), std::end(kReportKeys),
                     [&](const char* key) { return name == key; });
}

void check_name(const std::string& name) {
  OSPREY_CHECK(!name.empty(), "report_metric: the metric name is empty");
  OSPREY_CHECK(name.find_first_of(" \t\r\n\v\f=") == std::string::npos,
               "report_metric: a metric name may not hold whitespace or '='. Received: '{}'", name);
  OSPREY_CHECK(!is_report_key(name),
               "report_metric: '{}' is a key osprey reads itself, not a metric; name the metric "
               "otherwise",
               name);
}

// %.17g round-trips every double; NaN and infinities have no JSON number, so the file gets them
// as the strings osprey (and hypertune) read back as numbers.
std::string json_number(double v) {
  if (std::isfinite(v)) return fmt::format("{:.17g}", v);
  return fmt::format("\"{}\"", std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

std::string_view trim(std::string_view s) {
  const auto sp = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && sp(s.front())) s.remove_prefix(1);
  while (!s.empty() && sp(s.back())) s.remove_suffix(1);
  return s;
}

// A number the whole of `text` spells (strtod: nan and inf included).
std::optional<double> parse_number(std::string_view text) {
  const std::string s(text);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// A non-negative integer epoch from `v` (a JSON number or a numeric string).
std::optional<int> parse_epoch(const nlohmann::json& v) {
  std::optional<double> d;
  if (v.is_number()) d = v.get<double>();
  if (v.is_string()) d = parse_number(v.get<std::string>());
  if (!d || !std::isfinite(*d) || *d < 0 || *d != std::floor(*d) || *d > 1e9) return std::nullopt;
  return static_cast<int>(*d);
}

// Python's json.dumps writes NaN, Infinity and -Infinity, which are not JSON: as strings they
// parse as the numeric strings hypertune writes.
std::string python_json_to_json(std::string_view line) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < line.size()) out += line[++i];
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (std::string_view word : {"-Infinity", "Infinity", "NaN"}) {
      if (line.substr(i).starts_with(word)) {
        out += fmt::format("\"{}\"", word == "NaN" ? "nan" : word == "Infinity" ? "inf" : "-inf");
        i += word.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

}  // namespace

void report_metrics(const MetricValues& metrics, std::optional<int> epoch) {
  OSPREY_CHECK(!metrics.empty(), "report_metrics: no metrics given");
  for (const auto& [name, value] : metrics) check_name(name);
  OSPREY_CHECK(!epoch || *epoch >= 0, "report_metric: epoch must be >= 0. Received: {}", *epoch);
  const char* file = std::getenv("OSPREY_METRIC_FILE");
  if (file == nullptr || *file == '\0') {
    std::string line = "osprey-metric";
    for (const auto& [name, value] : metrics) line += fmt::format(" {}={:.17g}", name, value);
    if (epoch) line += fmt::format(" epoch={}", reported_epoch(*epoch));
    fmt::print("{}\n", line);
    std::fflush(stdout);
    return;
  }
  std::string line = "{";
  for (const auto& [name, value] : metrics)
    line += fmt::format("{}: {}, ", nlohmann::json(name).dump(), json_number(value));
  line = epoch ? fmt::format("{}\"epoch\": {}}}\n", line, reported_epoch(*epoch))
               : line.substr(0, line.size() - 2) + "}\n";
  // One write of the whole line to an O_APPEND file: a reader never sees half of it, and
  // reports from several processes do not interleave.
  const int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  OSPREY_CHECK_T(IoError, fd >= 0, "report_metric: cannot open OSPREY_METRIC_FILE={}: {}", file,
                 std::strerror(errno));
  const ssize_t n = write(fd, line.data(), line.size());
  const int write_errno = errno;
  close(fd);
  OSPREY_CHECK_T(IoError, n == static_cast<ssize_t>(line.size()),
                 "report_metric: cannot append to OSPREY_METRIC_FILE={}: {}", file,
                 n < 0 ? std::strerror(write_errno) : "short write");
}

void report_metric(const std::string& name, double value, std::optional<int> epoch) {
  report_metrics({{name, value}}, epoch);
}

std::optional<MetricReport> parse_metric_line(std::string_view line) {
  constexpr std::string_view kWord = "osprey-metric";
  line = trim(line);
  if (!line.starts_with(kWord)) return std::nullopt;
  std::string_view rest = line.substr(kWord.size());
  if (!rest.empty() && rest[0] != ' ' && rest[0] != '\t') return std::nullopt;
  MetricReport r;
  std::istringstream tokens{std::string(rest)};
  for (std::string tok; tokens >> tok;) {
    const size_t eq = tok.find('=');
    OSPREY_CHECK(eq != std::string::npos && eq > 0,
                 "metric report: expected NAME=VALUE, received '{}' in the line '{}'", tok, line);
    const std::string name = tok.substr(0, eq);
    const std::string text = tok.substr(eq + 1);
    if (name == "epoch") {
      OSPREY_CHECK(!r.epoch, "metric report: epoch given twice in the line '{}'", line);
      const std::optional<int> e = parse_epoch(nlohmann::json(text));
      OSPREY_CHECK(e.has_value() && *e >= 1,
                   "metric report: epoch must be an integer >= 1 (epochs count from 1: the first "
                   "is epoch=1). Received: '{}' in the line '{}'",
                   text, line);
      r.epoch = stored_epoch(*e);
      continue;
    }
    const std::optional<double> v = parse_number(text);
    OSPREY_CHECK(v.has_value(),
                 "metric report: the value of {} must be a number. Received: '{}' in the line '{}'",
                 name, text, line);
    OSPREY_CHECK(std::none_of(r.metrics.begin(), r.metrics.end(),
                              [&](const auto& m) { return m.first == name; }),
                 "metric report: {} given twice in the line '{}'", name, line);
    r.metrics.emplace_back(name, *v);
  }
  OSPREY_CHECK(!r.metrics.empty(),
               "metric report: expected 'osprey-metric NAME=VALUE [epoch=E]'. Received: '{}'",
               line);
  return r;
}

MetricReport parse_metric_json(std::string_view line) {
  line = trim(line);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(python_json_to_json(line));
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "metric file: the line '{}' is not JSON: {}", line, e.what());
  }
  OSPREY_CHECK(j.is_object(), "metric file: expected a JSON object per line. Received: '{}'", line);
  MetricReport r;
  // osprey's "epoch" counts from 1, as the stdout line's; hypertune's "global_step" is read as
  // it is written, the 0-based epoch a Keras callback passes it.
  if (j.contains("epoch")) {
    const std::optional<int> e = parse_epoch(j.at("epoch"));
    OSPREY_CHECK(e.has_value() && *e >= 1,
                 "metric file: \"epoch\" must be an integer >= 1 (epochs count from 1: the first "
                 "is \"epoch\": 1). Received: {} in the line '{}'",
                 j.at("epoch").dump(), line);
    r.epoch = stored_epoch(*e);
  } else if (j.contains("global_step")) {
    r.epoch = parse_epoch(j.at("global_step"));
    OSPREY_CHECK(r.epoch.has_value(),
                 "metric file: \"global_step\" must be an integer >= 0. Received: {} in the "
                 "line '{}'",
                 j.at("global_step").dump(), line);
  }
  for (const auto& [k, v] : j.items()) {
    if (is_report_key(k)) continue;
    std::optional<double> d;
    if (v.is_number()) d = v.get<double>();
    if (v.is_string()) d = parse_number(trim(v.get<std::string>()));
    if (v.is_null()) d = std::nan("");  // what nlohmann writes for NaN
    OSPREY_CHECK(d.has_value(),
                 "metric file: the value of \"{}\" must be a number. Received: {} in the line '{}'",
                 k, v.dump(), line);
    r.metrics.emplace_back(k, *d);
  }
  OSPREY_CHECK(!r.metrics.empty(), "metric file: no metric values in the line '{}'", line);
  return r;
}

}  // namespace osprey::tune
