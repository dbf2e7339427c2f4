// `osprey train`: trains the default Fashion-MNIST model (the seeds' MLP, or a small CNN), or a
// model described in a JSON or TOML file (models/model_config.h), on Fashion-MNIST or on IDX,
// NPY, CSV files or a folder of images (data/labeled_files.h), printing the summary, Keras
// progress bars and the test accuracy; --strategy, --devices,
// --dtype-policy and --compression give the seeds' distribution and precision recipes without C++
// (`osprey launch -n 2 -- osprey train --strategy multi_worker` for two workers); --backup makes
// a killed run resumable (a relaunch with the same options goes on at the exact step).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>

#include "cli/managed_job.h"
#include "cli/report/history.h"
#include "cli/subcommands.h"
#include "cli/train_setup.h"
#include "cli/train_text.h"
#include "cli/usage_error.h"
#include "cli/validators.h"
#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/data/labeled_files.h"
#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/data_parallel/multi_worker_mirrored_strategy.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/one_device_strategy.h"
#include "osprey/distribute/ps/parameter_server_strategy.h"
#include "osprey/io/atomic_directory.h"
#include "osprey/models/model_config.h"
#include "osprey/optim/factory.h"
#include "osprey/precision/dtype_policy.h"
#include "osprey/train/callbacks/backup_and_restore.h"
#include "osprey/train/callbacks/checkpoint_csv.h"
#include "osprey/train/callbacks/early_stopping.h"
#include "osprey/train/callbacks/profiler.h"
#include "osprey/train/callbacks/tensorboard.h"
#include "osprey/train/model.h"

namespace osprey::cli {

namespace {

// Says "resumed from the backup DIR" as training starts, just after BackupAndRestore restored it
// (the callback before it), so a resumed run says so before its epochs, not after them.
class ResumeNotice : public train::Callback {
 public:
  explicit ResumeNotice(std::shared_ptr<const train::BackupAndRestore> backup)
      : backup_(std::move(backup)) {}
  void on_train_begin(const train::Logs&) override {
    if (!backup_->restored_from()) return;
    fmt::print("resumed from the backup {}\n", backup_->restored_from()->string());
    std::fflush(stdout);
  }

 private:
  std::shared_ptr<const train::BackupAndRestore> backup_;
};

void run(const TrainArgs& a, const CLI::App& cmd) {
  set_global_seed(a.seed);
  config::set_dtype_policy(a.dtype_policy);
  const std::shared_ptr<const train::Strategy> strategy = make_strategy(a);
  // Refused here, before any data is read or any worker is waited for: every task of a cluster
  // checks it alike, so the job ends at once with a usage error.
  const int64_t batch_size = checked_batch_size(
      a.batch_size, cmd.get_option("--batch-size")->count() > 0, strategy->num_replicas_in_sync());
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
    if (chief) fit_callbacks.push_back(std::make_shared<ResumeNotice>(backup));
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
  if (!a.profile.empty()) {
    const train::ProfileSteps steps = as_usage_error([&] {
      return train::parse_profile_steps(a.profile_steps, "osprey train: --profile-steps");
    });
    fit_callbacks.push_back(callbacks::Profiler(a.profile, {.steps = steps, .verbose = true}));
  }
  std::shared_ptr<train::EarlyStopping> early_stopping;
  const std::string monitor = a.validation_split > 0 ? "val_loss" : "loss";
  if (a.early_stopping) {
    // Without a validation split there is no val_loss: watch the training loss.
    early_stopping = callbacks::EarlyStopping({.monitor = monitor, .patience = *a.early_stopping});
    fit_callbacks.push_back(early_stopping);
  }
  if (is_language_model(a.model)) {
    train_language_model(a, {.strategy = strategy,
                             .optimizer = opt,
                             .callbacks = fit_callbacks,
                             .batch_size = batch_size,
                             .batch_size_given = cmd.get_option("--batch-size")->count() > 0,
                             .chief = chief});
    return;
  }
  TrainData data = load_data(a, cmd);
  Model model = make_model(a);
  fit_model_to_data(a, model, data);
  if (chief) {
    fmt::print("data: {} ({}): {} training rows of {}{}, {} classes\n",
               a.data.empty() ? "Fashion-MNIST" : a.data, data.format, data.train.size(),
               row_shape(data.train.x.shape()).to_string(),
               data.test.size() > 0 ? fmt::format(", {} test rows", data.test.size()) : "",
               data.num_classes);
    fmt::print("{}", model.summary());
  }
  if (chief && strategy->num_replicas_in_sync() > 1) {
    fmt::print("strategy: {}, {} replicas in sync, global batch {}{}\n", strategy->describe(),
               strategy->num_replicas_in_sync(), batch_size,
               batch_size != a.batch_size
                   ? fmt::format(" (the default {} rounded to a multiple of {})", a.batch_size,
                                 strategy->num_replicas_in_sync())
                   : "");
  }
  model.compile(opt, "sparse_categorical_crossentropy", {"accuracy"}, {.strategy = strategy});
  auto history = std::make_shared<report::HistoryRecorder>();  // osprey report's curves
  fit_callbacks.push_back(history);
  model.fit(data.train.x, data.train.y,
            {.batch_size = batch_size,
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
  if (data.test.size() > 0) {
    const train::Logs test = model.evaluate(data.test.x, data.test.y, {.batch_size = 256});
    if (chief) {
      fmt::print("test loss: {:.4f} - test accuracy: {:.4f}\n", test.at("loss"),
                 test.at("accuracy"));
    }
  } else if (chief) {
    fmt::print("no test split: --test-data PATH evaluates the model on one after training\n");
  }
  if (a.output.empty()) return;
  // history.json goes inside the atomic save: a failure or a kill leaves the earlier folder whole
  // or the new one complete. Only the chief's save reaches a.output (workers hold the same
  // weights).
  model.save(a.output, {.json_files = {{"history.json", history->to_json()}}});
  if (chief) {
    fmt::print(
        "saved to {}/ (config.json, model.safetensors, optimizer.safetensors, "
        "history.json)\n",
        a.output);
  }
}

}  // namespace

void add_train(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd =
      app.add_subcommand("train",
                         "Train a model (a prebuilt one, or one a JSON or TOML file describes) on "
                         "Fashion-MNIST or on IDX, NPY, CSV files or a folder of images");
  cmd->add_option(
         "--model", args->model,
         "mlp (784-512-256-10), cnn, gpt or lstm (language models of a text file: --data "
         "FILE.txt, --tokenizer; see --block-size), or a model description: a .json file in the "
         "format "
         "Model::save writes as config.json (its \"model\" field, or the model alone: "
         "{\"class_name\": \"Sequential\", \"config\": {...}}), the same tree in a .toml "
         "file (TOML has no null: -1 for the batch axis of build_input_shape), or a folder "
         "Model::save wrote (its architecture only: the weights start fresh, as Keras's "
         "model_from_json; `osprey evaluate` uses saved weights). The model is compiled "
         "with --optimizer, sparse_categorical_crossentropy and accuracy (a compile_config "
         "in the file is not read), so it must output one probability per class "
         "(softmax)")
      ->check(CLI::Validator(
          [](const std::string& text) {
            if (text == "mlp" || text == "cnn" || is_language_model(text) ||
                std::filesystem::exists(text))
              return std::string();
            return "must be mlp, cnn, gpt, lstm, or a model description file or folder. "
                   "Received: '" +
                   text + "' (no such file or folder)";
          },
          "mlp|cnn|gpt|lstm|FILE"));
  add_tokenizer_option(*cmd, args->tokenizer, "--model gpt|lstm");
  cmd->add_option("--block-size", args->block_size,
                  "--model gpt|lstm: tokens per training window (the GPT's context length)")
      ->check(kPositive);
  cmd->add_option("--n-layer", args->n_layer, "--model gpt: blocks; lstm: LSTM layers")
      ->check(kPositive);
  cmd->add_option("--n-head", args->n_head, "--model gpt: attention heads")->check(kPositive);
  cmd->add_option("--n-embd", args->n_embd,
                  "--model gpt: width (a multiple of --n-head); lstm: embedding width")
      ->check(kPositive);
  cmd->add_option("--units", args->units, "--model lstm: units per LSTM layer")->check(kPositive);
  cmd->add_option("--dropout", args->dropout, "--model gpt: dropout rate in [0, 1)");
  cmd->add_option("--epochs", args->epochs, "Epochs")->check(kPositive);
  cmd->add_option("--batch-size", args->batch_size,
                  "The global batch, split evenly among the replicas in sync, so a multiple of "
                  "them (default: 128, or the nearest multiple: 129 for 3 replicas)")
      ->check(kPositive);
  cmd->add_option("--steps-per-epoch", args->steps_per_epoch,
                  "Training steps per epoch (default: one pass over the data)")
      ->check(kPositive);
  cmd->add_option("--validation-split", args->validation_split,
                  "Hold out the last fraction F of the rows of --data (in the files' order; a "
                  "folder of images is shuffled with --seed first, as Keras does), and report "
                  "val_loss and val_accuracy after each epoch (Keras's validation_split)")
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
  cmd->add_option("--data", args->data,
                  "Training data (default: Fashion-MNIST from $OSPREY_DATA_DIR or the Debian "
                  "package dataset-fashion-mnist). PATH is, by --data-format: fashion_mnist, a "
                  "folder of its four IDX files; idx, IMAGES,LABELS (two IDX files, e.g. "
                  "train-images-idx3-ubyte.gz,train-labels-idx1-ubyte.gz); npy, X.npy,Y.npy or a "
                  "folder holding x.npy and y.npy (np.save's files: x [N, ...], y [N] class ids); "
                  "csv, a .csv file with a header, numeric features and --label-column; images, a "
                  "folder with one subfolder of images (PNG, JPEG, BMP, GIF) per class, the sorted "
                  "folder names being classes 0, 1, ... (Keras's image_dataset_from_directory). "
                  "Features become float32 (uint8 IDX and NPY data, and images, scaled to [0, 1]); "
                  "labels must be class ids 0, 1, ...")
      ->check(CLI::Validator(
          [](const std::string& text) {
            // Each part of a pair must exist; a name without an extension is taken for a folder.
            for (size_t begin = 0; begin <= text.size();) {
              const size_t comma = std::min(text.find(',', begin), text.size());
              const std::string part = text.substr(begin, comma - begin);
              if (!part.empty() && !std::filesystem::exists(part)) {
                return std::string(std::filesystem::path(part).has_extension() ? "File"
                                                                               : "Directory") +
                       " does not exist: " + part;
              }
              begin = comma + 1;
            }
            return std::string();
          },
          "PATH"));
  cmd->add_option("--data-format", args->data_format,
                  "auto (told from --data: a pair of .npy files or a folder with x.npy: npy; "
                  "another pair: idx; a .csv file: csv; a folder with Fashion-MNIST's files: "
                  "fashion_mnist; a folder of folders: images), fashion_mnist, idx, npy, csv or "
                  "images")
      ->check(CLI::IsMember({"auto", "fashion_mnist", "idx", "npy", "csv", "images"}));
  cmd->add_option("--test-data", args->test_data,
                  "Test split in --data's format, evaluated once after training (test loss and "
                  "accuracy). Fashion-MNIST has its own (its t10k files); other data has none "
                  "without this. --validation-split holds out rows of --data, never of this");
  cmd->add_option("--label-column", args->label_column,
                  "csv: the header's name of the column of class ids; every other column is a "
                  "feature");
  cmd->add_option("--image-size", args->image_size,
                  "images: resize every image to HxW (bilinear), e.g. 64x64 (default: keep their "
                  "size, which all must share)")
      ->check(CLI::Validator(
          [](const std::string& text) {
            const size_t x = text.find('x');
            const auto positive = [](const std::string& n) {
              return !n.empty() && n.size() <= 5 &&
                     n.find_first_not_of("0123456789") == std::string::npos && std::stoi(n) > 0;
            };
            if (x != std::string::npos && positive(text.substr(0, x)) &&
                positive(text.substr(x + 1)))
              return std::string();
            return "must be HEIGHTxWIDTH, e.g. 64x64. Received: '" + text + "'";
          },
          "HxW"));
  cmd->add_option("--color-mode", args->color_mode,
                  "images: rgb (3 channels) or grayscale (1): rows [H, W, C] (a grey [H, W, 1] "
                  "also feeds a model that takes [H, W], as mlp and cnn do)")
      ->check(CLI::IsMember({"rgb", "grayscale"}));
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
  cmd->add_option("--profile", args->profile,
                  "Profiler: record the steps of --profile-steps and write DIR/trace.json (open "
                  "it in ui.perfetto.dev) and DIR/summary.txt (ops by self time)");
  cmd->add_option("--profile-steps", args->profile_steps,
                  "With --profile: the steps recorded, FIRST-LAST counted from 0 across epochs, "
                  "or one step")
      ->capture_default_str();
  cmd->add_option("--early-stopping", args->early_stopping,
                  "EarlyStopping: stop after PATIENCE epochs without improvement of val_loss "
                  "(loss without --validation-split)")
      ->check(kNonNegative);
  cmd->callback([args, cmd] {
    apply_managed_job_environment(*args, *cmd);
    OSPREY_CHECK_T(cli::UsageError, args->histogram_freq == 0 || !args->tensorboard.empty(),
                   "osprey train: --histogram-freq needs --tensorboard DIR");
    OSPREY_CHECK_T(cli::UsageError, cmd->count("--profile-steps") == 0 || !args->profile.empty(),
                   "osprey train: --profile-steps needs --profile DIR");
    if (!args->profile.empty()) {  // a bad range is bad usage, before any data is read
      as_usage_error([&] {
        train::parse_profile_steps(args->profile_steps, "osprey train: --profile-steps");
      });
    }
    run(*args, *cmd);
  });
}

}  // namespace osprey::cli
