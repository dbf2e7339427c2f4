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

#include "osprey/core/error.h"

namespace osprey::tune {

namespace {

void check_name(const std::string& name) {
  OSPREY_CHECK(!name.empty(), "report_metric: the metric name is empty");
  OSPREY_CHECK(name.find_first_of(" \t\r\n\v\f=") == std::string::npos,
               "report_metric: a metric name may not hold whitespace or '='. Received: '{}'", name);
  for (const char* own : {"epoch", "global_step", "timestamp", "trial", "checkpoint_path"}) {
    OSPREY_CHECK(name != own,
                 "report_metric: '{}' is a key osprey reads itself, not a metric; name the metric "
                 "otherwise",
                 name);
  }
}

// %.17g round-trips every double; NaN and infinities have no JSON number, so the file gets them
// as the strings osprey (and hypertune) read back as numbers.
std::string json_number(double v) {
  if (std::isfinite(v)) return fmt::format("{:.17g}", v);
  return fmt::format("\"{}\"", std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
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
    if (epoch) line += fmt::format(" epoch={}", *epoch);
    fmt::print("{}\n", line);
    std::fflush(stdout);
    return;
  }
  std::string line = "{";
  for (const auto& [name, value] : metrics)
    line += fmt::format("{}: {}, ", nlohmann::json(name).dump(), json_number(value));
  line = epoch ? fmt::format("{}\"epoch\": {}}}\n", line, *epoch)
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

}  // namespace osprey::tune
