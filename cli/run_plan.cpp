// `osprey run`'s plan and measurements (run_plan.h).
#include "cli/run_plan.h"

#include <fmt/format.h>

#include <regex>

#include "cli/usage_error.h"
#include "osprey/core/error.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"

namespace osprey::cli {

namespace fs = std::filesystem;

double stage_deadline(const std::string& stage, double budget) {
  for (const PlannedStage& p : kPlan)
    if (stage == p.name) return p.ends_at * budget;
  OSPREY_THROW(InternalError, "osprey run: no stage {}", stage);
}

TailPlan plan_tail(int members, double seconds_per_test_pass, int xgboost_rounds) {
  const double m = members, pass = seconds_per_test_pass;
  // XGBoost's training: about 0.1 s a round on 20,000 rows of 128-256 features, 2 cores.
  const double xgboost = 0.1 * xgboost_rounds;
  return {.retrain_evaluation = 2 * m * pass,
          .ensemble = (0.5 * m + 2 + 0.5 * (m + 1) + 3 * (m + 1)) * pass + xgboost,
          .quantize = 2 * (m + 1) * pass};
}

double stage_deadline(const std::string& stage, double budget, const TailPlan& tail) {
  constexpr double kMargin = 1.25;
  if (stage == "retrain") {
    const double end = budget - std::max(kMargin * tail.total(), 0.02 * budget);
    return std::max(end, stage_deadline("tune", budget));  // a tiny budget: no retraining time
  }
  if (stage == "ensemble") return budget - std::max(kMargin * tail.quantize, 0.01 * budget);
  return stage_deadline(stage, budget);
}

// "15m", "90s", "1h", "2m30s" or plain seconds.
double parse_budget(const std::string& text) {
  static const std::regex pattern(
      R"(^\s*(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?\s*$)");
  std::smatch m;
  double seconds = 0;
  if (std::regex_match(text, m, pattern) && !text.empty()) {
    if (m[1].matched) seconds += std::stod(m[1]) * 3600;
    if (m[2].matched) seconds += std::stod(m[2]) * 60;
    if (m[3].matched) seconds += std::stod(m[3]);
  }
  OSPREY_CHECK_T(cli::UsageError, seconds >= 10,
                 "osprey run: --budget must be a duration of at least 10 seconds such as 15m, "
                 "90s or 1h. Received: {}",
                 text);
  return seconds;
}

std::string clock_text(double seconds) {
  const auto s = static_cast<int64_t>(std::max(0.0, seconds));
  return fmt::format("{:02d}:{:02d}", s / 60, s % 60);
}

// What serving needs of a saved model or ensemble: every file but the optimizer's state.
int64_t directory_bytes(const fs::path& dir) {
  int64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "optimizer.safetensors")
      total += static_cast<int64_t>(e.file_size());
  }
  return total;
}

void Progress::on_train_batch_end(int64_t, const train::Logs&) {
  if (clock_.now() > stop_at_) model().stop_training() = true;
}

void Progress::on_epoch_end(int epoch, const train::Logs& logs) {
  const double now = clock_.now();
  std::string metrics;
  for (const auto& [k, v] : logs.items()) metrics += fmt::format(" {} {:.4f}", k, v);
  fmt::print("[{} elapsed, {} left] {}: epoch {}{}\n", clock_text(now), clock_text(budget_ - now),
             label_, epoch + 1, metrics);
  std::fflush(stdout);
  state_.save_elapsed(now);
}

// The splits, cut down for small budgets so that a 1-minute run still does every stage.
Splits make_splits(const RunArgs& a, double budget) {
  auto data = datasets::fashion_mnist::load({.directory = a.data});
  auto [train_val, holdout] = data.train.split_tail(5000);
  auto [train, val] = train_val.split_tail(5000);
  const double scale = std::min(1.0, budget / 900.0);
  const auto rows = [&](int64_t full, int64_t least, const data::LabeledArrays& from) {
    return from.slice(0,
                      std::min(from.size(), std::max(least, static_cast<int64_t>(full * scale))));
  };
  Splits s;
  s.tune_train = rows(20000, 1000, train);
  s.val = rows(5000, 500, val);
  s.holdout = rows(5000, 1000, holdout);
  // Retraining sees the training rows and the validation rows the tuner scored on.
  const data::LabeledArrays retrain_rows = rows(50000, 2000, train);
  s.train_and_val = {concat({retrain_rows.x, s.val.x}), concat({retrain_rows.y, s.val.y})};
  s.test = data.test;
  return s;
}

}  // namespace osprey::cli
