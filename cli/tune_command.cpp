#include "cli/tune_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "cli/command_trial.h"
#include "cli/usage_error.h"
#include "osprey/core/error.h"
#include "osprey/io/subprocess.h"
#include "osprey/tune/oracle_service.h"

namespace osprey::cli {

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

using Clock = std::chrono::steady_clock;

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
  TrialSignalScope signals;
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
    tune::Trial ended;
    try {
      ended = run_command_trial(oracle, trial, options);
    } catch (const tune::TrialLost& e) {
      // This worker went silent too long and the chief gave the trial to another: its process
      // is stopped (run_command_trial) and whoever holds the trial now reports for it.
      fmt::print("trial {}: dropped: {}\n", trial.trial_id, e.what());
      std::fflush(stdout);
      continue;
    }
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
