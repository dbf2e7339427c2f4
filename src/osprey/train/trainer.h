// Trainer: what compile() builds and a Model holds: the optimizer, loss and metrics, and the
// loops of fit, evaluate and predict. One training step is: forward (training=true), loss plus
// regularization penalties, backward, optimizer update, metric updates, with nothing allocated
// from the system in steady state (tensors come from the caching allocator). Where those steps
// run is the compiled Strategy's business (strategy.h): by default one device, as before; under
// a distribute/ strategy each replica runs forward/backward on its share of the batch and the
// strategy reduces and applies. train_on_batch and friends do not re-copy weights to replicas;
// fit, evaluate and predict do, first.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "osprey/models/network.h"
#include "osprey/train/compile_options.h"
#include "osprey/train/fit_options.h"
#include "osprey/train/strategy.h"

namespace osprey::train {

class Model;

// One epoch of (x, y) batches: next() fills them and returns false at the end.
using BatchStream = std::function<bool(Tensor& x, Tensor& y)>;
// Makes the stream of a given epoch starting at a given step (its first_step batches skipped:
// a run resumed from a backup goes on mid-epoch), and says how many steps it has (-1 unknown).
struct BatchSource {
  std::function<BatchStream(int epoch, int64_t first_step)> epoch;
  int64_t steps = -1;
};

// Where a fit resumes (BackupAndRestore sets it in on_train_begin): the epoch, the steps of it
// already taken with the running loss and metrics they left (running_state()), and the History
// of the epochs before it.
struct ResumePoint {
  int epoch = 0;
  int64_t step = 0;
  std::vector<double> running_state;
  std::map<std::string, std::vector<double>> history;
  std::vector<int> history_epochs;
};

// Batches of tensors x [N, ...], y [N, ...]: slices, or row gathers in a seeded order per epoch.
BatchSource tensor_source(const Tensor& x, const Tensor& y, int64_t batch_size, bool shuffle,
                          uint64_t seed);
// Batches from a dataset whose elements are (x, y) (or x alone: y is then undefined).
BatchSource dataset_source(const data::Dataset& dataset);

class Trainer {
 public:
  Trainer(std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer,
          std::shared_ptr<losses::Loss> loss, std::vector<std::shared_ptr<metrics::Metric>> metrics,
          CompileOptions options);

  optim::Optimizer& optimizer() const { return *optimizer_; }
  losses::Loss& loss() const { return *loss_; }
  const std::vector<std::shared_ptr<metrics::Metric>>& metrics() const { return metrics_; }
  const CompileOptions& options() const { return options_; }
  const Strategy& strategy() const { return *options_.strategy; }

  // One step on one batch: updates the weights and the running metrics.
  void train_step(const Tensor& x, const Tensor& y);
  void test_step(const Tensor& x, const Tensor& y);
  Tensor predict_step(const Tensor& x);
  // "loss" and each metric's running value, keys prefixed (e.g. "val_").
  Logs results(const std::string& prefix = "") const;
  void reset_metrics();
  // The running loss and every metric's state as numbers, and back (BackupAndRestore saves them
  // mid-epoch); ValueError naming the metric when the saved state does not fit.
  std::vector<double> running_state() const;
  void load_running_state(const std::vector<double>& state);
  // The layout check load_running_state makes, alone: BackupAndRestore runs it before it loads
  // anything from a backup.
  void check_running_state(const std::vector<double>& state) const;
  // Drops the step executor, which caches the network's variables (and, in distributed
  // strategies, replicas of them): after layers were swapped (model.quantize) the next step
  // makes a new one from the current layers.
  void reset_executor() { executor_.reset(); }

  History fit(Model& model, const BatchSource& train, const FitOptions& options,
              const std::optional<BatchSource>& validation);
  // Makes the fit in progress (called from on_train_begin) start at `point` instead of
  // initial_epoch; the weights and optimizer state are the caller's to restore.
  void resume_at(ResumePoint point) { resume_ = std::move(point); }
  Logs evaluate(Model& model, const BatchSource& source, const EvaluateOptions& options);
  Tensor predict(Model& model, const BatchSource& source, const PredictOptions& options);

 private:
  StepExecutor& executor();
  // compile(): every variable and the optimizer's slots were created under this strategy's
  // scope or, unless compile runs inside that scope, outside any (mixing strategies, or a model
  // built outside the scope it is compiled in, is a ValueError naming the variable).
  void check_created_under_this_strategy() const;
  // Every step: `what` (fit, evaluate, predict) may not run inside another strategy's scope.
  void check_scope(const char* what) const;
  // One replica's forward, loss and backward: what train_step runs on every replica, and what a
  // process serving another's steps runs on each step it receives (StepExecutor::serve_steps).
  ReplicaStep replica_step();
  // results() and what the strategy adds per step (StepExecutor::add_logs): fit's logs.
  Logs fit_results() const;
  // Fit's epochs, between on_train_begin and on_train_end.
  Logs run_epochs(Model& model, const BatchSource& train, const FitOptions& o,
                  const std::optional<BatchSource>& validation, CallbackList& callbacks,
                  History& history);
  // Adds the replicas' losses and predictions to the running loss and the metrics.
  void accumulate(const std::vector<ReplicaOutput>& outputs);
  std::shared_ptr<models::Network> network_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  std::shared_ptr<losses::Loss> loss_;
  std::vector<std::shared_ptr<metrics::Metric>> metrics_;
  // The compiled strategy's scope_label(), empty for the default single device: the creation
  // scope steps open, so weights built lazily by the first step record the strategy that built
  // them; compared with the labels weights and slots recorded, it tells strategies apart by id.
  std::string scope_label_;
  double loss_sum_ = 0.0,
         loss_count_ = 0.0;  // the running mean of the loss, weighted by batch size
  CompileOptions options_;
  std::unique_ptr<StepExecutor> executor_;  // made by the first train_step
  std::optional<ResumePoint> resume_;       // set by resume_at, taken by fit
};

}  // namespace osprey::train
