// `osprey tune`: tunes a Fashion-MNIST model with RandomSearch, BayesianOptimization or
// Hyperband, printing a row per trial and the final summary. By default the model is the MLP
// (Flatten -> [Dense(units, relu) -> Dropout] x layers -> Dense(10, softmax);
// applications::fashion_mnist_tunable_mlp) over a built-in space (units, layers, dropout,
// learning rate on a log scale, optimizer) or one read from a TOML file; --hypermodel mlp|cnn
// tunes a prebuilt hypermodel instead (tune/hyper_mlp.h, tune/hyper_cnn.h) over its own space,
// which a --space file may then fix or narrow (its tables replace the hypermodel's declarations
// of the same names). The study lives in DIRECTORY/PROJECT; rerunning with the same directory
// resumes it (finished trials are kept).
// --train-samples / --val-samples cut the data down for quick runs and tests.
// --command "PROGRAM {name} ..." tunes any program's metric instead (cli/tune_command.h): no
// model and no data, a --space file is required, and --metric names what the program reports.
//
// A TOML space (tune/search_space_toml.h) has one table per hyperparameter; names the model
// does not read are refused, and built-in hyperparameters the file leaves out stay at their
// defaults (with --hypermodel: stay tunable):
//   [units]
//   type = "int"
//   min = 64
//   max = 512
//   step = 64
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/managed_job.h"
#include "cli/saved_model_command.h"
#include "cli/subcommands.h"
#include "cli/tune_command.h"
#include "cli/usage_error.h"
#include "cli/validators.h"
#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/train/callbacks/tensorboard.h"
#include "osprey/tune/builtin_tuners.h"
#include "osprey/tune/hyper_cnn.h"
#include "osprey/tune/hyper_mlp.h"
#include "osprey/tune/oracle_service.h"
#include "osprey/tune/random_search.h"
#include "osprey/tune/search_space_toml.h"

namespace osprey::cli {

namespace {

struct TuneArgs {
  std::string tuner = "random";
  int max_trials = 10;
  int epochs = 3;
  std::string directory = "osprey_tune";
  std::string project = "fmnist_mlp";  // with --hypermodel NAME: fmnist_hyper_NAME
  std::string space;
  std::string hypermodel;  // empty: the built-in MLP
  std::string objective = "val_accuracy";
  std::string direction;  // min or max; "" infers it from the objective's name
  int executions_per_trial = 1;
  int factor = 3;
  std::string sampler = "random";  // Hyperband's: tune::parse_hyperband_sampler
  int64_t batch_size = 128;
  uint64_t seed = 42;
  std::string data;
  int64_t train_samples = 0;  // 0: all 50,000
  int64_t val_samples = 0;    // 0: all 10,000 (or train_samples / 5 when that is set)
  bool overwrite = false;
  std::string pruner = "none";  // or "median" (tune/oracle.h PrunerOptions)
  int max_consecutive_failed_trials = 3;
  std::string tensorboard;  // TensorBoard log folder ('' off)
  // --command mode (cli/tune_command.h).
  std::string command;
  std::string metric;
  double trial_timeout = 0;
  bool quiet = false;
};

// The built-in space: what `osprey tune` searches without --space.
tune::HyperParameters builtin_space() { return applications::fashion_mnist_mlp_space(); }

// The prebuilt hypermodel --hypermodel names, with the --space file's declarations as its
// `fixed` hyperparameters; a file or name it cannot use is a usage error.
std::shared_ptr<tune::HyperModel> prebuilt_hypermodel(const TuneArgs& a) {
  return as_usage_error([&]() -> std::shared_ptr<tune::HyperModel> {
    std::optional<tune::HyperParameters> fixed;
    if (!a.space.empty()) fixed = tune::hyperparameters_from_toml(a.space);
    if (a.hypermodel == "cnn") {
      return std::make_shared<tune::HyperCNN>(
          tune::HyperCNNOptions{.input_shape = {28, 28}, .num_classes = 10, .fixed = fixed});
    }
    return std::make_shared<tune::HyperMLP>(
        tune::HyperMLPOptions{.input_shape = {28, 28}, .num_classes = 10, .fixed = fixed});
  });
}

// The objective `name` names, in `direction` ("": inferred from the name); a name whose
// direction cannot be inferred is a usage error naming `flag`.
tune::Objective make_objective(const std::string& name, const char* flag,
                               const std::string& direction) {
  if (!direction.empty()) return tune::Objective(name, direction);
  try {
    return tune::Objective(name);
  } catch (const ValueError&) {
    OSPREY_THROW(cli::UsageError,
                 "osprey tune: cannot tell whether to minimize or maximize {} {}; add --direction "
                 "min or --direction max",
                 flag, name);
  }
}

// --command: each trial runs the program; the oracle is the --tuner's, persisted in
// DIRECTORY/PROJECT so that a rerun resumes the study.
void run_command(const TuneArgs& a) {
  set_global_seed(a.seed);
  const tune::HyperParameters space =
      as_usage_error([&] { return tune::hyperparameters_from_toml(a.space); });
  cli::check_command_template(a.command, space);
  const tune::PrunerOptions pruner{.kind = tune::parse_pruner_kind(a.pruner, "--pruner")};
  const tune::OracleOptions oo{.objective = make_objective(a.metric, "--metric", a.direction),
                               .max_trials = a.max_trials,
                               .seed = a.seed,
                               .hyperparameters = space,
                               .pruner = pruner};
  std::unique_ptr<tune::Oracle> oracle;
  if (a.tuner == "random") {
    oracle = std::make_unique<tune::RandomSearchOracle>(oo);
  } else if (a.tuner == "bayesian") {
    oracle = std::make_unique<tune::BayesianOptimizationOracle>(oo);
  } else if (a.tuner == "hyperband") {
    oracle = std::make_unique<tune::HyperbandOracle>(
        oo, tune::HyperbandOracleOptions{
                .max_epochs = a.epochs,
                .factor = a.factor,
                .sampler = tune::parse_hyperband_sampler(a.sampler, "--sampler")});
  } else {
    oracle = std::make_unique<tune::AshaOracle>(
        oo, tune::AshaOracleOptions{.max_epochs = a.epochs, .min_epochs = 1, .factor = a.factor});
  }
  // In a distributed study (OSPREY_TUNER_ID, OSPREY_ORACLE_IP/PORT; `osprey launch --tuners N`)
  // the chief owns the study and serves its oracle; a worker runs trials it asks the chief for.
  tune::Study study(std::move(oracle),
                    {.directory = std::filesystem::path(a.directory) / a.project,
                     .overwrite = a.overwrite,
                     .max_trials_failing = a.max_consecutive_failed_trials,
                     .failing_limit_text = fmt::format("--max-consecutive-failed-trials {}",
                                                       a.max_consecutive_failed_trials),
                     .message_prefix = "osprey tune: "});
  if (study.role().is_chief()) {
    study.serve([](const tune::Trial& t, double) {
      fmt::print("trial {} {}{}\n", t.trial_id, tune::status_name(t.status),
                 t.score ? fmt::format(" score {:.6g}", *t.score) : "");
      std::fflush(stdout);
    });
    study.check_scored();
    const tune::Trial best = study.oracle().get_best_trials(1)[0];
    fmt::print("\nbest trial {}: score {:.6g}\nbest hyperparameters: {}\n", best.trial_id,
               *best.score, best.hyperparameters.to_json().at("values").dump());
    return;
  }
  const tune::Oracle& o = study.oracle();
  fmt::print("osprey tune: {} over {}, objective {} ({}), command: {}\n", a.tuner, a.space,
             o.objective().name(), o.objective().direction(), a.command);
  if (!o.trials().empty()) {
    fmt::print("resuming {}: {} trials already there\n", study.options().directory.string(),
               o.trials().size());
  }
  fmt::print("{}", o.hyperparameters().summary());
  std::fflush(stdout);
  run_command_study(study, {.command = a.command,
                            .epochs = a.epochs,
                            .trial_timeout = a.trial_timeout,
                            .verbose = !a.quiet});
}

void run(const TuneArgs& a) {
  set_global_seed(a.seed);
  const tune::PrunerOptions pruner{.kind = tune::parse_pruner_kind(a.pruner, "--pruner")};
  // A --space file the command cannot use is a usage error, as an option value would be. With
  // --hypermodel the file goes to the hypermodel, and the oracle starts from no space.
  std::shared_ptr<tune::HyperModel> prebuilt;
  tune::HyperParameters space;
  if (!a.hypermodel.empty()) {
    prebuilt = prebuilt_hypermodel(a);
  } else {
    space = a.space.empty() ? builtin_space() : as_usage_error([&] {
      return tune::hyperparameters_from_toml(a.space, builtin_space());
    });
  }
  // Before the data loads: a metric whose direction cannot be inferred is the user's to give.
  const tune::Objective objective = make_objective(a.objective, "--objective", a.direction);
  tune::HyperModelArg build = [space](tune::HyperParameters& hp) {
    return applications::fashion_mnist_tunable_mlp(hp, space);
  };
  if (prebuilt) build = tune::HyperModelArg(prebuilt);
  // The fields every tuner's options share, from the flags.
  auto shared = [&]<class Options>(Options o) {
    o.objective = objective;
    o.max_trials = a.max_trials;
    o.executions_per_trial = a.executions_per_trial;
    o.max_consecutive_failed_trials = a.max_consecutive_failed_trials;
    o.directory = a.directory;
    o.project_name = a.project;
    o.overwrite = a.overwrite;
    o.seed = a.seed;
    o.hyperparameters = space;
    o.pruner = pruner;
    return o;
  };
  std::unique_ptr<tune::Tuner> tuner;
  if (a.tuner == "random") {
    tuner = std::make_unique<tune::RandomSearch>(build, shared(tune::RandomSearchOptions{}));
  } else if (a.tuner == "bayesian") {
    tuner = std::make_unique<tune::BayesianOptimization>(
        build, shared(tune::BayesianOptimizationOptions{}));
  } else if (a.tuner == "asha") {
    // ASHA's rungs go from 1 epoch up to --epochs, factor times more each; --max-trials ends it.
    tuner = std::make_unique<tune::Asha>(
        build,
        shared(tune::AshaOptions{.max_epochs = a.epochs, .min_epochs = 1, .factor = a.factor}));
  } else {
    // Hyperband's budget is its brackets; --epochs is max_epochs and --max-trials caps the trials.
    tuner = std::make_unique<tune::Hyperband>(
        build, shared(tune::HyperbandOptions{
                   .max_epochs = a.epochs,
                   .factor = a.factor,
                   .sampler = tune::parse_hyperband_sampler(a.sampler, "--sampler")}));
  }
  // One run per trial execution, and the HPARAMS tab's sessions (tune/trial_tensorboard.h).
  std::vector<train::CallbackPtr> fit_callbacks;
  if (!a.tensorboard.empty()) fit_callbacks.push_back(callbacks::TensorBoard(a.tensorboard));
  // A distributed study's chief trains nothing: it serves the oracle without loading the data.
  // It writes the TensorBoard experiment when the study ends.
  if (tuner->role().is_chief()) {
    tuner->search_space_summary();
    tuner->search(Tensor(), Tensor(), {.callbacks = fit_callbacks});
    fmt::print("\n");
    tuner->results_summary(3);
    return;
  }
  auto data = datasets::fashion_mnist::load({.directory = a.data});
  auto [train, val] = data.train.split_tail(10000);
  if (a.train_samples > 0) train = train.slice(0, std::min(a.train_samples, train.size()));
  const int64_t nv = a.val_samples > 0
                         ? a.val_samples
                         : (a.train_samples > 0 ? std::max<int64_t>(1, a.train_samples / 5) : 0);
  if (nv > 0) val = val.slice(0, std::min(nv, val.size()));
  fmt::print("osprey tune: {}{} on {} training / {} validation images, objective {}\n", a.tuner,
             a.hypermodel.empty() ? "" : fmt::format(" of the {} hypermodel", a.hypermodel),
             train.size(), val.size(), objective.name() + " (" + objective.direction() + ")");
  const size_t already = tuner->oracle().trials().size();
  if (already > 0)
    fmt::print("resuming {}: {} trials already there\n", tuner->project_dir().string(), already);
  tuner->search_space_summary();
  const tune::StudyEnd end = tuner->search(train.x, train.y,
                                           {.batch_size = a.batch_size,
                                            .epochs = a.epochs,
                                            .verbose = 0,
                                            .callbacks = fit_callbacks,
                                            .validation_data = train::ValidationData(val.x, val.y),
                                            .seed = a.seed});
  // A worker that ran its share of trials makes way for a fresh process (launch --tuners).
  if (end == tune::StudyEnd::share_done) throw ExitCode{tune::kExitNextTrial};
  fmt::print("\n");
  tuner->results_summary(3);
  const auto best = tuner->get_best_hyperparameters(1);
  if (!best.empty())
    fmt::print("\nbest hyperparameters: {}\n", best[0].to_json().at("values").dump());
}

}  // namespace

void add_tune(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand("tune", "Tune a Fashion-MNIST model's hyperparameters");
  cmd->add_option("--tuner", a->tuner, "random, bayesian, hyperband or asha")
      ->check(CLI::IsMember({"random", "bayesian", "hyperband", "asha"}));
  cmd->add_option("--max-trials", a->max_trials,
                  "Trials to run (hyperband: a cap, 0 for its full schedule)")
      ->check(kNonNegative);
  cmd->add_option("--epochs", a->epochs,
                  "Epochs per trial (hyperband, asha: max_epochs; with --command: {epochs})")
      ->check(kPositive);
  cmd->add_option("--directory", a->directory,
                  "Where the study lives; rerun with the same one to resume");
  cmd->add_option("--project-name", a->project,
                  "The study's folder inside --directory (default fmnist_mlp; with --hypermodel "
                  "NAME, fmnist_hyper_NAME)");
  cmd->add_option("--space", a->space,
                  "A TOML file describing the search space, one table per hyperparameter "
                  "(docs/guide/search_space.md; with --hypermodel: hyperparameters it fixes or "
                  "narrows)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--hypermodel", a->hypermodel,
                  "Tune a prebuilt hypermodel over its own space: mlp or cnn")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  cmd->add_option("--objective", a->objective,
                  "The metric to optimize (val_accuracy, val_loss, ...)");
  cmd->add_option("--direction", a->direction,
                  "min or max (default: inferred from --objective: losses and errors are "
                  "minimized, accuracies and AUC maximized)")
      ->check(CLI::IsMember({"min", "max"}));
  cmd->add_option("--executions-per-trial", a->executions_per_trial,
                  "Models trained per trial, metrics averaged")
      ->check(kPositive);
  cmd->add_option("--factor", a->factor, "Hyperband's and ASHA's reduction factor")
      ->check(CLI::Range(2, 100));
  cmd->add_option("--sampler", a->sampler,
                  "Hyperband's new configurations: random (Li et al.) or bayesian (BOHB, from a "
                  "Gaussian process)")
      ->check(CLI::IsMember({"random", "bayesian"}));
  cmd->add_option("--batch-size", a->batch_size, "Batch size")->check(kPositive);
  cmd->add_option("--seed", a->seed, "Random seed (sampling and training)")->check(kNonNegative);
  add_data_option(*cmd, a->data);
  cmd->add_option("--train-samples", a->train_samples,
                  "Use only the first N training images (quick runs, tests)")
      ->check(kNonNegative);
  cmd->add_option("--val-samples", a->val_samples,
                  "Use only N validation images (default: train-samples / 5)")
      ->check(kNonNegative);
  cmd->add_flag("--overwrite", a->overwrite, "Start the study over instead of resuming it");
  cmd->add_option("--pruner", a->pruner,
                  "Stop unpromising trials early: median (a trial worse than the median of the "
                  "others at the same epoch) or none")
      ->check(CLI::IsMember({"none", "median"}));
  cmd->add_option("--max-consecutive-failed-trials", a->max_consecutive_failed_trials,
                  "Stop the search after this many failed trials in a row")
      ->check(kPositive);
  cmd->add_option("--command", a->command,
                  "Tune a program instead of a model: run under /bin/sh -c per trial, with "
                  "{NAME} for each hyperparameter of --space and {epochs}, {initial_epoch}, "
                  "{trial_id}, {trial_dir}, {parent_trial_dir} replaced by shell-quoted values "
                  "({{ and }} are braces). A trial hyperband or asha promoted gets its parent "
                  "trial's folder as {parent_trial_dir} and $OSPREY_PARENT_TRIAL_DIR (else empty) "
                  "to resume from it. It reports on stdout 'osprey-metric NAME=VALUE epoch=E' (E "
                  "counted from 1) or as JSON lines in $OSPREY_METRIC_FILE (= "
                  "$CLOUD_ML_HP_METRIC_FILE, as cloudml-hypertune writes)");
  cmd->add_option("--metric", a->metric,
                  "With --command: the metric the program reports that the search optimizes");
  cmd->add_option("--trial-timeout", a->trial_timeout,
                  "With --command: seconds a trial may run before it is stopped and failed")
      ->check(kPositive);
  cmd->add_flag("--quiet", a->quiet, "With --command: do not echo the trials' output");
  cmd->add_option("--tensorboard", a->tensorboard,
                  "TensorBoard logs: a run per trial execution in DIR/trial_<id>/execution_<k>, "
                  "each a session of the HPARAMS tab, and the study's hyperparameters and "
                  "metrics in DIR (default: $AIP_TENSORBOARD_LOG_DIR when set)");
  auto* project = cmd->get_option("--project-name");
  auto* objective = cmd->get_option("--objective");
  cmd->callback([a, cmd, project, objective] {
    if (!a->hypermodel.empty() && project->count() == 0)
      a->project = "fmnist_hyper_" + a->hypermodel;
    const auto given = [cmd](const char* flag) { return cmd->get_option(flag)->count() > 0; };
    // Managed jobs (Vertex AI): the platform's TensorBoard folder unless the flag says otherwise.
    if (a->command.empty())
      default_from_managed_job(*cmd, "--tensorboard", "AIP_TENSORBOARD_LOG_DIR", a->tensorboard);
    check_folder_option("tune", "--tensorboard", a->tensorboard);
    if (a->command.empty()) {
      for (const char* flag : {"--metric", "--trial-timeout", "--quiet"}) {
        OSPREY_CHECK_T(cli::UsageError, !given(flag),
                       "osprey tune: {} is for --command; a model's objective is --objective",
                       flag);
      }
    } else {
      for (const char* flag : {"--hypermodel", "--executions-per-trial", "--batch-size", "--data",
                               "--train-samples", "--val-samples", "--tensorboard"}) {
        OSPREY_CHECK_T(cli::UsageError, !given(flag),
                       "osprey tune: {} is for tuning a model; with --command the program trains "
                       "its own",
                       flag);
      }
      OSPREY_CHECK_T(cli::UsageError, !a->space.empty(),
                     "osprey tune: --command needs --space SPACE.toml, the hyperparameters to "
                     "substitute into it");
      if (a->metric.empty() && objective->count() > 0) a->metric = a->objective;
      OSPREY_CHECK_T(cli::UsageError, !a->metric.empty(),
                     "osprey tune: --command needs --metric NAME, the metric the program reports");
      OSPREY_CHECK_T(cli::UsageError, objective->count() == 0 || a->objective == a->metric,
                     "osprey tune: --metric {} and --objective {} differ; with --command give "
                     "--metric only",
                     a->metric, a->objective);
      if (project->count() == 0) a->project = "command_study";
    }
    OSPREY_CHECK_T(cli::UsageError, a->tuner == "hyperband" || a->max_trials > 0,
                   "osprey tune: --max-trials must be positive for the {} tuner", a->tuner);
    OSPREY_CHECK_T(cli::UsageError, a->tuner == "hyperband" || a->sampler == "random",
                   "osprey tune: --sampler is Hyperband's; the {} tuner has its own way of "
                   "choosing values",
                   a->tuner);
    if (a->command.empty()) {
      run(*a);
    } else {
      run_command(*a);
    }
  });
}

}  // namespace osprey::cli
