#include "osprey/tune/command_trial.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "osprey/core/error.h"
#include "osprey/io/subprocess.h"
#include "osprey/tune/hyperband.h"
#include "osprey/tune/report_metric.h"

namespace osprey::tune {

namespace {

using Clock = std::chrono::steady_clock;

// Whether a metric file line holds nothing but whitespace.
bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// The last 20 lines and at most 4 KB of the trial's stderr, for its failure message.
class StderrTail {
 public:
  void add(std::string line) {
    if (line.size() > kBytes) line = "..." + line.substr(line.size() - kBytes);
    bytes_ += line.size();
    lines_.push_back(std::move(line));
    while (lines_.size() > 20 || (bytes_ > kBytes && lines_.size() > 1)) {
      bytes_ -= lines_.front().size();
      lines_.pop_front();
    }
  }
  std::string text() const { return fmt::format("{}", fmt::join(lines_, "\n")); }

 private:
  static constexpr size_t kBytes = 4096;
  std::deque<std::string> lines_;
  size_t bytes_ = 0;
};

// The complete lines of the metric file not read before. The file may be appended to
// (report_metric) or rewritten whole with the last 100 reports (hypertune): new lines are those
// after the last line already read, wherever the rewrite put it.
class MetricFileReader {
 public:
  explicit MetricFileReader(std::filesystem::path path) : path_(std::move(path)) {}

  // `final`: the writer is gone, so a last line without '\n' counts, and a file that no longer
  // holds the last line read is taken whole.
  std::vector<std::string> poll(bool final) {
    struct stat st {};
    if (stat(path_.c_str(), &st) != 0) return {};
    const std::pair<int64_t, int64_t> stamp{st.st_size,
                                            st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
    if (!final && stamp == stamp_) return {};
    std::ifstream in(path_, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::vector<std::string> lines;
    size_t begin = 0;
    for (size_t nl; (nl = text.find('\n', begin)) != std::string::npos; begin = nl + 1)
      lines.emplace_back(text, begin, nl - begin);
    if (final && begin < text.size()) lines.emplace_back(text, begin);
    std::erase_if(lines, [](const std::string& l) { return blank(l); });
    size_t start = 0;
    if (consumed_ > 0) {
      if (lines.size() >= consumed_ && lines[consumed_ - 1] == last_) {
        start = consumed_;
      } else {
        const auto it = std::find(lines.rbegin(), lines.rend(), last_);
        if (it != lines.rend()) {
          start = static_cast<size_t>(lines.rend() - it);
        } else if (!final) {
          return {};  // caught mid-rewrite: read it again next time
        }
      }
    }
    stamp_ = stamp;
    if (!lines.empty()) last_ = lines.back();
    consumed_ = lines.size();
    return {lines.begin() + static_cast<std::ptrdiff_t>(start), lines.end()};
  }

 private:
  std::filesystem::path path_;
  std::pair<int64_t, int64_t> stamp_{-1, -1};
  size_t consumed_ = 0;
  std::string last_;
};

// What a placeholder value reads as on a command line: full precision for floats.
std::string placeholder_text(const Value& v) {
  if (v.is_float()) return fmt::format("{}", v.as_double());
  return v.to_string();
}

std::string format_seconds(double s) { return fmt::format("{:g}", s); }

// One trial: its program runs while its reports go to the oracle, until it exits, the pruner
// stops it, it times out or it reports something unreadable.
class TrialRun {
 public:
  TrialRun(Oracle& oracle, const Trial& trial, const CommandTrialOptions& options)
      : oracle_(oracle), trial_(trial), options_(options) {}

  // Runs the program and ends the trial in the oracle; returns the ended trial.
  Trial run() {
    const std::string& id = trial_.trial_id;
    const std::filesystem::path dir = oracle_.trial_dir(id);
    std::filesystem::create_directories(dir);
    const std::filesystem::path metric_file = dir / "metrics.jsonl";
    // A trial handed out again starts over; its old reports are already with the oracle.
    std::filesystem::remove(metric_file);
    const std::map<std::string, std::string> values =
        trial_placeholder_values(oracle_, trial_, options_.epochs);
    next_epoch_ = std::stoi(values.at("initial_epoch"));
    const std::string command = substitute_command(options_.command, values);
    std::vector<std::pair<std::string, std::string>> env = {
        {"OSPREY_TRIAL_ID", id},
        {"OSPREY_TRIAL_DIR", dir.string()},
        {"OSPREY_PARENT_TRIAL_DIR", values.at("parent_trial_dir")},
        {"OSPREY_METRIC_FILE", metric_file.string()},
        {"CLOUD_ML_HP_METRIC_FILE", metric_file.string()},
        {"CLOUD_ML_TRIAL_ID", id}};
    // Python buffers stdout into a pipe until exit: reports would arrive too late to prune.
    if (std::getenv("PYTHONUNBUFFERED") == nullptr) env.emplace_back("PYTHONUNBUFFERED", "1");
    if (options_.verbose) echo(stdout, fmt::format("$ {}", command));
    child_ = io::ChildProcess::start(
        {"/bin/sh", "-c", command},
        {.env = io::environment_with(env), .name = "osprey tune", .forward_signals_to_it = true});
    try {
      wait_for_end(metric_file);
    } catch (...) {
      child_.send_to_group(SIGKILL);
      child_.wait();
      child_.close_pipes();
      io::SignalForwarding::set_target(0);
      throw;
    }
    // Whatever the program left running in its group ends with the trial.
    child_.send_to_group(SIGKILL);
    io::SignalForwarding::set_target(0);
    return end();
  }

 private:
  enum class Stop { none, pruned, timed_out, bad_report };

  void echo(FILE* stream, std::string_view line) const {
    fmt::print(stream, "[trial {}] {}\n", trial_.trial_id, line);
    std::fflush(stream);
  }

  void stop(Stop why, std::string message = "") {
    if (stop_ != Stop::none) return;
    stop_ = why;
    stop_message_ = std::move(message);
    stop_sent_ = Clock::now();
    child_.send_to_group(SIGTERM);
  }

  // A report goes to the oracle as one epoch; a report naming the epoch of the one before adds
  // its values to that epoch's (several lines per epoch, hypertune's one metric per call).
  void report(const MetricReport& r) {
    if (stop_ != Stop::none) return;  // a stopped trial's later epochs do not count
    MetricValues metrics = r.metrics;
    int epoch = next_epoch_;
    if (r.epoch) {
      epoch = *r.epoch;
      if (last_epoch_ == epoch) {
        for (const auto& earlier : last_metrics_) {
          if (std::none_of(metrics.begin(), metrics.end(),
                           [&](const auto& m) { return m.first == earlier.first; }))
            metrics.push_back(earlier);
        }
      }
    }
    next_epoch_ = epoch + 1;
    last_epoch_ = epoch;
    last_metrics_ = metrics;
    if (oracle_.update_trial(trial_.trial_id, metrics, epoch) == TrialStatus::stopped)
      stop(Stop::pruned);
  }

  void on_stdout(const std::string& line) {
    std::optional<MetricReport> r;
    try {
      r = parse_metric_line(line);
    } catch (const ValueError& e) {
      stop(Stop::bad_report, fmt::format("bad report on stdout: {}", e.what()));
      return;
    }
    if (r) {
      report(*r);
    } else if (options_.verbose) {
      echo(stdout, line);
    }
  }

  void on_stderr(std::string line) {
    if (options_.verbose) echo(stderr, line);
    tail_.add(std::move(line));
  }

  void on_metric_file_lines(const std::vector<std::string>& lines) {
    for (const std::string& line : lines) {
      if (stop_ != Stop::none) return;
      try {
        report(parse_metric_json(line));
      } catch (const ValueError& e) {
        stop(Stop::bad_report, fmt::format("bad report in $OSPREY_METRIC_FILE: {}", e.what()));
      }
    }
  }

  // Reads the pipes and the metric file until the program has exited and closed both pipes.
  void wait_for_end(const std::filesystem::path& metric_file) {
    pollfd fds[2] = {{child_.out_fd(), POLLIN, 0}, {child_.err_fd(), POLLIN, 0}};
    io::LineSplitter split[2];
    MetricFileReader file(metric_file);
    const auto start = Clock::now();
    Clock::time_point reaped_at{};
    bool killed = false;
    std::vector<char> buf(1 << 16);
    while (true) {
      const bool open = fds[0].fd >= 0 || fds[1].fd >= 0;
      const auto now = Clock::now();
      if (child_.reaped() && !open) break;
      // The program is gone but something it started holds the pipes: stop its group, and if
      // that is not enough (it left the group), stop reading.
      if (child_.reaped() && now - reaped_at > std::chrono::seconds(2)) {
        if (!killed) {
          child_.send_to_group(SIGKILL);
          killed = true;
        } else if (now - reaped_at > std::chrono::seconds(3)) {
          child_.close_pipes();
          break;
        }
      }
      if (poll(fds, 2, 100) < 0 && errno != EINTR)
        OSPREY_THROW(Error, "osprey tune: poll failed: {}", std::strerror(errno));
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        const ssize_t n = read(fds[i].fd, buf.data(), buf.size());
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        std::vector<std::string> lines =
            n > 0 ? split[i].feed(std::string_view(buf.data(), static_cast<size_t>(n)))
                  : split[i].finish();
        if (n <= 0) {
          i == 0 ? child_.close_out() : child_.close_err();
          fds[i].fd = -1;
        }
        for (std::string& line : lines) i == 0 ? on_stdout(line) : on_stderr(std::move(line));
      }
      on_metric_file_lines(file.poll(/*final=*/false));
      if (!child_.reaped() && child_.poll_exit()) {
        wait_status_ = *child_.poll_exit();
        reaped_at = Clock::now();
      }
      if (options_.trial_timeout > 0 &&
          Clock::now() - start > std::chrono::duration<double>(options_.trial_timeout))
        stop(Stop::timed_out);
      // SIGTERM first, so the program may save what it has; SIGKILL after 5 s.
      if (stop_ != Stop::none && !child_.reaped() && !killed &&
          Clock::now() - stop_sent_ > std::chrono::seconds(5)) {
        child_.send_to_group(SIGKILL);
        killed = true;
      }
    }
    on_metric_file_lines(file.poll(/*final=*/true));
  }

  // How the program ended, for a failed trial's message.
  std::string ending() const {
    const std::string tail = tail_.text();
    const std::string tail_text = tail.empty() ? " (nothing on stderr)" : "; stderr tail: " + tail;
    if (WIFSIGNALED(wait_status_)) {
      const int sig = WTERMSIG(wait_status_);
      return fmt::format("killed by signal {} ({}){}", sig, strsignal(sig), tail_text);
    }
    const int code = WEXITSTATUS(wait_status_);
    // The shell reports a command killed by signal N as exit status 128 + N.
    const std::string shell_signal =
        code > 128 && code - 128 < NSIG
            ? fmt::format(" (128 + signal {}, {})", code - 128, strsignal(code - 128))
            : "";
    return fmt::format("exit status {}{}{}", code, shell_signal, tail_text);
  }

  Trial end() {
    const std::string& id = trial_.trial_id;
    const std::string tail = tail_.text();
    switch (stop_) {
      case Stop::pruned:  // ended completed: the oracle keeps the pruner's message
        return oracle_.end_trial(id, TrialStatus::completed);
      case Stop::timed_out:
        return oracle_.end_trial(
            id, TrialStatus::failed,
            fmt::format("timed out after {} s{}", format_seconds(options_.trial_timeout),
                        tail.empty() ? "" : "; stderr tail: " + tail));
      case Stop::bad_report:
        return oracle_.end_trial(id, TrialStatus::failed, stop_message_);
      case Stop::none:
        break;
    }
    if (WIFEXITED(wait_status_) && WEXITSTATUS(wait_status_) == 0)
      return oracle_.end_trial(id, TrialStatus::completed);
    return oracle_.end_trial(id, TrialStatus::failed, ending());
  }

  Oracle& oracle_;
  const Trial& trial_;
  const CommandTrialOptions& options_;
  io::ChildProcess child_;
  int wait_status_ = 0;
  Stop stop_ = Stop::none;
  std::string stop_message_;
  Clock::time_point stop_sent_{};
  int next_epoch_ = 0;
  std::optional<int> last_epoch_;
  MetricValues last_metrics_;
  StderrTail tail_;
};

}  // namespace

namespace {

// Walks a command template: `text` gets the literal runs (braces unescaped), `name` each
// placeholder.
template <class Text, class Name>
void scan_template(std::string_view c, Text text, Name name) {
  std::string literal;
  for (size_t i = 0; i < c.size();) {
    const char ch = c[i];
    if ((ch == '{' || ch == '}') && i + 1 < c.size() && c[i + 1] == ch) {
      literal += ch;
      i += 2;
      continue;
    }
    OSPREY_CHECK(ch != '}',
                 "--command: unmatched '}}' at position {} of '{}' (write }}}} for a literal "
                 "brace)",
                 i, c);
    if (ch != '{') {
      literal += ch;
      ++i;
      continue;
    }
    const size_t close = c.find_first_of("{}", i + 1);
    OSPREY_CHECK(close != std::string_view::npos && c[close] == '}',
                 "--command: unmatched '{{' at position {} of '{}' (write {{{{ for a literal "
                 "brace)",
                 i, c);
    OSPREY_CHECK(close > i + 1, "--command: empty placeholder {{}} at position {} of '{}'", i, c);
    text(literal);
    literal.clear();
    name(std::string(c.substr(i + 1, close - i - 1)));
    i = close + 1;
  }
  text(literal);
}

}  // namespace

std::vector<std::string> command_placeholders(std::string_view command) {
  std::vector<std::string> names;
  scan_template(
      command, [](const std::string&) {}, [&](std::string n) { names.push_back(std::move(n)); });
  return names;
}

std::string substitute_command(std::string_view command,
                               const std::map<std::string, std::string>& values) {
  std::string out;
  scan_template(
      command, [&](const std::string& t) { out += t; },
      [&](const std::string& n) {
        const auto it = values.find(n);
        if (it == values.end()) {
          std::vector<std::string> known;
          known.reserve(values.size());
          for (const auto& [k, v] : values) known.push_back("{" + k + "}");
          OSPREY_THROW(ValueError, "--command: unknown placeholder {{{}}}; the placeholders are {}",
                       n, fmt::join(known, ", "));
        }
        out += io::shell_quote(it->second);
      });
  return out;
}

void check_command_template(std::string_view command, const HyperParameters& space) {
  const auto reserved = [](const std::string& name) {
    return std::any_of(std::begin(kCommandPlaceholders), std::end(kCommandPlaceholders),
                       [&](const char* p) { return name == p; });
  };
  std::vector<std::string> valid(std::begin(kCommandPlaceholders), std::end(kCommandPlaceholders));
  for (const HyperParameter& h : space.space()) {
    if (h.name.starts_with(kTunerValuePrefix)) continue;
    OSPREY_CHECK_T(ValueError, !reserved(h.name),
                   "osprey tune: the search space declares '{}', a placeholder osprey fills in "
                   "itself; rename the hyperparameter (e.g. num_{})",
                   h.name, h.name);
    valid.push_back(h.name);
  }
  const std::vector<std::string> names = command_placeholders(command);
  for (const std::string& n : names) {
    if (std::find(valid.begin(), valid.end(), n) != valid.end()) continue;
    std::vector<std::string> braced;
    braced.reserve(valid.size());
    for (const std::string& v : valid) braced.push_back("{" + v + "}");
    OSPREY_THROW(ValueError,
                 "osprey tune: --command: unknown placeholder {{{}}}; the placeholders are {} "
                 "({{{{ and }}}} are literal braces)",
                 n, fmt::join(braced, ", "));
  }
}

std::map<std::string, std::string> trial_placeholder_values(const Oracle& oracle,
                                                            const Trial& trial,
                                                            int default_epochs) {
  std::map<std::string, std::string> v;
  const HyperParameters& hp = trial.hyperparameters;
  for (const HyperParameter& h : oracle.hyperparameters().space()) {
    if (h.name.starts_with(kTunerValuePrefix)) continue;
    v[h.name] = placeholder_text(hp.find(h.name) != nullptr ? hp.get(h.name) : h.default_value);
  }
  const bool scheduled = hp.has_value(kTunerEpochs);
  v["epochs"] = std::to_string(scheduled ? hp.get(kTunerEpochs).as_int() : default_epochs);
  v["initial_epoch"] =
      std::to_string(hp.has_value(kTunerInitialEpoch) ? hp.get(kTunerInitialEpoch).as_int() : 0);
  v["trial_id"] = trial.trial_id;
  v["trial_dir"] = oracle.trial_dir(trial.trial_id).string();
  v["parent_trial_dir"] = hp.has_value(kTunerTrialId)
                              ? oracle.trial_dir(hp.get(kTunerTrialId).as_string()).string()
                              : "";
  return v;
}

CommandTrialRunner::CommandTrialRunner(Oracle& oracle, CommandTrialOptions options)
    : oracle_(oracle), options_(std::move(options)) {}

Trial CommandTrialRunner::run(const Trial& trial) {
  return TrialRun(oracle_, trial, options_).run();
}

}  // namespace osprey::tune
