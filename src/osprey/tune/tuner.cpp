#include "osprey/tune/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <thread>

#include "osprey/core/error.h"
#include "osprey/io/safetensors.h"
#include "osprey/nn/name_scope.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/callbacks/backup_and_restore.h"
#include "osprey/train/trainer.h"
#include "osprey/tune/trial_checkpoint.h"
#include "osprey/tune/trial_tensorboard.h"

namespace osprey::tune {

namespace {

// The rows fit validates on (tensors, validation_split's tail rows, or a dataset of (x, y)
// batches), so the reporter can predict them with the trial's best state.
struct ValidationRows {
  Tensor x, y;
  std::optional<data::Dataset> dataset{};
  int64_t batch_size = 32;
  bool defined() const { return dataset.has_value() || (x.defined() && y.defined()); }
};

// As Model::fit splits and batches them; nothing when the fit has no validation (or fit itself
// will refuse the options, as validation_split does for a dataset).
ValidationRows validation_rows(const TrainData& data, const train::FitOptions& o) {
  ValidationRows rows;
  rows.batch_size = o.validation_batch_size > 0 ? o.validation_batch_size : o.batch_size;
  if (o.validation_data) {
    if (o.validation_data->dataset) {
      rows.dataset = o.validation_data->dataset;
    } else {
      rows.x = o.validation_data->x;
      rows.y = o.validation_data->y;
    }
  } else if (o.validation_split > 0 && !data.dataset && data.x.defined() && data.y.defined()) {
    const int64_t n = data.x.size(0);
    const auto nv = static_cast<int64_t>(static_cast<double>(n) * o.validation_split);
    if (nv > 0 && nv < n) {
      rows.x = data.x.narrow(0, n - nv, nv);
      rows.y = data.y.narrow(0, n - nv, nv);
    }
  }
  return rows;
}

// The model's predictions on the validation rows, as float32, with their labels.
TrialPredictions predict_rows(Model& model, const ValidationRows& rows) {
  if (!rows.dataset) {
    return {model.predict(rows.x, {.batch_size = rows.batch_size}).to(DType::float32).contiguous(),
            rows.y.contiguous()};
  }
  // The order evaluate sees: the dataset's epoch 0.
  std::vector<Tensor> predictions, targets;
  data::Iterator it = rows.dataset->iterator(0);
  while (auto e = it.next()) {
    if (e->size() < 2) return {};  // no labels to keep; evaluate refuses such data anyway
    const Tensor& x = (*e)[0];
    predictions.push_back(model.predict(x, {.batch_size = std::max<int64_t>(1, x.size(0))}));
    targets.push_back((*e)[1]);
  }
  if (predictions.empty()) return {};
  return {concat(predictions, 0).to(DType::float32).contiguous(), concat(targets, 0).contiguous()};
}

// Reports each epoch to the oracle and keeps the best state of the trial (over all its
// executions) on disk, with its predictions on the validation rows in memory (written once,
// when the trial ends). Given an end-state path (a trial another may go on from), it also keeps
// the state that the execution holding the best ended in; when that execution's best epoch was
// its last, the checkpoint already is that state and nothing more is written.
// Ends fit after the batch during which the search's max_seconds ran out.
class StopAt : public train::Callback {
 public:
  explicit StopAt(std::chrono::steady_clock::time_point deadline) : deadline_(deadline) {}
  void on_train_batch_end(int64_t, const train::Logs&) override {
    if (std::chrono::steady_clock::now() >= deadline_) model().stop_training() = true;
  }

 private:
  std::chrono::steady_clock::time_point deadline_;
};

class TrialReporter : public train::Callback {
 public:
  struct Best {
    double value;
    int execution = -1;              // the execution that reached it; -1 before any
    TrialPredictions predictions{};  // of the state in the checkpoint; undefined without any
  };
  TrialReporter(Oracle& oracle, std::string trial_id, int execution,
                std::filesystem::path checkpoint, std::filesystem::path end_state,
                std::shared_ptr<Best> best, ValidationRows validation)
      : oracle_(oracle),
        trial_id_(std::move(trial_id)),
        execution_(execution),
        checkpoint_(std::move(checkpoint)),
        end_state_(std::move(end_state)),
        best_(std::move(best)),
        validation_(std::move(validation)),
        holds_best_(best_->execution == execution) {}

  // The checkpoint is written before the epoch is reported: a trial killed in between has the
  // checkpoint of an epoch the oracle lacks, which its resumed run trains and reports again,
  // never an oracle record whose checkpoint is missing.
  void on_epoch_end(int epoch, const train::Logs& logs) override {
    const auto v = logs.get(oracle_.objective().name());
    best_at_last_epoch_ = v && std::isfinite(*v) && oracle_.objective().better(*v, best_->value);
    if (best_at_last_epoch_) {
      best_->value = *v;
      best_->execution = execution_;
      save_trial_checkpoint(checkpoint_, model());
      // Once per improvement, on the state just saved: the only moment it exists in memory.
      best_->predictions =
          validation_.defined() ? predict_rows(model(), validation_) : TrialPredictions{};
      holds_best_ = true;
    }
    MetricValues values(logs.items().begin(), logs.items().end());
    const TrialStatus status = oracle_.update_trial(trial_id_, values, epoch, execution_);
    if (status == TrialStatus::stopped) model().stop_training() = true;
  }

  void on_train_end(const train::Logs&) override {
    if (end_state_.empty() || !holds_best_) return;
    if (best_at_last_epoch_) {
      // An earlier execution's end state no longer pairs with the best.
      std::filesystem::remove_all(end_state_);
    } else {
      save_trial_checkpoint(end_state_, model());
    }
  }

 private:
  Oracle& oracle_;
  std::string trial_id_;
  int execution_;
  std::filesystem::path checkpoint_;
  std::filesystem::path end_state_;
  std::shared_ptr<Best> best_;
  ValidationRows validation_;
  bool holds_best_;  // this execution set the trial's best: its end state pairs with it
  bool best_at_last_epoch_ = false;  // so the checkpoint already is the end state
};

// The trial's values, the space's first, then those an oracle keeps under kTunerValuePrefix
// (Hyperband's rungs), each formatted by `item` and joined by `sep`.
std::string values_text(const HyperParameters& hp, fmt::string_view item, fmt::string_view sep) {
  std::vector<std::string> parts;
  auto add = [&](const std::string& k, const Value& v) {
    parts.push_back(fmt::format(fmt::runtime(item), k, v.to_string()));
  };
  for (const HyperParameter& h : hp.space()) {
    if (hp.has_value(h.name)) add(h.name, hp.get(h.name));
  }
  for (const auto& [k, v] : hp.values()) {
    if (k.starts_with(kTunerValuePrefix)) add(k, v);
  }
  return fmt::format("{}", fmt::join(parts, sep));
}

}  // namespace

Tuner::Tuner(HyperModelArg hypermodel, std::unique_ptr<Oracle> oracle, TunerOptions options)
    : hypermodel_(std::move(hypermodel.model)), options_(std::move(options)) {
  OSPREY_CHECK(hypermodel_ != nullptr, "Tuner: no hypermodel or build function given");
  OSPREY_CHECK(oracle != nullptr, "Tuner: no oracle given");
  OSPREY_CHECK(options_.executions_per_trial >= 1,
               "Tuner: executions_per_trial must be >= 1. Received: {}",
               options_.executions_per_trial);
  OSPREY_CHECK(options_.max_consecutive_failed_trials >= 1,
               "Tuner: max_consecutive_failed_trials must be >= 1. Received: {}",
               options_.max_consecutive_failed_trials);
  OSPREY_CHECK(!options_.project_name.empty(), "Tuner: project_name is empty");
  study_ = std::make_unique<Study>(
      std::move(oracle),
      StudyOptions{.directory = std::filesystem::path(options_.directory) / options_.project_name,
                   .overwrite = options_.overwrite,
                   .tuner_id = options_.tuner_id,
                   .max_trials_failing = options_.max_consecutive_failed_trials,
                   .max_seconds = options_.max_seconds,
                   .verbose = options_.verbose >= 1});
}

std::filesystem::path Tuner::checkpoint_path(const std::string& trial_id) const {
  return oracle().trial_dir(trial_id) / "checkpoint";
}

std::filesystem::path Tuner::end_state_path(const std::string& trial_id) const {
  return oracle().trial_dir(trial_id) / "end_state";
}

std::filesystem::path Tuner::validation_predictions_path(const std::string& trial_id) const {
  return oracle().trial_dir(trial_id) / "val_predictions.safetensors";
}

TrialPredictions Tuner::validation_predictions(const std::string& trial_id) const {
  const std::filesystem::path path = validation_predictions_path(trial_id);
  OSPREY_CHECK_T(IoError, std::filesystem::exists(path),
                 "{}: trial {} kept no validation predictions (it failed, did not finish, or ran "
                 "without validation data)",
                 path.string(), trial_id);
  const io::SafetensorsFile f = io::load_safetensors(path);
  OSPREY_CHECK_T(IoError, f.contains("predictions") && f.contains("targets"),
                 "{}: expected tensors \"predictions\" and \"targets\"", path.string());
  return {f.at("predictions"), f.at("targets")};
}

void Tuner::load_end_state(const std::string& trial_id, Model& model) const {
  const std::filesystem::path end_state = end_state_path(trial_id);
  load_trial_checkpoint(std::filesystem::exists(end_state) ? end_state : checkpoint_path(trial_id),
                        model);
}

void Tuner::populate_initial_space() {
  // Building once with the defaults declares the hyperparameters, as KerasTuner does before the
  // first trial, so the summary and the first proposal see the whole (unconditional) space.
  HyperParameters hp = oracle().hyperparameters().copy_space();
  {
    nn::NameScope names;
    hypermodel_->build(hp);
  }
  oracle().update_space(hp);
}

std::string Tuner::search_space_summary(bool print) {
  if (oracle().hyperparameters().space().empty()) populate_initial_space();
  std::string s = oracle().hyperparameters().summary();
  if (print) fmt::print("{}", s);
  return s;
}

StudyEnd Tuner::search(const Tensor& x, const Tensor& y, const train::FitOptions& options) {
  return run_search(TrainData{x, y, std::nullopt}, options);
}

StudyEnd Tuner::search(const data::Dataset& dataset, const train::FitOptions& options) {
  return run_search(TrainData{Tensor(), Tensor(), dataset}, options);
}

namespace {
// "~4.2s", "~37s", or "?" when nothing says how long the search goes on.
std::string left_text(std::optional<double> left) {
  if (!left) return "?";
  return *left < 10 ? fmt::format("~{:.1f}s", *left) : fmt::format("~{:.0f}s", *left);
}
}  // namespace

void Tuner::print_row(const Trial& t, double seconds) {
  if (options_.verbose < 1) return;
  if (!header_printed_) {
    fmt::print("{:<6} {:>7} {:<9} {:>12} {:>12} {:>8} {:>9} {:>9}  {}\n", "trial", "done", "status",
               oracle().objective().name().substr(0, 12), "best so far", "time", "elapsed", "left",
               "hyperparameters");
    header_printed_ = true;
  }
  const auto best = oracle().get_best_trials(1);
  const std::string score = t.score ? fmt::format("{:.4f}", *t.score) : "-";
  const std::string best_s = best.empty() ? "-" : fmt::format("{:.4f}", *best[0].score);
  const int64_t ended =
      std::count_if(oracle().trials().begin(), oracle().trials().end(),
                    [](const Trial& x) { return x.status != TrialStatus::running; });
  const int n = oracle().max_trials();
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - search_start_).count();
  // What is left: the mean trial time of this search times the trials still to run, capped by
  // max_seconds; unknown when the oracle sets no trial count and no time limit.
  std::optional<double> left;
  if (n > 0 && study_->trials_run() > 0)
    left = study_->trial_seconds() / study_->trials_run() *
           static_cast<double>(std::max<int64_t>(0, n - ended));
  if (const auto& deadline = study_->deadline()) {
    const double to_deadline =
        std::max(0.0, std::chrono::duration<double>(*deadline - now).count());
    left = left ? std::min(*left, to_deadline) : to_deadline;
  }
  fmt::print("{:<6} {:>7} {:<9} {:>12} {:>12} {:>7.1f}s {:>8.1f}s {:>9}  {}\n", t.trial_id,
             n > 0 ? fmt::format("{}/{}", ended, n) : std::to_string(ended), status_name(t.status),
             score, best_s, seconds, elapsed, left_text(left),
             values_text(t.hyperparameters, "{}={}", " "));
  if (t.status == TrialStatus::failed) fmt::print("       error: {}\n", t.message);
  std::fflush(stdout);
}

namespace {

// A Study's runner from a function: the Tuner's trials, which need its protected hooks.
class FunctionRunner : public TrialRunner {
 public:
  explicit FunctionRunner(std::function<Trial(const Trial&)> run) : run_(std::move(run)) {}
  Trial run(const Trial& trial) override { return run_(trial); }

 private:
  std::function<Trial(const Trial&)> run_;
};

}  // namespace

StudyEnd Tuner::run_search(const TrainData& data, const train::FitOptions& options) {
  if (oracle().hyperparameters().space().empty()) populate_initial_space();
  search_start_ = std::chrono::steady_clock::now();
  if (role().is_chief()) {
    study_->serve([&](const Trial& t, double seconds) { print_row(t, seconds); });
    write_hparams_experiment(options.callbacks, oracle());
    study_->check_scored();
    return StudyEnd::finished;
  }
  FunctionRunner runner([&](const Trial& t) { return run_and_end(t, data, options); });
  StudyCallbacks callbacks{.on_trial_end = [&](const Trial& t, double s) { print_row(t, s); }};
  if (options_.verbose >= 2) {
    callbacks.on_trial_start = [](const Trial& t) {
      fmt::print("Search: running trial {}: {}\n", t.trial_id,
                 values_text(t.hyperparameters, "{}={}", " "));
    };
  }
  const StudyEnd end = study_->run(runner, callbacks);
  std::fflush(stdout);
  // A worker whose share is done makes way for a fresh process; the study goes on without it.
  if (end == StudyEnd::share_done) return end;
  // The study's owner writes it: a worker sees only what the chief sent it.
  if (!role().is_worker()) write_hparams_experiment(options.callbacks, oracle());
  study_->check_scored();
  return end;
}

Trial Tuner::run_and_end(const Trial& trial, const TrainData& data,
                         const train::FitOptions& options) {
  // Only the trial's own failure is caught: an IoError from a full disk, an InternalError or
  // bad_alloc stops the search, the trial left running so that a resumed search re-runs it.
  Trial ended;
  try {
    run_trial(trial, data, options);
    ended = oracle().end_trial(trial.trial_id, TrialStatus::completed);
  } catch (const TrialFailed& e) {
    ended = oracle().end_trial(trial.trial_id, TrialStatus::failed, e.what());
  } catch (const ValueError& e) {
    ended = oracle().end_trial(trial.trial_id, TrialStatus::failed, e.what());
  }
  // A failed trial keeps no predictions, even one the oracle failed after it trained.
  if (ended.status == TrialStatus::failed)
    std::filesystem::remove(validation_predictions_path(trial.trial_id));
  return ended;
}

void Tuner::run_trial(const Trial& trial, const TrainData& data, const train::FitOptions& options) {
  auto best =
      std::make_shared<TrialReporter::Best>(TrialReporter::Best{oracle().objective().worst()});
  // A resumed trial starts from the best it reported before it was cut short (its checkpoint
  // holds that state: it is written before an epoch is reported).
  const Objective& objective = oracle().objective();
  for (size_t e = 0; e < trial.executions.size(); ++e) {
    for (const EpochRecord& r : trial.executions[e]) {
      for (const auto& [k, v] : r.metrics) {
        if (k == objective.name() && std::isfinite(v) && objective.better(v, best->value)) {
          best->value = v;
          best->execution = static_cast<int>(e);
        }
      }
    }
  }
  const std::filesystem::path checkpoint = checkpoint_path(trial.trial_id);
  const std::filesystem::path backups = oracle().trial_dir(trial.trial_id) / "backup";
  const std::filesystem::path end_state =
      keeps_end_state(trial) ? end_state_path(trial.trial_id) : std::filesystem::path();
  const std::filesystem::path predictions = validation_predictions_path(trial.trial_id);
  std::filesystem::remove(predictions);  // a re-run trial's earlier attempt's
  for (int execution = 0; execution < options_.executions_per_trial; ++execution) {
    // Keras's clear_session() before each build: layer names, so weight paths, start afresh.
    nn::NameScope names;
    HyperParameters hp = trial.hyperparameters;
    Model model = hypermodel_->build(hp);
    oracle().update_space(hp);
    OSPREY_CHECK(
        model.defined() && model.compiled(),
        "trial {}: the build function must return a compiled model (call model.compile(...))",
        trial.trial_id);
    prepare_model(trial, model);
    train::FitOptions fo = options;
    fo.callbacks = trial_callbacks(options.callbacks, trial, execution);
    if (const auto& deadline = study_->deadline())
      fo.callbacks.push_back(std::make_shared<StopAt>(*deadline));
    fo.callbacks.push_back(std::make_shared<TrialReporter>(oracle(), trial.trial_id, execution,
                                                           checkpoint, end_state, best,
                                                           validation_rows(data, fo)));
    // Last, so an epoch is reported before it is backed up. Kept at the end of fit: an
    // execution that finished restores to its end and trains nothing when the trial resumes.
    auto backup = std::make_shared<train::BackupAndRestore>(
        backups / fmt::format("execution_{}", execution),
        train::BackupAndRestoreOptions{.delete_checkpoint = false});
    fo.callbacks.push_back(backup);
    hypermodel_->fit(hp, model, data, fo);
    if (backup->restored_from() && options_.verbose >= 1) {
      fmt::print("trial {}: execution {} resumed from its backup {}\n", trial.trial_id, execution,
                 backup->restored_from()->string());
    }
  }
  // A resumed trial whose best epoch came before the interruption: its predictions are made
  // from the checkpoint now.
  const ValidationRows rows = validation_rows(data, options);
  if (!best->predictions.predictions.defined() && best->execution >= 0 && rows.defined() &&
      std::filesystem::exists(checkpoint)) {
    nn::NameScope names;
    HyperParameters hp = trial.hyperparameters;
    Model model = hypermodel_->build(hp);
    load_trial_weights(checkpoint, model);
    best->predictions = predict_rows(model, rows);
  }
  std::filesystem::remove_all(backups);
  // Written once, atomically, when every execution is done: a trial cut short keeps none.
  if (best->predictions.predictions.defined()) {
    io::save_safetensors(predictions, {{"predictions", best->predictions.predictions},
                                       {"targets", best->predictions.targets}});
  }
}

std::vector<HyperParameters> Tuner::get_best_hyperparameters(int n) const {
  study_->oracle().refresh();
  std::vector<HyperParameters> out;
  for (const Trial& t : oracle().get_best_trials(n)) out.push_back(t.hyperparameters);
  return out;
}

std::vector<Model> Tuner::get_best_models(int n) {
  study_->oracle().refresh();
  std::vector<Model> out;
  for (const Trial& t : oracle().get_best_trials(n)) {
    nn::NameScope names;  // the paths the trial's checkpoint was written with
    HyperParameters hp = t.hyperparameters;
    Model model = hypermodel_->build(hp);
    load_trial_weights(checkpoint_path(t.trial_id), model);
    out.push_back(model);
  }
  return out;
}

std::string Tuner::results_summary(int n, bool print) const {
  study_->oracle().refresh();
  int failed = 0;
  for (const Trial& t : oracle().trials()) failed += t.status == TrialStatus::failed ? 1 : 0;
  const auto best = oracle().get_best_trials(n);
  std::string s = fmt::format(
      "Results summary\nResults in {}\nShowing {} best trials\nObjective(name=\"{}\", "
      "direction=\"{}\")\n",
      project_dir().string(), best.size(), oracle().objective().name(),
      oracle().objective().direction());
  s += fmt::format("{} trials: {} completed, {} failed\n", oracle().trials().size(),
                   oracle().get_best_trials(1 << 30).size(), failed);
  for (const Trial& t : best) {
    s += fmt::format("\nTrial {} summary\nHyperparameters:\n", t.trial_id);
    s += values_text(t.hyperparameters, "{}: {}\n", "");
    s += fmt::format("Score: {:.6g} (best epoch {})\n", *t.score, t.best_step + 1);
  }
  if (print) fmt::print("{}", s);
  return s;
}

}  // namespace osprey::tune
