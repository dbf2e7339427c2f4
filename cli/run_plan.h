// The plan and measurements of `osprey run` (run.cpp): its options, how the budget is shared
// among the stages, the splits of the training images, the progress line each fit prints, and how
// a stage's model is measured (size on disk, inference speed).
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "cli/run_state.h"
#include "osprey/data/labeled_arrays.h"
#include "osprey/tensor/tensor.h"
#include "osprey/train/callback.h"

namespace osprey::cli {

struct RunArgs {
  std::string budget = "15m";
  std::string output = "osprey_run";
  std::string data;
  uint64_t seed = 42;
  int members = 2;  // retrained networks; the ensemble adds one XGBoost member
  std::string dtype_policy = "auto";
  bool overwrite = false;
  std::string tensorboard;  // TensorBoard logs of the tuning and retraining ('' off)
};

// Where each stage must end, as a fraction of the budget.
struct PlannedStage {
  const char* name;
  double ends_at;
};
constexpr std::array<PlannedStage, 4> kPlan{
    {{"tune", 0.28}, {"retrain", 0.92}, {"ensemble", 0.97}, {"quantize", 1.0}}};

double stage_deadline(const std::string& stage, double budget);

// What the stages after retraining cost: they do fixed work (predictions over the splits, the
// XGBoost member's training), so retraining must end early enough to leave them that time,
// whatever the budget. Counted from what run.cpp does, in passes over the 10,000 test images at
// the measured inference time of one (the members' own speed): the retrain stage's evaluation
// (accuracy and speed of each member), the ensemble (holdout predictions, the XGBoost member's
// 20,000 feature rows, the weights' fit, the members' and the ensemble's test accuracy and
// speed) and quantization (the int8 ensemble's accuracy and speed).
struct TailPlan {
  double retrain_evaluation = 0, ensemble = 0, quantize = 0;  // seconds
  double total() const { return retrain_evaluation + ensemble + quantize; }
};
TailPlan plan_tail(int members, double seconds_per_test_pass, int xgboost_rounds);

// With a measured tail: retraining ends 1.25 times its estimate before the budget (and at least
// 2% of the budget before), the ensemble 1.25 times quantization's; tune keeps its fraction.
double stage_deadline(const std::string& stage, double budget, const TailPlan& tail);

// "15m", "90s", "1h", "2m30s" or plain seconds.
double parse_budget(const std::string& text);

// mm:ss
std::string clock_text(double seconds);

// What serving needs of a saved model or ensemble: every file but the optimizer's state.
int64_t directory_bytes(const std::filesystem::path& dir);

// Inference speed on the test images, batch 256, after one warm-up batch.
template <class Predict>
double samples_per_second(const Tensor& x, Predict&& predict) {
  predict(x.slice(0, 0, std::min<int64_t>(256, x.shape()[0])));
  const auto start = std::chrono::steady_clock::now();
  predict(x);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(x.shape()[0]) / std::max(s, 1e-9);
}

// Prints a progress line per epoch with the time left, records the time spent, and stops fit
// once `stop_at` (run seconds) has passed, so no stage overruns the budget by more than a batch.
class Progress : public train::Callback {
 public:
  Progress(std::string label, const RunClock& clock, double budget, double stop_at, RunState& state)
      : label_(std::move(label)),
        clock_(clock),
        budget_(budget),
        stop_at_(stop_at),
        state_(state) {}
  void on_train_batch_end(int64_t, const train::Logs&) override;
  void on_epoch_end(int epoch, const train::Logs& logs) override;
  std::shared_ptr<Callback> clone() const override {
    return std::make_shared<Progress>(label_, clock_, budget_, stop_at_, state_);
  }

 private:
  std::string label_;
  const RunClock& clock_;
  double budget_, stop_at_;
  RunState& state_;
};

struct Splits {
  data::LabeledArrays tune_train, train_and_val, val, holdout, test;
};

// The splits, cut down for small budgets so that a 1-minute run still does every stage.
Splits make_splits(const RunArgs& a, double budget);

}  // namespace osprey::cli
