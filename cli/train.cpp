// `osprey train`: trains the default Fashion-MNIST model (the seeds' MLP, or a small CNN),
// printing the summary, Keras progress bars and the test accuracy; --strategy, --devices,
// --dtype-policy and --compression give the seeds' distribution and precision recipes without C++
// (`osprey launch -n 2 -- osprey train --strategy multi_worker` for two workers); --backup makes
// a killed run resumable (a relaunch with the same options goes on at the exact step).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>

#include "cli/saved_model_command.h"
#include "cli/subcommands.h"
#include "cli/usage_error.h"
#include "cli/validators.h"
#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/mirrored_strategy.h"
#include "osprey/distribute/multi_worker_mirrored_strategy.h"
#include "osprey/distribute/one_device_strategy.h"
#include "osprey/distribute/parameter_server_strategy.h"
#include "osprey/io/atomic_directory.h"
#include "osprey/optim/factory.h"
#include "osprey/precision/dtype_policy.h"
#include "osprey/train/callbacks/backup_and_restore.h"
#include "osprey/train/callbacks/checkpoint_csv.h"
#include "osprey/train/callbacks/early_stopping.h"
#include "osprey/train/callbacks/tensorboard.h"
#include "osprey/train/model.h"

namespace osprey::cli {

namespace {
struct TrainArgs {
  std::string model = "mlp";
  int epochs = 3;
  int64_t batch_size = 128;
  std::string optimizer = "adam";
  double lr = 1e-3;
  uint64_t seed = 42;
  std::string data;
  std::string output = "osprey_fmnist_model";
  std::string strategy = "one_device";
  int devices = 1;  // per worker
  std::string dtype_policy = "float32";
  std::string compression = "none";
  std::string communication = "auto";
  std::optional<double> timeout;  // seconds: deadline of every cross-worker call (default 300)
  int64_t steps_per_epoch = -1;
  double validation_split = 0.0;  // the last fraction of the training images, held out
  std::string backup;             // BackupAndRestore folder ('' off)
  std::string checkpoint_dir;     // ModelCheckpoint folder ('' off)
  std::string backup_freq = "epoch";
  std::string tensorboard;            // TensorBoard log folder ('' off)
  int histogram_freq = 0;             // epochs between weight histograms in it
  std::string csv_log;                // CSVLogger file ('' off)
  std::optional<int> early_stopping;  // EarlyStopping's patience
  // --strategy parameter_server
  std::string ps_mode = "sync";
  int replicas_to_aggregate = 0;
  int64_t max_staleness = -1;
  bool down_weight_stale = false;
  bool staleness_aware_lr = false;
  int warmup_epochs = 0;
  int ps_shards = 1;  // parts each variable is split into across the ps
  std::string ps_placement = "round_robin";
};

// Managed-job conventions (Vertex AI custom jobs, seed 002): the platform says where the model,
// checkpoints and TensorBoard logs go; a flag the user gave wins.
void apply_managed_job_environment(TrainArgs& a, const CLI::App& cmd) {
  const auto from_env = [&](const char* flag, const char* var, std::string& field) {
    const char* value = std::getenv(var);
    if (value != nullptr && *value != '\0' && cmd.get_option(flag)->count() == 0) field = value;
  };
  from_env("--output", "AIP_MODEL_DIR", a.output);
  from_env("--checkpoint-dir", "AIP_CHECKPOINT_DIR", a.checkpoint_dir);
  from_env("--tensorboard", "AIP_TENSORBOARD_LOG_DIR", a.tensorboard);
}

// --strategy parameter_server: the cluster (chief, workers, ps) comes from OSPREY_CONFIG or
// TF_CONFIG, as `osprey launch --ps N --workers M` sets it.
std::shared_ptr<const train::Strategy> make_ps_strategy(const TrainArgs& a) {
  OSPREY_CHECK_T(cli::UsageError, a.devices == 1,
                 "osprey train: --devices {}: each parameter-server worker trains one replica",
                 a.devices);
  OSPREY_CHECK_T(cli::UsageError, a.ps_mode == "sync" || a.replicas_to_aggregate == 0,
                 "osprey train: --replicas-to-aggregate is for --ps-mode sync");
  distribute::ParameterServerOptions o;
  o.mode = a.ps_mode;
  o.replicas_to_aggregate = a.replicas_to_aggregate;
  o.staleness = {.max_staleness = a.max_staleness,
                 .down_weight_beyond = a.down_weight_stale,
                 .staleness_aware_lr = a.staleness_aware_lr};
  o.warmup_epochs = a.warmup_epochs;
  o.placement = a.ps_placement == "balanced" ? distribute::ps::Placement::balanced
                                             : distribute::ps::Placement::round_robin;
  if (a.ps_shards > 1)
    o.variable_partitioner = distribute::ps::fixed_shards_partitioner(a.ps_shards);
  o.compression = a.compression;
  o.timeout = std::chrono::milliseconds(std::llround(a.timeout.value_or(300.0) * 1000.0));
  return as_usage_error(
      [&] { return std::make_shared<distribute::ParameterServerStrategy>(std::move(o)); });
}

// The strategy the options name; a multi-worker one connects the workers here (a collective).
// Options that do not go together, and a cluster spec (OSPREY_CONFIG/TF_CONFIG) the strategy
// refuses, are UsageErrors; a failure to connect is not.
std::shared_ptr<const train::Strategy> make_strategy(const TrainArgs& a) {
  const bool across_processes = a.strategy == "multi_worker" || a.strategy == "parameter_server";
  OSPREY_CHECK_T(cli::UsageError, !a.timeout || across_processes,
                 "osprey train: --timeout is the deadline of calls between workers; it needs "
                 "--strategy multi_worker or parameter_server");
  OSPREY_CHECK_T(cli::UsageError, a.compression == "none" || across_processes,
                 "osprey train: --compression compresses what workers send each other; it needs "
                 "--strategy multi_worker or parameter_server");
  if (a.strategy == "parameter_server") return make_ps_strategy(a);
  if (a.strategy == "one_device") {
    OSPREY_CHECK_T(cli::UsageError, a.devices == 1,
                   "osprey train: --devices {} needs --strategy mirrored or multi_worker",
                   a.devices);
    return std::make_shared<distribute::OneDevice>("cpu:0");
  }
  return as_usage_error([&]() -> std::shared_ptr<const train::Strategy> {
    const auto devices = distribute::virtual_devices(a.devices);
    if (a.strategy == "mirrored") return std::make_shared<distribute::MirroredStrategy>(devices);
    return std::make_shared<distribute::MultiWorkerMirroredStrategy>(
        devices, distribute::MultiWorkerOptions{.communication = a.communication,
                                                .compression = a.compression,
                                                .timeout = std::chrono::milliseconds(std::llround(
                                                    a.timeout.value_or(300.0) * 1000.0))});
  });
}

void run(const TrainArgs& a) {
  set_global_seed(a.seed);
  config::set_dtype_policy(a.dtype_policy);
  const std::shared_ptr<const train::Strategy> strategy = make_strategy(a);
  std::shared_ptr<optim::Optimizer> opt = as_usage_error([&] { return optim::get(a.optimizer); });
  opt->set_learning_rate(a.lr);
  // Every worker logs the same numbers (they see the whole global batch): the chief prints them.
  const bool chief = strategy->is_chief();
  // A destination that cannot be written fails now, not after training.
  if (chief && !a.output.empty()) io::check_directory_destination(a.output);
  std::shared_ptr<train::BackupAndRestore> backup;
  std::vector<train::CallbackPtr> fit_callbacks;
  if (!a.backup.empty()) {
    backup = as_usage_error(
        [&] { return callbacks::BackupAndRestore(a.backup, {.save_freq = a.backup_freq}); });
    fit_callbacks.push_back(backup);
  }
  if (!a.checkpoint_dir.empty()) {
    if (chief) io::check_directory_destination(std::filesystem::path(a.checkpoint_dir) / "epoch_1");
    fit_callbacks.push_back(callbacks::ModelCheckpoint(
        (std::filesystem::path(a.checkpoint_dir) / "epoch_{epoch}").string()));
  }
  if (!a.tensorboard.empty()) {
    fit_callbacks.push_back(
        callbacks::TensorBoard(a.tensorboard, {.histogram_freq = a.histogram_freq}));
  }
  if (!a.csv_log.empty()) fit_callbacks.push_back(callbacks::CSVLogger(a.csv_log));
  std::shared_ptr<train::EarlyStopping> early_stopping;
  const std::string monitor = a.validation_split > 0 ? "val_loss" : "loss";
  if (a.early_stopping) {
    // Without a validation split there is no val_loss: watch the training loss.
    early_stopping = callbacks::EarlyStopping({.monitor = monitor, .patience = *a.early_stopping});
    fit_callbacks.push_back(early_stopping);
  }
  auto data = datasets::fashion_mnist::load({.directory = a.data});
  Model model = applications::fashion_mnist_model(a.model);
  if (chief) fmt::print("{}", model.summary());
  if (chief && strategy->num_replicas_in_sync() > 1) {
    fmt::print("strategy: {}, {} replicas in sync, global batch {}\n", strategy->describe(),
               strategy->num_replicas_in_sync(), a.batch_size);
  }
  model.compile(opt, "sparse_categorical_crossentropy", {"accuracy"}, {.strategy = strategy});
  model.fit(data.train.x, data.train.y,
            {.batch_size = a.batch_size,
             .epochs = a.epochs,
             .verbose = chief ? 1 : 0,
             .callbacks = fit_callbacks,
             .validation_split = a.validation_split,
             .steps_per_epoch = a.steps_per_epoch,
             .seed = a.seed});
  if (chief && early_stopping && early_stopping->stopped_epoch() >= 0) {
    fmt::print("early stopping after epoch {}: {} did not improve for {} epochs (best: epoch {})\n",
               early_stopping->stopped_epoch() + 1, monitor,
               early_stopping->stopped_epoch() - early_stopping->best_epoch(),
               early_stopping->best_epoch() + 1);
  }
  if (chief && backup && backup->restored_from()) {
    fmt::print("resumed from the backup {}\n", backup->restored_from()->string());
  }
  const train::Logs test = model.evaluate(data.test.x, data.test.y, {.batch_size = 256});
  if (chief) {
    fmt::print("test loss: {:.4f} - test accuracy: {:.4f}\n", test.at("loss"), test.at("accuracy"));
  }
  if (a.output.empty()) return;
  model.save(a.output);  // only the chief's reaches a.output (workers hold the same weights)
  if (chief) {
    fmt::print("saved to {}/ (config.json, model.safetensors, optimizer.safetensors)\n", a.output);
  }
}

}  // namespace

void add_train(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "Train a model on Fashion-MNIST");
  cmd->add_option("--model", args->model, "mlp (784-512-256-10) or cnn")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  cmd->add_option("--epochs", args->epochs, "Epochs")->check(kPositive);
  cmd->add_option("--batch-size", args->batch_size, "Batch size")->check(kPositive);
  cmd->add_option("--steps-per-epoch", args->steps_per_epoch,
                  "Training steps per epoch (default: one pass over the data)")
      ->check(kPositive);
  cmd->add_option("--validation-split", args->validation_split,
                  "Hold out the last fraction F of the training images, and report val_loss and "
                  "val_accuracy after each epoch (Keras's validation_split)")
      ->check(CLI::Validator(
          [](const std::string& text) {
            std::string copy = text;
            std::string bad = kNonNegative(copy);
            if (!bad.empty()) return bad;
            return std::stod(text) < 1.0 ? std::string() : "must be below 1. Received: " + text;
          },
          "[0, 1)"));
  cmd->add_option("--backup", args->backup,
                  "BackupAndRestore folder: backups go there, and a relaunch with the same "
                  "options resumes from the newest at the exact step");
  cmd->add_option("--checkpoint-dir", args->checkpoint_dir,
                  "ModelCheckpoint: save the model after each epoch to DIR/epoch_N (what "
                  "`osprey evaluate --watch DIR` evaluates as training goes; default: "
                  "$AIP_CHECKPOINT_DIR when set)");
  cmd->add_option("--backup-freq", args->backup_freq,
                  "When to back up: 'epoch' or every N training steps");
  cmd->add_option("--optimizer", args->optimizer, "sgd, adam, adamw or rmsprop");
  cmd->add_option("--lr", args->lr, "Learning rate")->check(kPositive);
  cmd->add_option("--seed", args->seed, "Random seed")->check(kNonNegative);
  add_data_option(*cmd, args->data);
  cmd->add_option("--output", args->output,
                  "Directory to save the trained model in ('' to skip; default: $AIP_MODEL_DIR "
                  "when set)");
  cmd->add_option("--strategy", args->strategy,
                  "one_device, mirrored (in-process replicas), multi_worker (processes "
                  "started by osprey launch, mpirun, srun or OSPREY_CONFIG/TF_CONFIG) or "
                  "parameter_server (a chief, workers and ps tasks: osprey launch --ps N "
                  "--workers M)")
      ->check(CLI::IsMember({"one_device", "mirrored", "multi_worker", "parameter_server"}));
  cmd->add_option("--ps-mode", args->ps_mode,
                  "parameter_server: sync (each step from the first --replicas-to-aggregate "
                  "shares) or async (each share applied as it arrives)")
      ->check(CLI::IsMember({"sync", "async"}));
  cmd->add_option("--replicas-to-aggregate", args->replicas_to_aggregate,
                  "parameter_server sync: shares applied per step, K of the N workers; the "
                  "other N-K are backups whose late gradients are dropped (0: all)")
      ->check(kNonNegative);
  cmd->add_option("--max-staleness", args->max_staleness,
                  "parameter_server async: drop gradients computed on weights more than S "
                  "updates old (-1: no bound)")
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
  cmd->add_flag("--down-weight-stale", args->down_weight_stale,
                "parameter_server async: scale gradients past --max-staleness by "
                "1/(1+staleness) instead of dropping them");
  cmd->add_flag("--staleness-aware-lr", args->staleness_aware_lr,
                "parameter_server async: learning rate / max(1, staleness) per gradient");
  cmd->add_option("--warmup-epochs", args->warmup_epochs,
                  "parameter_server async: the first E epochs on one worker")
      ->check(kNonNegative);
  cmd->add_option("--ps-shards", args->ps_shards,
                  "parameter_server: split each variable into N row blocks across the ps")
      ->check(kPositive);
  cmd->add_option("--ps-placement", args->ps_placement,
                  "parameter_server: round_robin or balanced (by size) placement of variables")
      ->check(CLI::IsMember({"round_robin", "balanced"}));
  cmd->add_option("--devices", args->devices, "Replicas (virtual CPU devices) per worker")
      ->check(kPositive);
  cmd->add_option("--dtype-policy", args->dtype_policy,
                  "float32, mixed_float16, mixed_bfloat16, float16 or bfloat16")
      ->check(CLI::IsMember({"float32", "mixed_float16", "mixed_bfloat16", "float16", "bfloat16"}));
  cmd->add_option("--compression", args->compression,
                  "Gradients between workers: none or bf16 (f32 accumulation)")
      ->check(CLI::IsMember({"none", "bf16"}));
  cmd->add_option("--communication", args->communication, "Between workers: auto, mpi or gloo")
      ->check(CLI::IsMember({"auto", "mpi", "gloo"}));
  cmd->add_option("--timeout", args->timeout,
                  "Seconds a call between workers (and connecting them) may wait for the others; "
                  "a stopped or hung worker then fails the job with an error naming it (default "
                  "300)")
      ->check(CLI::Range(0.001, 86400.0));
  cmd->add_option("--tensorboard", args->tensorboard,
                  "TensorBoard: write event files to DIR/train and DIR/validation (default: "
                  "$AIP_TENSORBOARD_LOG_DIR when set)");
  cmd->add_option("--histogram-freq", args->histogram_freq,
                  "With --tensorboard: weight histograms every N epochs (0: none)")
      ->check(kNonNegative);
  cmd->add_option("--csv-log", args->csv_log, "CSVLogger: one row of logs per epoch in FILE");
  cmd->add_option("--early-stopping", args->early_stopping,
                  "EarlyStopping: stop after PATIENCE epochs without improvement of val_loss "
                  "(loss without --validation-split)")
      ->check(kNonNegative);
  cmd->callback([args, cmd] {
    apply_managed_job_environment(*args, *cmd);
    OSPREY_CHECK_T(cli::UsageError, args->histogram_freq == 0 || !args->tensorboard.empty(),
                   "osprey train: --histogram-freq needs --tensorboard DIR");
    run(*args);
  });
}

}  // namespace osprey::cli
