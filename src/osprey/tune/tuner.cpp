#include "osprey/tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "osprey/core/error.h"
#include "osprey/io/safetensors.h"
#include "osprey/optim/optimizer.h"
#include "osprey/train/trainer.h"

namespace osprey::tune {

namespace {

// Reports each epoch to the oracle and keeps the best weights of the trial (over all its
// executions) on disk. Given a resume path (a trial that may be promoted), it also keeps the
// state that the execution holding the best ended in, which is where a promoted trial goes on
// from; when that execution's best epoch was its last, the checkpoint already is that state and
// no second file is written.
class TrialReporter : public train::Callback {
 public:
  struct Best {
    double value;
  };
  TrialReporter(Oracle& oracle, std::string trial_id, int execution, std::filesystem::path checkpoint,
                std::filesystem::path resume, std::shared_ptr<Best> best, Shape sample_shape)
      : oracle_(oracle), trial_id_(std::move(trial_id)), execution_(execution), checkpoint_(std::move(checkpoint)),
        resume_(std::move(resume)), best_(std::move(best)), sample_shape_(sample_shape) {}

  void on_epoch_end(int epoch, const train::Logs& logs) override {
    MetricValues values(logs.items().begin(), logs.items().end());
    const TrialStatus status = oracle_.update_trial(trial_id_, values, epoch, execution_);
    const auto v = logs.get(oracle_.objective().name());
    best_at_last_epoch_ = v && std::isfinite(*v) && oracle_.objective().better(*v, best_->value);
    if (best_at_last_epoch_) {
      best_->value = *v;
      save_trial_weights(checkpoint_, model(), sample_shape_);
      holds_best_ = true;
    }
    if (status == TrialStatus::stopped) model().stop_training() = true;
  }

  void on_train_end(const train::Logs&) override {
    if (resume_.empty() || !holds_best_) return;
    if (best_at_last_epoch_) {
      std::filesystem::remove(resume_);  // an earlier execution's end state no longer pairs with the best
    } else {
      save_trial_weights(resume_, model(), sample_shape_);
    }
  }

 private:
  Oracle& oracle_;
  std::string trial_id_;
  int execution_;
  std::filesystem::path checkpoint_;
  std::filesystem::path resume_;
  std::shared_ptr<Best> best_;
  Shape sample_shape_;
  bool holds_best_ = false;          // this execution set the trial's best, so its end state pairs with it
  bool best_at_last_epoch_ = false;  // the latest epoch set the best: the checkpoint is the end state
};

// Hyperband (the oracle that sets these values) promotes out of every round of a bracket but
// its last.
bool may_be_promoted(const HyperParameters& hp) {
  return hp.has_value("tuner/round") && hp.has_value("tuner/bracket") &&
         hp.get("tuner/round").as_int() < hp.get("tuner/bracket").as_int();
}

std::string format_values(const HyperParameters& hp) {
  std::vector<std::string> parts;
  for (const HyperParameter& h : hp.space()) {
    if (hp.has_value(h.name)) parts.push_back(fmt::format("{}={}", h.name, hp.get(h.name).to_string()));
  }
  for (const auto& [k, v] : hp.values()) {
    if (k == "tuner/epochs" || k == "tuner/trial_id") parts.push_back(fmt::format("{}={}", k, v.to_string()));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace

namespace {

// Optimizer slots are keyed by variable path, which differs between builds of the same
// architecture, so a checkpoint names them by the variable's index: "optimizer/#0003/velocity".
constexpr std::string_view kOptimizerPrefix = "optimizer/";

std::string slot_variable_path(const std::string& entry) {
  const size_t cut = entry.rfind('/');
  return cut == std::string::npos || cut < kOptimizerPrefix.size() ? std::string()
                                                                   : entry.substr(kOptimizerPrefix.size(), cut - kOptimizerPrefix.size());
}

io::SafetensorsFile load_trial_file(const std::filesystem::path& path, Model& model) {
  OSPREY_CHECK_T(IoError, std::filesystem::exists(path), "load_trial_weights: {} does not exist", path.string());
  io::SafetensorsFile file = io::load_safetensors(path);
  if (model.variables().empty()) {
    auto it = file.metadata.find("sample_shape");
    std::vector<int64_t> dims;
    if (it != file.metadata.end()) dims = nlohmann::json::parse(it->second).get<std::vector<int64_t>>();
    OSPREY_CHECK_T(IoError, !dims.empty(),
                   "{}: the model has no weights yet and the file does not say the input shape; give the model an "
                   "input_shape",
                   path.string());
    model.build(Shape(dims));
  }
  const auto vars = model.variables();
  std::vector<Tensor> weights(vars.size());
  size_t count = 0;
  for (const auto& [name, t] : file.tensors) {
    if (name.starts_with(kOptimizerPrefix)) continue;
    const size_t colon = name.find(':');
    size_t i = vars.size();
    if (colon == 4 && std::all_of(name.begin(), name.begin() + 4, [](char c) { return c >= '0' && c <= '9'; })) {
      i = std::stoul(name.substr(0, 4));
    }
    OSPREY_CHECK_T(IoError, i < vars.size() && !weights[i].defined(),
                   "{}: tensor '{}' is not weight NNNN:<name> of a model with {} weights", path.string(), name,
                   vars.size());
    OSPREY_CHECK_T(IoError, t.shape() == vars[i].value().shape(), "{}: tensor {} ('{}') has shape {}, weight {} needs {}",
                   path.string(), i, name, t.shape().to_string(), vars[i].name(), vars[i].value().shape().to_string());
    weights[i] = t;
    ++count;
  }
  OSPREY_CHECK_T(IoError, count == vars.size(), "{}: holds {} weights, the model has {}", path.string(), count,
                 vars.size());
  model.set_weights(weights);
  return file;
}

}  // namespace

void save_trial_weights(const std::filesystem::path& path, const Model& model, const Shape& sample_shape) {
  io::NamedTensors named;
  const auto vars = model.variables();
  std::map<std::string, size_t, std::less<>> index;
  for (size_t i = 0; i < vars.size(); ++i) {
    named.emplace_back(fmt::format("{:04d}:{}", i, vars[i].name()), vars[i].value());
    index.emplace(vars[i].name(), i);
  }
  if (model.compiled()) {
    for (auto& [name, t] : model.trainer().optimizer().state("optimizer")) {
      const auto it = index.find(slot_variable_path(name));
      named.emplace_back(it == index.end() ? name
                                           : fmt::format("{}#{:04d}{}", kOptimizerPrefix, it->second,
                                                         name.substr(kOptimizerPrefix.size() + it->first.size())),
                         t);
    }
  }
  io::SafetensorsMetadata meta;
  meta["sample_shape"] = nlohmann::json(sample_shape.to_vector()).dump();
  io::save_safetensors(path, named, meta);
}

void load_trial_weights(const std::filesystem::path& path, Model& model) { load_trial_file(path, model); }

void load_trial_checkpoint(const std::filesystem::path& path, Model& model) {
  const io::SafetensorsFile file = load_trial_file(path, model);
  if (!model.compiled()) return;
  const auto vars = model.variables();
  std::vector<std::pair<std::string, Tensor>> state;
  for (const auto& [name, t] : file.tensors) {
    if (!name.starts_with(kOptimizerPrefix)) continue;
    std::string entry = name;
    const std::string var = slot_variable_path(name);
    if (var.size() == 5 && var[0] == '#') {
      const size_t i = std::stoul(var.substr(1));
      OSPREY_CHECK_T(IoError, i < vars.size(), "{}: optimizer entry '{}' names weight {}, the model has {}",
                     path.string(), name, i, vars.size());
      entry = fmt::format("{}{}{}", kOptimizerPrefix, vars[i].name(), name.substr(kOptimizerPrefix.size() + var.size()));
    }
    state.emplace_back(std::move(entry), t);
  }
  if (state.empty()) return;  // written by a model that had not been compiled
  try {
    model.trainer().optimizer().load_state(state, "optimizer");
  } catch (const Error& e) {
    throw IoError(fmt::format("{}: the optimizer state does not fit this model's optimizer: {}", path.string(), e.what()));
  }
}

Tuner::Tuner(HyperModelArg hypermodel, std::unique_ptr<Oracle> oracle, TunerOptions options)
    : hypermodel_(std::move(hypermodel.model)), oracle_(std::move(oracle)), options_(std::move(options)) {
  OSPREY_CHECK(hypermodel_ != nullptr, "Tuner: no hypermodel or build function given");
  OSPREY_CHECK(oracle_ != nullptr, "Tuner: no oracle given");
  OSPREY_CHECK(options_.executions_per_trial >= 1, "Tuner: executions_per_trial must be >= 1. Received: {}",
               options_.executions_per_trial);
  OSPREY_CHECK(options_.max_consecutive_failed_trials >= 1, "Tuner: max_consecutive_failed_trials must be >= 1. Received: {}",
               options_.max_consecutive_failed_trials);
  OSPREY_CHECK(!options_.project_name.empty(), "Tuner: project_name is empty");
  project_dir_ = std::filesystem::path(options_.directory) / options_.project_name;
  if (options_.overwrite && std::filesystem::exists(project_dir_)) std::filesystem::remove_all(project_dir_);
  oracle_->set_directory(project_dir_);
  oracle_->reload();
}

std::filesystem::path Tuner::checkpoint_path(const std::string& trial_id) const {
  return oracle_->trial_dir(trial_id) / "checkpoint.safetensors";
}

std::filesystem::path Tuner::resume_path(const std::string& trial_id) const {
  return oracle_->trial_dir(trial_id) / "resume.safetensors";
}

void Tuner::populate_initial_space() {
  // Building once with the defaults declares the hyperparameters, as KerasTuner does before the
  // first trial, so the summary and the first proposal see the whole (unconditional) space.
  HyperParameters hp = oracle_->hyperparameters().copy_space();
  hypermodel_->build(hp);
  oracle_->update_space(hp);
}

std::string Tuner::search_space_summary(bool print) {
  if (oracle_->hyperparameters().space().empty()) populate_initial_space();
  const std::string s = oracle_->hyperparameters().summary();
  if (print) fmt::print("{}", s);
  return s;
}

void Tuner::search(const Tensor& x, const Tensor& y, const train::FitOptions& options) {
  run_search(TrainData{x, y, std::nullopt}, options);
}

void Tuner::search(const data::Dataset& dataset, const train::FitOptions& options) {
  run_search(TrainData{Tensor(), Tensor(), dataset}, options);
}

void Tuner::print_row(const Trial& t, double seconds) {
  if (options_.verbose < 1) return;
  if (!header_printed_) {
    fmt::print("{:<6} {:<9} {:>12} {:>12} {:>8}  {}\n", "trial", "status",
               oracle_->objective().name().substr(0, 12), "best so far", "time", "hyperparameters");
    header_printed_ = true;
  }
  const auto best = oracle_->get_best_trials(1);
  const std::string score = t.score ? fmt::format("{:.4f}", *t.score) : "-";
  const std::string best_s = best.empty() ? "-" : fmt::format("{:.4f}", *best[0].score);
  fmt::print("{:<6} {:<9} {:>12} {:>12} {:>7.1f}s  {}\n", t.trial_id, status_name(t.status), score, best_s, seconds,
             format_values(t.hyperparameters));
  if (t.status == TrialStatus::failed) fmt::print("       error: {}\n", t.message);
  std::fflush(stdout);
}

void Tuner::run_search(const TrainData& data, const train::FitOptions& options) {
  sample_shape_ = data.sample_shape();
  if (oracle_->hyperparameters().space().empty()) populate_initial_space();
  int consecutive_failures = 0;
  std::string last_error;
  while (true) {
    const Trial trial = oracle_->create_trial(options_.tuner_id);
    if (trial.status == TrialStatus::stopped) break;
    OSPREY_ASSERT(trial.status != TrialStatus::idle, "{}: idle with no other trial running (one tuner)",
                  oracle_->class_name());
    if (options_.verbose >= 2) fmt::print("Search: running trial {}: {}\n", trial.trial_id, format_values(trial.hyperparameters));
    const auto start = std::chrono::steady_clock::now();
    Trial ended;
    try {
      run_trial(trial, data, options);
      ended = oracle_->end_trial(trial.trial_id, TrialStatus::completed);
    } catch (const std::exception& e) {
      ended = oracle_->end_trial(trial.trial_id, TrialStatus::failed, e.what());
    }
    print_row(ended, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (ended.status == TrialStatus::failed) {
      last_error = ended.message;
      if (++consecutive_failures >= options_.max_consecutive_failed_trials) {
        OSPREY_THROW(Error,
                     "search stopped: {} trials failed in a row (max_consecutive_failed_trials={}); the last, trial "
                     "{}, failed with: {}",
                     consecutive_failures, options_.max_consecutive_failed_trials, ended.trial_id, last_error);
      }
    } else {
      consecutive_failures = 0;
    }
  }
}

void Tuner::run_trial(const Trial& trial, const TrainData& data, const train::FitOptions& options) {
  auto best = std::make_shared<TrialReporter::Best>(TrialReporter::Best{oracle_->objective().worst()});
  const std::filesystem::path checkpoint = checkpoint_path(trial.trial_id);
  std::filesystem::create_directories(checkpoint.parent_path());
  for (int execution = 0; execution < options_.executions_per_trial; ++execution) {
    HyperParameters hp = trial.hyperparameters;
    Model model = hypermodel_->build(hp);
    oracle_->update_space(hp);
    OSPREY_CHECK(model.defined() && model.compiled(),
                 "trial {}: the build function must return a compiled model (call model.compile(...))", trial.trial_id);
    train::FitOptions fo = options;
    fo.callbacks.clear();
    for (const auto& c : options.callbacks) {
      auto copy = c->clone();
      fo.callbacks.push_back(copy ? copy : c);
    }
    if (hp.has_value("tuner/epochs")) {
      fo.epochs = static_cast<int>(hp.get("tuner/epochs").as_int());
      fo.initial_epoch = static_cast<int>(hp.get("tuner/initial_epoch").as_int());
    }
    if (hp.has_value("tuner/trial_id")) {
      // A promoted Hyperband trial goes on from where its parent stopped (weights, optimizer
      // slots and iterations after its last epoch, not its best one), as successive halving
      // continues a configuration, so its initial_epoch is the number of epochs its weights
      // have really seen. Without a resume file the parent's best epoch was its last.
      const std::string parent = hp.get("tuner/trial_id").as_string();
      const std::filesystem::path from = resume_path(parent);
      load_trial_checkpoint(std::filesystem::exists(from) ? from : checkpoint_path(parent), model);
    }
    const std::filesystem::path resume = may_be_promoted(hp) ? resume_path(trial.trial_id) : "";
    fo.callbacks.push_back(std::make_shared<TrialReporter>(*oracle_, trial.trial_id, execution, checkpoint, resume,
                                                           best, sample_shape_));
    hypermodel_->fit(hp, model, data, fo);
  }
}

std::vector<HyperParameters> Tuner::get_best_hyperparameters(int n) const {
  std::vector<HyperParameters> out;
  for (const Trial& t : oracle_->get_best_trials(n)) out.push_back(t.hyperparameters);
  return out;
}

std::vector<Model> Tuner::get_best_models(int n) {
  std::vector<Model> out;
  for (const Trial& t : oracle_->get_best_trials(n)) {
    HyperParameters hp = t.hyperparameters;
    Model model = hypermodel_->build(hp);
    load_trial_weights(checkpoint_path(t.trial_id), model);
    out.push_back(model);
  }
  return out;
}

std::string Tuner::results_summary(int n, bool print) const {
  int failed = 0;
  for (const Trial& t : oracle_->trials()) failed += t.status == TrialStatus::failed ? 1 : 0;
  const auto best = oracle_->get_best_trials(n);
  std::string s = fmt::format("Results summary\nResults in {}\nShowing {} best trials\nObjective(name=\"{}\", direction=\"{}\")\n",
                              project_dir_.string(), best.size(), oracle_->objective().name(),
                              oracle_->objective().direction());
  s += fmt::format("{} trials: {} completed, {} failed\n", oracle_->trials().size(), oracle_->get_best_trials(1 << 30).size(),
                   failed);
  for (const Trial& t : best) {
    s += fmt::format("\nTrial {} summary\nHyperparameters:\n", t.trial_id);
    for (const HyperParameter& h : t.hyperparameters.space()) {
      if (t.hyperparameters.has_value(h.name)) s += fmt::format("{}: {}\n", h.name, t.hyperparameters.get(h.name).to_string());
    }
    for (const auto& [k, v] : t.hyperparameters.values()) {
      if (k.rfind("tuner/", 0) == 0) s += fmt::format("{}: {}\n", k, v.to_string());
    }
    s += fmt::format("Score: {:.6g} (best epoch {})\n", *t.score, t.best_step + 1);
  }
  if (print) fmt::print("{}", s);
  return s;
}

}  // namespace osprey::tune
