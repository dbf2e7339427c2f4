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
// --hypermodel transformer|lstm tunes a text hypermodel (tune/hyper_transformer.h,
// tune/hyper_lstm.h) as a language model of the text file --data names, read as `osprey train
// --model gpt|lstm` reads it (cli/train_text.h: --tokenizer, --block-size windows, the last
// --validation-split of the tokens held out); the objective defaults to val_loss, the study to
// text_hyper_NAME, and the best model is saved with its tokenizer in DIRECTORY/PROJECT/best_model
// for `osprey generate`. There --train-samples is the random training windows per epoch (default
// 250 batches' worth, as osprey train) and --val-samples the held-out windows (default: all).
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
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/managed_job.h"
#include "cli/subcommands.h"
#include "cli/train_text.h"
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
#include "osprey/tune/hyper_lstm.h"
#include "osprey/tune/hyper_mlp.h"
#include "osprey/tune/hyper_transformer.h"
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
  std::string project = "fmnist_mlp";  // with --hypermodel NAME: fmnist_hyper_NAME, text_hyper_NAME
  std::string space;
  std::string hypermodel;                  // empty: the built-in MLP
  std::string objective = "val_accuracy";  // text hypermodels: val_loss
  std::string direction;                   // min or max; "" infers it from the objective's name
  int executions_per_trial = 1;
  int factor = 3;
  std::string sampler = "random";  // Hyperband's: tune::parse_hyperband_sampler
  int64_t batch_size = 128;        // text hypermodels: 12 windows, as osprey train
  uint64_t seed = 42;
  std::string data;
  int64_t train_samples = 0;  // 0: all 50,000 (text: windows per epoch, 250 batches' worth)
  int64_t val_samples = 0;    // 0: all 10,000 (or train_samples / 5 when that is set; text: all)
  // --hypermodel transformer|lstm (cli/train_text.h)
  std::string tokenizer = "char";
  int64_t block_size = 64;
  double validation_split = 0.1;
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

// --hypermodel values that tune a language model of a text file.
bool is_text_hypermodel(const std::string& name) { return name == "transformer" || name == "lstm"; }

// The prebuilt hypermodel --hypermodel names, with the --space file's declarations as its
// `fixed` hyperparameters; a file or name it cannot use is a usage error. A text hypermodel is a
// language model over the tokenizer's vocabulary.
std::shared_ptr<tune::HyperModel> prebuilt_hypermodel(const TuneArgs& a, int64_t vocab_size) {
  return as_usage_error([&]() -> std::shared_ptr<tune::HyperModel> {
    std::optional<tune::HyperParameters> fixed;
    if (!a.space.empty()) fixed = tune::hyperparameters_from_toml(a.space);
    if (a.hypermodel == "transformer") {
      return std::make_shared<tune::HyperTransformer>(
          tune::HyperTransformerOptions{.vocab_size = vocab_size,
                                        .sequence_length = a.block_size,
                                        .task = "language_model",
                                        .fixed = fixed});
    }
    if (a.hypermodel == "lstm") {
      return std::make_shared<tune::HyperLSTM>(
          tune::HyperLSTMOptions{.vocab_size = vocab_size,
                                 .sequence_length = a.block_size,
                                 .task = "language_model",
                                 .fixed = fixed});
    }
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

// What a search prints before its first trial: the trials a rerun resumes from, and the space.
void resume_and_summarize(tune::Tuner& tuner) {
  const size_t already = tuner.oracle().trials().size();
  if (already > 0)
    fmt::print("resuming {}: {} trials already there\n", tuner.project_dir().string(), already);
  tuner.search_space_summary();
}

void print_best(tune::Tuner& tuner) {
  const auto best = tuner.get_best_hyperparameters(1);
  if (!best.empty())
    fmt::print("\nbest hyperparameters: {}\n", best[0].to_json().at("values").dump());
}

// The best trial's model (its best epoch's weights) with the tokenizer beside it, as `osprey
// train --model gpt|lstm --output` saves one, in PROJECT/best_model for `osprey generate`.
void save_best_text_model(tune::Tuner& tuner, const data::text::Tokenizer& tokenizer) {
  std::vector<Model> best = tuner.get_best_models(1);
  if (best.empty()) return;
  const std::string dir = (tuner.project_dir() / "best_model").string();
  best[0].save(dir, {.json_files = {{"tokenizer.json", tokenizer.to_json()}}});
  fmt::print(
      "best model saved to {}/ (config.json, model.safetensors, tokenizer.json); sample it "
      "with `osprey generate {}`\n",
      dir, dir);
}

void run(const TuneArgs& a) {
  set_global_seed(a.seed);
  const tune::PrunerOptions pruner{.kind = tune::parse_pruner_kind(a.pruner, "--pruner")};
  // A text hypermodel's vocabulary is the tokenizer's, so the text is read first (by the chief of
  // a distributed study too, which builds the best model at the end).
  const bool text = is_text_hypermodel(a.hypermodel);
  std::optional<TextData> text_data;
  if (text) {
    text_data =
        load_text_data({.command = "osprey tune",
                        .path = a.data,
                        .tokenizer = a.tokenizer,
                        .block_size = a.block_size,
                        .validation_split = a.validation_split,
                        .batch_size = a.batch_size,
                        .train_windows = a.train_samples > 0 ? a.train_samples : 250 * a.batch_size,
                        .val_windows = a.val_samples,
                        .seed = a.seed});
  }
  // A --space file the command cannot use is a usage error, as an option value would be. With
  // --hypermodel the file goes to the hypermodel, and the oracle starts from no space.
  std::shared_ptr<tune::HyperModel> prebuilt;
  tune::HyperParameters space;
  if (!a.hypermodel.empty()) {
    prebuilt = prebuilt_hypermodel(a, text ? text_data->tokenizer->vocab_size() : 0);
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
    if (text) save_best_text_model(*tuner, *text_data->tokenizer);
    return;
  }
  if (text) {
    fmt::print(
        "{}osprey tune: {} of the {} hypermodel on {} training windows of {} tokens per "
        "epoch / {} validation windows, objective {} ({})\n",
        text_data->summary, a.tuner, a.hypermodel,
        a.train_samples > 0 ? a.train_samples : 250 * a.batch_size, a.block_size,
        (text_data->val_tokens - 1) / a.block_size, objective.name(), objective.direction());
    resume_and_summarize(*tuner);
    const tune::StudyEnd end = tuner->search(text_data->train, {.epochs = a.epochs,
                                                                .verbose = 0,
                                                                .callbacks = fit_callbacks,
                                                                .validation_data = text_data->val,
                                                                .seed = a.seed});
    if (end == tune::StudyEnd::share_done) throw ExitCode{tune::kExitNextTrial};
    fmt::print("\n");
    tuner->results_summary(3);
    print_best(*tuner);
    // A worker of a distributed study leaves the best model to the chief.
    if (!tuner->role().distributed()) save_best_text_model(*tuner, *text_data->tokenizer);
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
  resume_and_summarize(*tuner);
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
  print_best(*tuner);
}

}  // namespace

void add_tune(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand(
      "tune", "Tune a Fashion-MNIST model's hyperparameters, or a language model's on a text file");
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
                  "NAME, fmnist_hyper_NAME, or text_hyper_NAME for transformer and lstm)");
  cmd->add_option("--space", a->space,
                  "A TOML file describing the search space, one table per hyperparameter "
                  "(docs/guide/search_space.md; with --hypermodel: hyperparameters it fixes or "
                  "narrows)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--hypermodel", a->hypermodel,
                  "Tune a prebuilt hypermodel over its own space: mlp or cnn on Fashion-MNIST, or "
                  "transformer or lstm as a language model of the text file --data names")
      ->check(CLI::IsMember({"mlp", "cnn", "transformer", "lstm"}));
  cmd->add_option("--objective", a->objective,
                  "The metric to optimize (val_accuracy, val_loss, ...; default val_accuracy, or "
                  "val_loss for transformer and lstm)");
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
  cmd->add_option("--batch-size", a->batch_size,
                  "Batch size (default 128; transformer and lstm: 12 windows, as osprey train)")
      ->check(kPositive);
  cmd->add_option("--seed", a->seed, "Random seed (sampling and training)")->check(kNonNegative);
  cmd->add_option("--data", a->data,
                  "Directory with the Fashion-MNIST IDX files; with --hypermodel transformer|lstm, "
                  "the text file to learn from")
      ->check(CLI::ExistingPath);
  cmd->add_option("--train-samples", a->train_samples,
                  "Use only the first N training images (quick runs, tests); transformer and "
                  "lstm: N random training windows per epoch (default 250 batches' worth)")
      ->check(kNonNegative);
  cmd->add_option("--val-samples", a->val_samples,
                  "Use only N validation images (default: train-samples / 5); transformer and "
                  "lstm: the first N held-out windows (default: all)")
      ->check(kNonNegative);
  add_tokenizer_option(*cmd, a->tokenizer, "--hypermodel transformer|lstm");
  cmd->add_option("--block-size", a->block_size,
                  "--hypermodel transformer|lstm: tokens per window (the model's sequence length)")
      ->check(kPositive);
  cmd->add_option("--validation-split", a->validation_split,
                  "--hypermodel transformer|lstm: the last fraction of the tokens, held out for "
                  "the validation metrics (default 0.1)")
      ->check(CLI::Range(0.0, 1.0));
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
    const bool text = is_text_hypermodel(a->hypermodel);
    if (!a->hypermodel.empty() && project->count() == 0)
      a->project = (text ? "text_hyper_" : "fmnist_hyper_") + a->hypermodel;
    const auto given = [cmd](const char* flag) { return cmd->get_option(flag)->count() > 0; };
    // The text hypermodels read --data as a text file and have options of their own (--command's
    // checks are below).
    if (a->command.empty() && text) {
      OSPREY_CHECK_T(cli::UsageError, !a->data.empty() && !std::filesystem::is_directory(a->data),
                     "osprey tune: --hypermodel {} needs --data FILE, a text file to learn from{}",
                     a->hypermodel,
                     a->data.empty() ? "" : fmt::format("; {} is a folder", a->data));
      OSPREY_CHECK_T(cli::UsageError, a->validation_split > 0 && a->validation_split < 1,
                     "osprey tune: --validation-split must be in (0, 1). Received: {}",
                     a->validation_split);
      if (objective->count() == 0) a->objective = "val_loss";
      if (!given("--batch-size")) a->batch_size = 12;
    } else if (a->command.empty()) {
      for (const char* flag : {"--tokenizer", "--block-size", "--validation-split"}) {
        OSPREY_CHECK_T(cli::UsageError, !given(flag),
                       "osprey tune: {} is for the text hypermodels (--hypermodel transformer or "
                       "lstm)",
                       flag);
      }
      OSPREY_CHECK_T(cli::UsageError, a->data.empty() || std::filesystem::is_directory(a->data),
                     "osprey tune: --data {} is a file; the Fashion-MNIST models read a folder of "
                     "IDX files (a text file is for --hypermodel transformer or lstm)",
                     a->data);
    }
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
                               "--train-samples", "--val-samples", "--tensorboard", "--tokenizer",
                               "--block-size", "--validation-split"}) {
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
