// The pure parts of `osprey launch`: command line, environment, output demultiplexing and failure
// summaries (see launch_util.h).
#include "cli/launch/launch_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstring>
#include <regex>

#include "cli/wait_policy.h"

namespace osprey::cli {

Launcher choose_launcher(bool in_slurm_allocation, bool srun_on_path) {
  return in_slurm_allocation && srun_on_path ? Launcher::srun : Launcher::mpirun;
}

std::vector<int> slots_per_host(int num_workers, int num_hosts) {
  std::vector<int> slots(static_cast<size_t>(std::max(num_hosts, 0)));
  for (int h = 0; h < num_hosts; ++h)
    slots[h] = num_workers / num_hosts + (h < num_workers % num_hosts);
  return slots;
}

int worker_threads(int threads_per_worker, int num_workers, int num_hosts, int cores) {
  if (threads_per_worker > 0) return threads_per_worker;
  const int here = num_hosts > 0 ? (num_workers + num_hosts - 1) / num_hosts : num_workers;
  return std::max(1, cores / std::max(1, here));
}

EnvVars worker_environment(int threads, const char* user_wait_policy, const char* user_spin_count) {
  const std::string n = std::to_string(threads);
  // The user's value is passed on explicitly so that workers on other hosts get it too.
  return {{"OSPREY_NUM_THREADS", n},
          {"OMP_NUM_THREADS", n},
          wait_setting(user_wait_policy, user_spin_count)};
}

std::vector<std::string> launcher_argv(const LaunchSpec& spec) {
  std::vector<std::string> argv;
  const std::string n = std::to_string(spec.num_workers);
  if (spec.launcher == Launcher::srun) {
    // --quit-on-interrupt: a single SIGINT (which launch forwards once) ends the step; without
    // it srun only prints the tasks' status and waits for a second one.
    argv = {"srun", "-n", n, "--mpi=pmix", "--label", "--quit-on-interrupt"};
    if (!spec.hosts.empty()) {
      std::string list;
      for (const std::string& h : spec.hosts) list += (list.empty() ? "" : ",") + h;
      argv.insert(argv.end(), {"-w", list});
    }
  } else {
    // --oversubscribe: N may exceed the cores (or the slots mpirun counts) on purpose; the
    // thread counts in env share the cores out instead.
    argv = {"mpirun", "-np", n, "--oversubscribe", "--bind-to", "none", "--tag-output"};
    if (spec.as_root) argv.push_back("--allow-run-as-root");
    if (!spec.hosts.empty()) {
      const std::vector<int> slots =
          slots_per_host(spec.num_workers, static_cast<int>(spec.hosts.size()));
      std::string list;
      for (size_t h = 0; h < spec.hosts.size(); ++h) {
        if (slots[h] == 0) continue;
        list += fmt::format("{}{}:{}", list.empty() ? "" : ",", spec.hosts[h], slots[h]);
      }
      argv.insert(argv.end(), {"-H", list});
    }
    for (const auto& [name, value] : spec.env)
      argv.insert(argv.end(), {"-x", fmt::format("{}={}", name, value)});
    argv.push_back("--");  // PROGRAM's own options are not mpirun's
  }
  argv.insert(argv.end(), spec.command.begin(), spec.command.end());
  return argv;
}

std::string format_line(const OutputLine& line) {
  return line.rank < 0 ? line.text : fmt::format("[rank {}] {}", line.rank, line.text);
}

namespace {

enum class TagMatch { no, prefix, full };

// Matches "[J,R]<stdout>:" (or <stderr>, <stddiag>) at the start of s; `prefix` when s ends
// before the tag could be told from text, so the caller waits for more bytes.
TagMatch match_mpirun_tag(std::string_view s, MpirunTag* tag) {
  size_t i = 0;
  if (s.empty()) return TagMatch::prefix;
  if (s[i++] != '[') return TagMatch::no;
  int numbers[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (numbers[k] > 100'000'000) return TagMatch::no;
      numbers[k] = numbers[k] * 10 + (s[i++] - '0');
    }
    if (i == s.size()) return TagMatch::prefix;
    if (i == start || s[i++] != (k == 0 ? ',' : ']')) return TagMatch::no;
  }
  static constexpr std::array<std::pair<std::string_view, Stream>, 3> kStreams{
      {{"<stdout>:", Stream::out}, {"<stderr>:", Stream::err}, {"<stddiag>:", Stream::err}}};
  const std::string_view rest = s.substr(i);
  for (const auto& [name, stream] : kStreams) {
    if (rest.size() < name.size()) {
      if (name.starts_with(rest)) return TagMatch::prefix;
    } else if (rest.starts_with(name)) {
      if (tag != nullptr) *tag = {numbers[1], stream, i + name.size()};
      return TagMatch::full;
    }
  }
  return TagMatch::no;
}

}  // namespace

std::optional<MpirunTag> parse_mpirun_tag(std::string_view s) {
  MpirunTag tag;
  if (match_mpirun_tag(s, &tag) != TagMatch::full) return std::nullopt;
  return tag;
}

std::vector<OutputLine> OutputDemux::feed(std::string_view data) {
  buf_.append(data);
  std::vector<OutputLine> out;
  if (launcher_ == Launcher::mpirun) {
    split_mpirun(out, false);
  } else {
    split_srun(out, false);
  }
  return out;
}

std::vector<OutputLine> OutputDemux::finish() {
  std::vector<OutputLine> out;
  if (launcher_ == Launcher::mpirun) {
    split_mpirun(out, true);
  } else {
    split_srun(out, true);
  }
  for (auto& [source, text] : partial_) {
    if (!text.empty()) out.push_back({source.first, source.second, std::move(text)});
  }
  partial_.clear();
  return out;
}

void OutputDemux::split_mpirun(std::vector<OutputLine>& out, bool at_end) {
  while (!buf_.empty()) {
    if (!piece_) {
      MpirunTag tag;
      const TagMatch m = match_mpirun_tag(buf_, &tag);
      if (m == TagMatch::full) {
        piece_ = {tag.rank, tag.stream};
        buf_.erase(0, tag.length);
        continue;
      }
      if (m == TagMatch::prefix && !at_end) return;
      piece_ = {-1, pipe_};  // mpirun's own text
    }
    // The piece runs to its newline, or to the next tag when the worker wrote no newline.
    const size_t newline = buf_.find('\n');
    const size_t end = newline == std::string::npos ? buf_.size() : newline;
    size_t next_tag = std::string::npos;
    size_t keep = end;  // a tag cut off at the end of the buffer waits for the next read
    for (size_t p = buf_.find('['); p < end; p = buf_.find('[', p + 1)) {
      const TagMatch m = match_mpirun_tag(std::string_view(buf_).substr(p), nullptr);
      if (m == TagMatch::full) {
        next_tag = p;
        break;
      }
      if (m == TagMatch::prefix && newline == std::string::npos && !at_end) {
        keep = p;
        break;
      }
    }
    std::string& text = partial_[*piece_];
    if (next_tag != std::string::npos) {
      text.append(buf_, 0, next_tag);
      buf_.erase(0, next_tag);
      piece_.reset();
    } else if (newline != std::string::npos) {
      text.append(buf_, 0, newline);
      out.push_back({piece_->first, piece_->second, std::move(text)});
      partial_.erase(*piece_);
      buf_.erase(0, newline + 1);
      piece_.reset();
    } else {
      text.append(buf_, 0, keep);
      buf_.erase(0, keep);
      return;
    }
  }
}

void OutputDemux::split_srun(std::vector<OutputLine>& out, bool at_end) {
  auto emit = [&](std::string_view line) {
    // "R: text", R right-aligned to the widest rank.
    size_t i = line.find_first_not_of(' ');
    const size_t digits = i == std::string_view::npos ? i : line.find_first_not_of("0123456789", i);
    if (digits != std::string_view::npos && digits > i && line[digits] == ':' && digits - i < 9) {
      const int rank = std::stoi(std::string(line.substr(i, digits - i)));
      std::string_view text = line.substr(digits + 1);
      if (text.starts_with(' ')) text.remove_prefix(1);
      out.push_back({rank, pipe_, std::string(text)});
    } else {
      out.push_back({-1, pipe_, std::string(line)});
    }
  };
  size_t start = 0;
  for (size_t nl = buf_.find('\n'); nl != std::string::npos; nl = buf_.find('\n', start)) {
    emit(std::string_view(buf_).substr(start, nl - start));
    start = nl + 1;
  }
  buf_.erase(0, start);
  if (at_end && !buf_.empty()) {
    emit(buf_);
    buf_.clear();
  }
}

std::optional<std::string> deterministic_failure(int exit_code) {
  switch (exit_code) {
    case 2:
      return "a usage error";
    case 126:
      return "the program cannot be executed";
    case 127:
      return "the program was not found or could not be started";
    default:
      return std::nullopt;
  }
}

AfterFailure after_failure(int attempt, int attempts, int code, const std::string& ending) {
  if (const std::optional<std::string> why = deterministic_failure(code))
    return {false, fmt::format("{} ({}); {}", ending, *why, kNotRestarting)};
  if (attempt >= attempts) return {false, ending};
  const int left = attempts - attempt;
  return {true, fmt::format("attempt {} of {} ended: {}; restarting the job ({} {} left)", attempt,
                            attempts, ending, left, left == 1 ? "restart" : "restarts")};
}

int WorkerFailure::launch_exit_code(int launcher_exit_code) const {
  if (signal > 0) return 128 + signal;
  if (exit_code != 0) return exit_code;
  return launcher_exit_code != 0 ? launcher_exit_code : 1;
}

std::string WorkerFailure::describe() const {
  if (signal > 0)
    return fmt::format("rank {} was killed by signal {} ({})", rank, signal, signal_name);
  if (!signal_name.empty()) return fmt::format("rank {} was killed ({})", rank, signal_name);
  return fmt::format("rank {} failed with exit code {}", rank, exit_code);
}

namespace {

// srun names the signal only (strsignal's text, maybe with " (core dumped)"): find its number.
int signal_number(std::string_view name) {
  for (int s = 1; s < NSIG; ++s) {
    const char* text = strsignal(s);
    if (text != nullptr && name.starts_with(text)) return s;
  }
  return 0;
}

}  // namespace

void FailureParser::feed(std::string_view line) {
  if (failure_) return;  // the first failure is the cause; the rest are its consequences
  static const std::regex kProcessName(R"(Process name:\s*\[\[\d+,\d+\],(\d+)\])");
  static const std::regex kExitCode(R"(^\s*Exit code:\s*(-?\d+))");
  static const std::regex kSignal(
      R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)(?: \(([^)]*)\))?)");
  static const std::regex kSrunExit(
      R"(^srun: error: .*\btasks? (\d+)[-,\d\[\]]*: Exited with exit code (\d+))");
  static const std::regex kSrunKilled(R"(^srun: error: .*\btasks? (\d+)[-,\d\[\]]*: (.+)$)");
  const std::string s(line);
  std::smatch m;
  if (std::regex_search(s, m, kProcessName)) {
    pending_rank_ = std::stoi(m[1]);
  } else if (pending_rank_ && std::regex_search(s, m, kExitCode)) {
    failure_ = WorkerFailure{
        .rank = *pending_rank_, .exit_code = std::stoi(m[1]), .signal = 0, .signal_name = ""};
  } else if (std::regex_search(s, m, kSignal)) {
    failure_ = WorkerFailure{.rank = std::stoi(m[1]),
                             .exit_code = 0,
                             .signal = std::stoi(m[2]),
                             .signal_name = m[3].str()};
  } else if (std::regex_search(s, m, kSrunExit)) {
    failure_ = WorkerFailure{
        .rank = std::stoi(m[1]), .exit_code = std::stoi(m[2]), .signal = 0, .signal_name = ""};
  } else if (std::regex_search(s, m, kSrunKilled)) {
    std::string name = m[2].str();
    failure_ = WorkerFailure{.rank = std::stoi(m[1]),
                             .exit_code = 0,
                             .signal = signal_number(name),
                             .signal_name = name};
  }
}

}  // namespace osprey::cli
