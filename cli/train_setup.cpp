// What `osprey train` sets up before it fits (train_setup.h).
#include "cli/train_setup.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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
#include "osprey/quant/quantize.h"
#include "osprey/train/callbacks/backup_and_restore.h"
#include "osprey/train/callbacks/checkpoint_csv.h"
#include "osprey/train/callbacks/early_stopping.h"
#include "osprey/train/callbacks/tensorboard.h"
#include "osprey/train/model.h"

namespace osprey::cli {

// Managed-job conventions (cli/managed_job.h): where the model, checkpoints and logs go.
void apply_managed_job_environment(TrainArgs& a, const CLI::App& cmd) {
  default_from_managed_job(cmd, "--output", "AIP_MODEL_DIR", a.output);
  default_from_managed_job(cmd, "--checkpoint-dir", "AIP_CHECKPOINT_DIR", a.checkpoint_dir);
  default_from_managed_job(cmd, "--tensorboard", "AIP_TENSORBOARD_LOG_DIR", a.tensorboard);
}

namespace {

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

}  // namespace

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
        devices,
        distribute::MultiWorkerOptions{.communication = distribute::parse_communication(
                                           a.communication, "osprey train: --communication"),
                                       .compression = a.compression,
                                       .timeout = std::chrono::milliseconds(
                                           std::llround(a.timeout.value_or(300.0) * 1000.0))});
  });
}

int64_t checked_batch_size(int64_t batch_size, bool given, int replicas) {
  const int64_t n = std::max(replicas, 1);
  if (batch_size % n == 0) return batch_size;
  const int64_t below = batch_size / n * n, above = below + n;
  if (!given) return below > 0 && batch_size - below < above - batch_size ? below : above;
  OSPREY_THROW(cli::UsageError,
               "osprey train: --batch-size {} is not divisible by the {} replicas in sync (the "
               "global batch is split evenly among them); use --batch-size {}",
               batch_size, n,
               below > 0 ? fmt::format("{} or {}", below, above) : std::to_string(above));
}

namespace {

// Runs f, which reads what `flag` names (`path`); what it throws about the file (a ValueError or
// an IoError) becomes a UsageError naming the flag and the file, before any training.
std::string naming(const char* flag, const std::string& path, const std::string& what) {
  return what.starts_with(path) ? fmt::format("osprey train: {} {}", flag, what)
                                : fmt::format("osprey train: {} {}: {}", flag, path, what);
}
template <class F>
decltype(auto) reading(const char* flag, const std::string& path, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const UsageError&) {
    throw;
  } catch (const ValueError& e) {
    throw UsageError(naming(flag, path, e.what()));
  } catch (const IoError& e) {
    throw UsageError(naming(flag, path, e.what()));
  }
}

}  // namespace

Shape row_shape(const Shape& x) { return Shape(x.span().subspan(x.empty() ? 0 : 1)); }

TrainData load_data(const TrainArgs& a, const CLI::App& cmd) {
  const auto given = [&](const char* flag) { return cmd.get_option(flag)->count() > 0; };
  std::string format = a.data_format;
  if (format == "auto") {
    format = a.data.empty()
                 ? "fashion_mnist"
                 : reading("--data", a.data, [&] { return data::detect_data_format(a.data); });
  }
  OSPREY_CHECK_T(cli::UsageError, format == "fashion_mnist" || !a.data.empty(),
                 "osprey train: --data-format {} needs --data PATH", format);
  OSPREY_CHECK_T(cli::UsageError, !given("--label-column") || format == "csv",
                 "osprey train: --label-column is for CSV data; --data is {}", format);
  OSPREY_CHECK_T(
      cli::UsageError, (!given("--image-size") && !given("--color-mode")) || format == "images",
      "osprey train: --image-size and --color-mode are for folders of images; --data is {}",
      format);
  TrainData d;
  d.format = format;
  if (format == "fashion_mnist") {
    OSPREY_CHECK_T(cli::UsageError, a.test_data.empty(),
                   "osprey train: --test-data: Fashion-MNIST's folder holds its own test split "
                   "(t10k-*); give --test-data with other data");
    // As before: a missing or damaged Fashion-MNIST is a failure (1), not bad usage.
    auto fmnist = datasets::fashion_mnist::load({.directory = a.data});
    d.train = fmnist.train;
    d.test = fmnist.test;
    d.num_classes = 10;
    return d;
  }
  data::LabeledFilesOptions o{.format = format, .label_column = a.label_column};
  o.images.color_mode = a.color_mode;
  o.images.seed = a.seed;
  if (!a.image_size.empty()) {
    const size_t x = a.image_size.find('x');
    o.images.height = std::stoll(a.image_size.substr(0, x));
    o.images.width = std::stoll(a.image_size.substr(x + 1));
  }
  data::LabeledFiles train =
      reading("--data", a.data, [&] { return data::read_labeled_files(a.data, o); });
  d.train = train;
  d.num_classes = train.num_classes;
  if (!a.test_data.empty()) {
    o.images.shuffle = false;  // the test split is evaluated whole: its order does not matter
    data::LabeledFiles test = reading("--test-data", a.test_data,
                                      [&] { return data::read_labeled_files(a.test_data, o); });
    OSPREY_CHECK_T(cli::UsageError, row_shape(test.x.shape()) == row_shape(train.x.shape()),
                   "osprey train: --test-data {} holds rows of {}, but --data {} holds rows of {}",
                   a.test_data, row_shape(test.x.shape()).to_string(), a.data,
                   row_shape(train.x.shape()).to_string());
    OSPREY_CHECK_T(
        cli::UsageError, train.class_names.empty() || test.class_names == train.class_names,
        "osprey train: --test-data {} has the classes {}, but --data {} has {}", a.test_data,
        fmt::join(test.class_names, ", "), a.data, fmt::join(train.class_names, ", "));
    d.test = test;
    d.num_classes = std::max(d.num_classes, test.num_classes);
  }
  return d;
}

Model make_model(const TrainArgs& a) {
  if (a.model == "mlp" || a.model == "cnn") return applications::fashion_mnist_model(a.model);
  // A description may hold quantized layers: `osprey quantize DIR --mode float8` writes a model
  // that trains (Float8Dense, Float8Conv2D); an int8 one is refused below, before any data is read.
  quant::register_layers();
  Model model(reading("--model", a.model, [&] { return models::model_from_file(a.model); }));
  const std::vector<std::string> int8 = quant::int8_layers(model.network());
  OSPREY_CHECK_T(cli::UsageError, int8.empty(),
                 "osprey train: --model {} holds int8-quantized layers ({}); int8 models are for "
                 "inference only (osprey evaluate, osprey predict). Train the float32 model, then "
                 "quantize it again (osprey quantize DIR --mode int8); or quantize it with --mode "
                 "float8, which trains",
                 a.model, fmt::join(int8, ", "));
  return model;
}

// The model must take the data's rows and give one score per class, checked before training: a
// model without an input shape is built for the data's; a grey image [H, W, 1] also feeds a model
// that takes [H, W].
void fit_model_to_data(const TrainArgs& a, Model& model, TrainData& d) {
  Shape rows = row_shape(d.train.x.shape());
  const std::string data_name = a.data.empty() ? "Fashion-MNIST" : a.data;
  models::Network& net = model.network();
  if (!net.built()) {
    reading("--model", a.model, [&] {
      model.build(rows);
      return 0;
    });
  }
  const Shape takes = row_shape(net.build_input_shapes().at(0));
  Shape without_channel = rows;
  if (!rows.empty() && rows[rows.ndim() - 1] == 1) without_channel.erase(rows.ndim() - 1);
  if (takes != rows && without_channel == takes) {
    for (data::LabeledArrays* split : {&d.train, &d.test}) {
      if (!split->x.defined()) continue;
      Shape s = split->x.shape();
      s.erase(s.ndim() - 1);
      split->x = split->x.reshape(s);
    }
    rows = takes;
  }
  OSPREY_CHECK_T(cli::UsageError, takes == rows,
                 "osprey train: the model ({}) takes inputs of shape {}, but --data {} holds rows "
                 "of shape {}",
                 a.model, takes.to_string(), data_name, rows.to_string());
  Shape batch = rows;
  batch.insert(0, -1);
  const Shape out = net.compute_output_shape({batch});
  OSPREY_CHECK_T(cli::UsageError, out.ndim() == 2,
                 "osprey train: the model ({}) outputs {} per batch; sparse categorical "
                 "crossentropy needs one score per class, [batch, classes]",
                 a.model, out.to_string());
  OSPREY_CHECK_T(cli::UsageError, out[1] >= d.num_classes,
                 "osprey train: the model ({}) outputs {} classes, but the labels of --data {} go "
                 "up to {}",
                 a.model, out[1], data_name, d.num_classes - 1);
}

}  // namespace osprey::cli
