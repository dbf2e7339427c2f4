#include "cli/tune_command.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/process.h"
#include "cli/usage_error.h"
#include "osprey/core/error.h"
#include "osprey/tune/hyperband.h"

namespace osprey::cli {

namespace {

using Clock = std::chrono::steady_clock;

std::string_view trim(std::string_view s) {
  const auto sp = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && sp(s.front())) s.remove_prefix(1);
  while (!s.empty() && sp(s.back())) s.remove_suffix(1);
  return s;
}

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

std::vector<std::string> command_placeholders(std::string_view command) {
  std::vector<std::string> names;
  scan_template(
      command, [](const std::string&) {}, [&](std::string n) { names.push_back(std::move(n)); });
  return names;
}

std::string shell_quote(std::string_view s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
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
        out += shell_quote(it->second);
      });
  return out;
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
      r.epoch = parse_epoch(nlohmann::json(text));
      OSPREY_CHECK(r.epoch.has_value(),
                   "metric report: epoch must be an integer >= 0. Received: '{}' in the line '{}'",
                   text, line);
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
  for (const char* key : {"epoch", "global_step"}) {
    if (r.epoch || !j.contains(key)) continue;
    r.epoch = parse_epoch(j.at(key));
    OSPREY_CHECK(r.epoch.has_value(),
                 "metric file: \"{}\" must be an integer >= 0. Received: {} in the line '{}'", key,
                 j.at(key).dump(), line);
  }
  for (const auto& [k, v] : j.items()) {
    if (k == "epoch" || k == "global_step" || k == "timestamp" || k == "trial" ||
        k == "checkpoint_path") {
      continue;
    }
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

void check_command_template(std::string_view command, const tune::HyperParameters& space) {
  const auto reserved = [](const std::string& name) {
    return std::any_of(std::begin(kCommandPlaceholders), std::end(kCommandPlaceholders),
                       [&](const char* p) { return name == p; });
  };
  std::vector<std::string> valid(std::begin(kCommandPlaceholders), std::end(kCommandPlaceholders));
  for (const tune::HyperParameter& h : space.space()) {
    if (h.name.starts_with(tune::kTunerValuePrefix)) continue;
    OSPREY_CHECK_T(cli::UsageError, !reserved(h.name),
                   "osprey tune: the search space declares '{}', a placeholder osprey fills in "
                   "itself; rename the hyperparameter (e.g. num_{})",
                   h.name, h.name);
    valid.push_back(h.name);
  }
  const std::vector<std::string> names =
      as_usage_error([&] { return command_placeholders(command); });
  for (const std::string& n : names) {
    if (std::find(valid.begin(), valid.end(), n) != valid.end()) continue;
    std::vector<std::string> braced;
    braced.reserve(valid.size());
    for (const std::string& v : valid) braced.push_back("{" + v + "}");
    OSPREY_THROW(cli::UsageError,
                 "osprey tune: --command: unknown placeholder {{{}}}; the placeholders are {} "
                 "({{{{ and }}}} are literal braces)",
                 n, fmt::join(braced, ", "));
  }
}

namespace {

// The running trial's process group, for the signal handler.
std::atomic<pid_t> g_trial_group{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "used from a signal handler");

// SIGINT / SIGTERM: stop the trial's whole group (a shell and what it started), then die of the
// signal as before. The trial stays running in the oracle, so a rerun resumes it.
void stop_trial_and_die(int sig) {
  const pid_t group = g_trial_group;
  if (group > 0) kill(-group, SIGTERM);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Installs stop_trial_and_die for the life of the study, then puts the old handlers back.
class SignalScope {
 public:
  SignalScope() {
    struct sigaction sa {};
    sa.sa_handler = stop_trial_and_die;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Bytes from a pipe cut into lines ('\n'; a trailing '\r' dropped). A line longer than 64 KB is
// cut there, so a program that never ends a line cannot grow the buffer without bound.
class LineSplitter {
 public:
  std::vector<std::string> feed(std::string_view bytes) {
    std::vector<std::string> lines;
    for (char c : bytes) {
      if (c != '\n') partial_ += c;
      if (c == '\n' || partial_.size() >= (64 << 10)) lines.push_back(take());
    }
    return lines;
  }
  std::vector<std::string> finish() {
    if (partial_.empty()) return {};
    return {take()};
  }

 private:
  std::string take() {
    std::string line = std::move(partial_);
    partial_.clear();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }
  std::string partial_;
};

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
    std::erase_if(lines, [](const std::string& l) { return trim(l).empty(); });
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
std::string placeholder_text(const tune::Value& v) {
  if (v.is_float()) return fmt::format("{}", v.as_double());
  return v.to_string();
}

std::string format_seconds(double s) { return fmt::format("{:g}", s); }

// One trial: its program runs while its reports go to the oracle, until it exits, the pruner
// stops it, it times out or it reports something unreadable.
class TrialRun {
 public:
  TrialRun(tune::Oracle& oracle, const tune::Trial& trial, const CommandStudyOptions& options)
      : oracle_(oracle), trial_(trial), options_(options) {}

  // Runs the program and ends the trial in the oracle; returns the ended trial.
  tune::Trial run() {
    const std::string& id = trial_.trial_id;
    const std::filesystem::path dir = oracle_.trial_dir(id);
    std::filesystem::create_directories(dir);
    const std::filesystem::path metric_file = dir / "metrics.jsonl";
    // A trial handed out again starts over; its old reports are already with the oracle.
    std::filesystem::remove(metric_file);
    const std::map<std::string, std::string> values = placeholder_values(dir);
    next_epoch_ = std::stoi(values.at("initial_epoch"));
    const std::string command = substitute_command(options_.command, values);
    std::vector<std::pair<std::string, std::string>> env = {
        {"OSPREY_TRIAL_ID", id},
        {"OSPREY_TRIAL_DIR", dir.string()},
        {"OSPREY_METRIC_FILE", metric_file.string()},
        {"CLOUD_ML_HP_METRIC_FILE", metric_file.string()},
        {"CLOUD_ML_TRIAL_ID", id}};
    // Python buffers stdout into a pipe until exit: reports would arrive too late to prune.
    if (std::getenv("PYTHONUNBUFFERED") == nullptr) env.emplace_back("PYTHONUNBUFFERED", "1");
    if (options_.verbose) echo(stdout, fmt::format("$ {}", command));
    child_ = spawn("/bin/sh", {"sh", "-c", command}, child_environment(env), &g_trial_group);
    try {
      wait_for_end(metric_file);
    } catch (...) {
      kill(-child_.pid, SIGKILL);
      if (!reaped_) waitpid(child_.pid, nullptr, 0);
      close_pipes();
      g_trial_group = 0;
      throw;
    }
    // Whatever the program left running in its group ends with the trial.
    kill(-child_.pid, SIGKILL);
    g_trial_group = 0;
    return end();
  }

 private:
  enum class Stop { none, pruned, timed_out, bad_report };

  std::map<std::string, std::string> placeholder_values(const std::filesystem::path& dir) const {
    std::map<std::string, std::string> v;
    const tune::HyperParameters& hp = trial_.hyperparameters;
    for (const tune::HyperParameter& h : oracle_.hyperparameters().space()) {
      if (h.name.starts_with(tune::kTunerValuePrefix)) continue;
      v[h.name] = placeholder_text(hp.find(h.name) != nullptr ? hp.get(h.name) : h.default_value);
    }
    const bool scheduled = hp.has_value(tune::kTunerEpochs);
    v["epochs"] = std::to_string(scheduled ? hp.get(tune::kTunerEpochs).as_int() : options_.epochs);
    v["initial_epoch"] = std::to_string(
        hp.has_value(tune::kTunerInitialEpoch) ? hp.get(tune::kTunerInitialEpoch).as_int() : 0);
    v["trial_id"] = trial_.trial_id;
    v["trial_dir"] = dir.string();
    return v;
  }

  void echo(FILE* stream, std::string_view line) const {
    fmt::print(stream, "[trial {}] {}\n", trial_.trial_id, line);
    std::fflush(stream);
  }

  void stop(Stop why, std::string message = "") {
    if (stop_ != Stop::none) return;
    stop_ = why;
    stop_message_ = std::move(message);
    stop_sent_ = Clock::now();
    kill(-child_.pid, SIGTERM);
  }

  // A report goes to the oracle as one epoch; a report naming the epoch of the one before adds
  // its values to that epoch's (several lines per epoch, hypertune's one metric per call).
  void report(const MetricReport& r) {
    if (stop_ != Stop::none) return;  // a stopped trial's later epochs do not count
    tune::MetricValues metrics = r.metrics;
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
    if (oracle_.update_trial(trial_.trial_id, metrics, epoch) == tune::TrialStatus::stopped)
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

  void close_pipes() {
    for (pollfd& p : fds_) {
      if (p.fd >= 0) close(p.fd);
      p.fd = -1;
    }
  }

  // Reads the pipes and the metric file until the program has exited and closed both pipes.
  void wait_for_end(const std::filesystem::path& metric_file) {
    fds_[0] = {child_.out_fd, POLLIN, 0};
    fds_[1] = {child_.err_fd, POLLIN, 0};
    LineSplitter split[2];
    MetricFileReader file(metric_file);
    const auto start = Clock::now();
    Clock::time_point reaped_at{};
    bool killed = false;
    std::vector<char> buf(1 << 16);
    while (true) {
      const bool open = fds_[0].fd >= 0 || fds_[1].fd >= 0;
      const auto now = Clock::now();
      if (reaped_ && !open) break;
      // The program is gone but something it started holds the pipes: stop its group, and if
      // that is not enough (it left the group), stop reading.
      if (reaped_ && now - reaped_at > std::chrono::seconds(2)) {
        if (!killed) {
          kill(-child_.pid, SIGKILL);
          killed = true;
        } else if (now - reaped_at > std::chrono::seconds(3)) {
          close_pipes();
          break;
        }
      }
      if (poll(fds_, 2, 100) < 0 && errno != EINTR)
        OSPREY_THROW(Error, "osprey tune: poll failed: {}", std::strerror(errno));
      for (int i = 0; i < 2; ++i) {
        if (fds_[i].fd < 0 || fds_[i].revents == 0) continue;
        const ssize_t n = read(fds_[i].fd, buf.data(), buf.size());
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        std::vector<std::string> lines =
            n > 0 ? split[i].feed(std::string_view(buf.data(), static_cast<size_t>(n)))
                  : split[i].finish();
        if (n <= 0) {
          close(fds_[i].fd);
          fds_[i].fd = -1;
        }
        for (std::string& line : lines) i == 0 ? on_stdout(line) : on_stderr(std::move(line));
      }
      on_metric_file_lines(file.poll(/*final=*/false));
      if (!reaped_ && waitpid(child_.pid, &wait_status_, WNOHANG) == child_.pid) {
        reaped_ = true;
        reaped_at = Clock::now();
      }
      if (options_.trial_timeout > 0 &&
          Clock::now() - start > std::chrono::duration<double>(options_.trial_timeout))
        stop(Stop::timed_out);
      // SIGTERM first, so the program may save what it has; SIGKILL after 5 s.
      if (stop_ != Stop::none && !reaped_ && !killed &&
          Clock::now() - stop_sent_ > std::chrono::seconds(5)) {
        kill(-child_.pid, SIGKILL);
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

  tune::Trial end() {
    const std::string& id = trial_.trial_id;
    const std::string tail = tail_.text();
    switch (stop_) {
      case Stop::pruned:  // ended completed: the oracle keeps the pruner's message
        return oracle_.end_trial(id, tune::TrialStatus::completed);
      case Stop::timed_out:
        return oracle_.end_trial(
            id, tune::TrialStatus::failed,
            fmt::format("timed out after {} s{}", format_seconds(options_.trial_timeout),
                        tail.empty() ? "" : "; stderr tail: " + tail));
      case Stop::bad_report:
        return oracle_.end_trial(id, tune::TrialStatus::failed, stop_message_);
      case Stop::none:
        break;
    }
    if (WIFEXITED(wait_status_) && WEXITSTATUS(wait_status_) == 0)
      return oracle_.end_trial(id, tune::TrialStatus::completed);
    return oracle_.end_trial(id, tune::TrialStatus::failed, ending());
  }

  tune::Oracle& oracle_;
  const tune::Trial& trial_;
  const CommandStudyOptions& options_;
  Child child_;
  pollfd fds_[2] = {{-1, 0, 0}, {-1, 0, 0}};
  bool reaped_ = false;
  int wait_status_ = 0;
  Stop stop_ = Stop::none;
  std::string stop_message_;
  Clock::time_point stop_sent_{};
  int next_epoch_ = 0;
  std::optional<int> last_epoch_;
  tune::MetricValues last_metrics_;
  StderrTail tail_;
};

std::string values_text(const tune::HyperParameters& hp) {
  std::vector<std::string> parts;
  for (const tune::HyperParameter& h : hp.space()) {
    if (hp.has_value(h.name)) parts.push_back(h.name + "=" + hp.get(h.name).to_string());
  }
  for (const auto& [k, v] : hp.values()) {
    if (k.starts_with(tune::kTunerValuePrefix)) parts.push_back(k + "=" + v.to_string());
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

// The trial's row: id, trials done, status, score, best so far, its time, its values.
void print_row(tune::Oracle& oracle, const tune::Trial& t, double seconds, bool header) {
  const std::string& metric = oracle.objective().name();
  if (header) {
    fmt::print("{:<6} {:>7} {:<9} {:>12} {:>12} {:>8}  {}\n", "trial", "done", "status",
               metric.substr(0, 12), "best so far", "time", "hyperparameters");
  }
  const auto best = oracle.get_best_trials(1);
  const auto& trials = oracle.trials();
  const auto ended =
      std::count_if(trials.begin(), trials.end(), [](const tune::Trial& x) { return x.ended(); });
  const int n = oracle.max_trials();
  fmt::print("{:<6} {:>7} {:<9} {:>12} {:>12} {:>7.1f}s  {}\n", t.trial_id,
             n > 0 ? fmt::format("{}/{}", ended, n) : std::to_string(ended),
             tune::status_name(t.status), t.score ? fmt::format("{:.6g}", *t.score) : "-",
             best.empty() ? "-" : fmt::format("{:.6g}", *best[0].score), seconds,
             values_text(t.hyperparameters));
  if (!t.message.empty()) {
    std::string message = t.message;
    for (size_t p = 0; (p = message.find('\n', p)) != std::string::npos; p += 8)
      message.replace(p, 1, "\n       ");
    fmt::print("       {}: {}\n", t.status == tune::TrialStatus::failed ? "error" : "note",
               message);
  }
  std::fflush(stdout);
}

void print_summary(tune::Oracle& oracle) {
  const auto& trials = oracle.trials();
  const auto failed = std::count_if(trials.begin(), trials.end(), [](const tune::Trial& t) {
    return t.status == tune::TrialStatus::failed;
  });
  const auto best = oracle.get_best_trials(1 << 30);
  fmt::print("\nResults summary\n");
  if (!oracle.directory().empty()) fmt::print("Results in {}\n", oracle.directory().string());
  fmt::print("Objective(name=\"{}\", direction=\"{}\")\n", oracle.objective().name(),
             oracle.objective().direction());
  fmt::print("{} trials: {} completed, {} failed\n", trials.size(), best.size(), failed);
  if (best.empty()) return;
  const tune::Trial& b = best[0];
  fmt::print("Best trial {}: score {:.6g} (best epoch {}): {}\n", b.trial_id, *b.score,
             b.best_step + 1, values_text(b.hyperparameters));
  fmt::print("\nbest hyperparameters: {}\n", b.hyperparameters.to_json().at("values").dump());
  std::fflush(stdout);
}

}  // namespace

int run_command_study(tune::Oracle& oracle, const CommandStudyOptions& options) {
  oracle.refresh();
  check_command_template(options.command, oracle.hyperparameters());
  OSPREY_CHECK(options.max_consecutive_failed_trials >= 1,
               "osprey tune: max_consecutive_failed_trials must be >= 1. Received: {}",
               options.max_consecutive_failed_trials);
  SignalScope signals;
  bool header = true;
  int consecutive_failures = 0;
  while (true) {
    const tune::Trial trial = oracle.create_trial(options.tuner_id);
    if (trial.status == tune::TrialStatus::stopped) break;
    if (trial.status == tune::TrialStatus::idle) {  // others' trials must end first
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    const auto start = Clock::now();
    const tune::Trial ended = TrialRun(oracle, trial, options).run();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    oracle.refresh();
    print_row(oracle, ended, seconds, header);
    header = false;
    if (ended.status != tune::TrialStatus::failed) {
      consecutive_failures = 0;
    } else if (++consecutive_failures >= options.max_consecutive_failed_trials) {
      OSPREY_THROW(Error,
                   "osprey tune: search stopped: {} trials failed in a row "
                   "(--max-consecutive-failed-trials {}); the last, trial {}, failed with: {}",
                   consecutive_failures, options.max_consecutive_failed_trials, ended.trial_id,
                   ended.message);
    }
  }
  oracle.refresh();
  print_summary(oracle);
  if (oracle.get_best_trials(1).empty()) {
    const auto& trials = oracle.trials();
    const auto last = std::find_if(trials.rbegin(), trials.rend(), [](const tune::Trial& t) {
      return t.status == tune::TrialStatus::failed;
    });
    OSPREY_THROW(Error, "osprey tune: no trial completed ({} trials{})", trials.size(),
                 last == trials.rend()
                     ? std::string()
                     : fmt::format("; the last failed one, trial {}, failed with: {}",
                                   last->trial_id, last->message));
  }
  return 0;
}

}  // namespace osprey::cli
