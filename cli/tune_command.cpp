#include "cli/tune_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "cli/usage_error.h"
#include "osprey/core/error.h"
#include "osprey/io/subprocess.h"
#include "osprey/tune/command_trial.h"

namespace osprey::cli {

void check_command_template(std::string_view command, const tune::HyperParameters& space) {
  as_usage_error([&] { tune::check_command_template(command, space); });
}

namespace {

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

int run_command_study(tune::Study& study, const tune::CommandTrialOptions& options) {
  tune::Oracle& oracle = study.oracle();
  oracle.refresh();
  cli::check_command_template(options.command, oracle.hyperparameters());
  // Ctrl-C and SIGTERM stop the running trial's whole process group, then osprey; the trial stays
  // running in the oracle, so a rerun resumes it.
  io::SignalForwarding signals(io::SignalForwarding::Target::group, /*die_after=*/true);
  tune::CommandTrialRunner runner(oracle, options);
  bool header = true;
  const tune::StudyEnd end =
      study.run(runner, {.on_trial_end = [&](const tune::Trial& ended, double seconds) {
                  print_row(oracle, ended, seconds, header);
                  header = false;
                }});
  // A launched worker that ran its share of trials makes way for a fresh process.
  if (end == tune::StudyEnd::share_done) throw ExitCode{tune::kExitNextTrial};
  oracle.refresh();
  print_summary(oracle);
  study.check_scored();
  return 0;
}

}  // namespace osprey::cli
