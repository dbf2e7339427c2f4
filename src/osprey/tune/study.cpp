#include "osprey/tune/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "osprey/core/error.h"

namespace osprey::tune {

namespace {

using Clock = std::chrono::steady_clock;

// OSPREY_TUNER_TRIALS_PER_PROCESS: trials a worker process runs before it makes way for a fresh
// one (0: no limit).
int trials_per_process_from_env() {
  const char* v = std::getenv("OSPREY_TUNER_TRIALS_PER_PROCESS");
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  OSPREY_CHECK(*end == '\0' && n >= 0 && n <= 1000000,
               "OSPREY_TUNER_TRIALS_PER_PROCESS must be a count >= 0. Received: '{}'", v);
  return static_cast<int>(n);
}

}  // namespace

Study::Study(std::unique_ptr<Oracle> oracle, StudyOptions options)
    : oracle_(std::move(oracle)), options_(std::move(options)) {
  OSPREY_CHECK(oracle_ != nullptr, "{}Study: no oracle given", options_.message_prefix);
  OSPREY_CHECK(options_.max_trials_failing >= 1,
               "{}max_consecutive_failed_trials must be >= 1. Received: {}",
               options_.message_prefix, options_.max_trials_failing);
  role_ = tuner_role_from_env();
  if (!options_.trials_per_process)
    options_.trials_per_process = role_.is_worker() ? trials_per_process_from_env() : 0;
  // Only the chief owns the study's files; a chief restarted by `osprey launch` resumes them.
  if (options_.overwrite && !role_.is_worker() && !restarted_by_launcher() &&
      std::filesystem::exists(options_.directory))
    std::filesystem::remove_all(options_.directory);
  if (role_.is_worker()) {
    options_.tuner_id = role_.tuner_id;
    oracle_ = connect_oracle(
        std::move(oracle_),
        {.address = role_.oracle_address, .tuner_id = role_.tuner_id, .token = role_.token});
    oracle_->set_directory(options_.directory);
    oracle_->refresh();
  } else {
    oracle_->set_directory(options_.directory);
    oracle_->reload();
  }
}

void Study::serve(const std::function<void(const Trial&, double)>& on_trial_end) {
  OSPREY_CHECK(role_.is_chief(), "{}Study::serve: this process is not the chief (OSPREY_TUNER_ID)",
               options_.message_prefix);
  auto last_end = Clock::now();
  trials_run_ = 0;
  trial_seconds_ = 0;
  // The chief does not see a trial's own time: a row shows the time since the previous trial
  // ended, which with N workers is the study's pace.
  OracleServer server(
      *oracle_, chief_service_options(role_, options_.verbose), [&](const Trial& t) {
        const auto now = Clock::now();
        const double seconds = std::chrono::duration<double>(now - last_end).count();
        last_end = now;
        ++trials_run_;
        trial_seconds_ += seconds;
        if (on_trial_end) on_trial_end(t, seconds);
      });
  if (options_.verbose) {
    fmt::print("chief: serving the {} oracle of {} at {}; waiting for tuners\n",
               oracle_->class_name(), options_.directory.string(), server.address());
    std::fflush(stdout);
  }
  server.wait_until_done();
  server.shutdown();
}

StudyEnd Study::run(TrialRunner& runner, const StudyCallbacks& callbacks) {
  OSPREY_CHECK(!role_.is_chief(),
               "{}Study::run: the chief serves the oracle (serve()); it runs no trial",
               options_.message_prefix);
  deadline_.reset();
  if (options_.max_seconds > 0) {
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options_.max_seconds));
  }
  trials_run_ = 0;
  trial_seconds_ = 0;
  const std::string limit =
      options_.failing_limit_text.empty()
          ? fmt::format("max_consecutive_failed_trials={}", options_.max_trials_failing)
          : options_.failing_limit_text;
  int failing = 0;
  while (true) {
    if (deadline_ && Clock::now() >= *deadline_) {
      if (options_.verbose) {
        fmt::print("{}search stopped: max_seconds={} spent\n", options_.message_prefix,
                   options_.max_seconds);
        std::fflush(stdout);
      }
      return StudyEnd::time_spent;
    }
    const Trial trial = oracle_->create_trial(options_.tuner_id);
    if (trial.status == TrialStatus::stopped) return StudyEnd::finished;
    if (trial.status == TrialStatus::idle) {
      // Other workers' trials must end first (a Hyperband round, the study's last trials); a
      // lone tuner's oracle never answers idle.
      OSPREY_ASSERT(role_.is_worker(), "{}: idle with no other trial running (one tuner)",
                    oracle_->class_name());
      std::this_thread::sleep_for(options_.idle_wait);
      continue;
    }
    if (callbacks.on_trial_start) callbacks.on_trial_start(trial);
    const auto start = Clock::now();
    Trial ended;
    try {
      ended = runner.run(trial);
    } catch (const TrialLost& e) {
      // This worker went silent too long and the chief gave the trial to another: whoever holds
      // it now reports for it.
      if (options_.verbose) {
        fmt::print("trial {}: dropped: {}\n", trial.trial_id, e.what());
        std::fflush(stdout);
      }
      continue;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ++trials_run_;
    trial_seconds_ += seconds;
    oracle_->refresh();  // a worker's view of the study, for the row
    if (callbacks.on_trial_end) callbacks.on_trial_end(ended, seconds);
    if (ended.status != TrialStatus::failed) {
      failing = 0;
    } else if (++failing >= options_.max_trials_failing) {
      OSPREY_THROW(Error,
                   "{}search stopped: {} trials failed in a row ({}); the last, trial {}, failed "
                   "with: {}",
                   options_.message_prefix, failing, limit, ended.trial_id, ended.message);
    }
    // Its share done, the process makes way for a fresh one (launch --tuners): memory a trial
    // leaves behind never reaches the next.
    if (*options_.trials_per_process > 0 && trials_run_ >= *options_.trials_per_process)
      return StudyEnd::share_done;
  }
}

void Study::check_scored() {
  oracle_->refresh();
  // A search that scored nothing has no best trial to give; saying so here beats an empty
  // get_best_hyperparameters() that the caller indexes.
  if (!oracle_->get_best_trials(1).empty()) return;
  const auto& trials = oracle_->trials();
  const auto failed = std::count_if(trials.begin(), trials.end(),
                                    [](const Trial& t) { return t.status == TrialStatus::failed; });
  const auto last = std::find_if(trials.rbegin(), trials.rend(),
                                 [](const Trial& t) { return t.status == TrialStatus::failed; });
  OSPREY_THROW(Error, "{}search ended without a completed trial ({} failed){}",
               options_.message_prefix, failed,
               last == trials.rend() ? std::string()
                                     : fmt::format("; the last, trial {}, failed with: {}",
                                                   last->trial_id, last->message));
}

}  // namespace osprey::tune
