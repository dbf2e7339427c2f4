// Learning-rate schedules (Keras's keras.optimizers.schedules) and LearningRate, the value an
// optimizer's learning_rate option holds: a constant or a Schedule of the optimizer's step
// (iterations(): 0 for the first update). Plus the large-batch rules of the seeds: scale the
// base rate with the replica count, and reach the scaled rate by a linear warmup.
//   Adam adam({.learning_rate = CosineDecay({.initial_learning_rate = 1e-3, .decay_steps =
//   10000})}); double lr = scaled_learning_rate(0.1, /*num_replicas=*/8, "linear");          // 0.8
//   LinearWarmup warm({.initial_learning_rate = 0.1, .warmup_steps = 500, .schedule = lr});
// Configs use Keras's class and field names: {"class_name": "ExponentialDecay", "config": {...}}.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace osprey::optim {

// A learning rate as a function of the optimizer step. Schedules are immutable values.
class Schedule {
 public:
  virtual ~Schedule() = default;
  // The rate for the update about to run; step is the number of updates already applied.
  virtual double operator()(int64_t step) const = 0;
  virtual std::string class_name() const = 0;  // "ExponentialDecay"
  virtual nlohmann::json get_config() const = 0;
  // {"class_name": class_name(), "config": get_config()}.
  nlohmann::json serialize() const;
};

// Inverse of Schedule::serialize(); also accepts Keras's extra "module"/"registered_name" keys.
// Throws ValueError for an unknown class name or a bad config.
std::shared_ptr<const Schedule> schedule_from_config(const nlohmann::json& serialized);

// A constant rate or a shared, immutable Schedule. Converts implicitly from both, so options
// read like Keras: `.learning_rate = 0.01` or `.learning_rate = ExponentialDecay({...})`.
class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}            // NOLINT(google-explicit-constructor)
  LearningRate(std::shared_ptr<const Schedule> schedule);  // NOLINT: throws on null
  template <std::derived_from<Schedule> S>
  LearningRate(S schedule)  // NOLINT(google-explicit-constructor)
      : schedule_(std::make_shared<const S>(std::move(schedule))) {}

  double operator()(int64_t step) const { return schedule_ ? (*schedule_)(step) : value_; }
  bool is_schedule() const noexcept { return schedule_ != nullptr; }
  const std::shared_ptr<const Schedule>& schedule() const noexcept { return schedule_; }
  // A number for a constant, the serialized schedule otherwise (Keras's learning_rate field).
  nlohmann::json to_config() const;
  static LearningRate from_config(const nlohmann::json& j);

 private:
  double value_ = 0.0;
  std::shared_ptr<const Schedule> schedule_;
};

// The same rate at every step.
class Constant final : public Schedule {
 public:
  explicit Constant(double learning_rate) : learning_rate_(learning_rate) {}
  double operator()(int64_t) const override { return learning_rate_; }
  std::string class_name() const override { return "Constant"; }
  nlohmann::json get_config() const override;
  static Constant from_config(const nlohmann::json& config);

 private:
  double learning_rate_;
};

// initial_learning_rate * decay_rate ^ (step / decay_steps), the exponent floored if staircase.
struct ExponentialDecayOptions {
  double initial_learning_rate = 0.0;
  int64_t decay_steps = 0;  // > 0
  double decay_rate = 0.0;
  bool staircase = false;
  std::string name = "ExponentialDecay";
};
class ExponentialDecay final : public Schedule {
 public:
  explicit ExponentialDecay(ExponentialDecayOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "ExponentialDecay"; }
  nlohmann::json get_config() const override;
  static ExponentialDecay from_config(const nlohmann::json& config);
  const ExponentialDecayOptions& options() const noexcept { return o_; }

 private:
  ExponentialDecayOptions o_;
};

// Keras 3's CosineDecay: without warmup_target, decays from initial_learning_rate to
// initial_learning_rate * alpha over decay_steps (then stays). With one, first rises linearly
// from initial_learning_rate to warmup_target over warmup_steps, then decays from
// warmup_target to warmup_target * alpha over the next decay_steps.
struct CosineDecayOptions {
  double initial_learning_rate = 0.0;
  int64_t decay_steps = 0;  // > 0
  double alpha = 0.0;
  std::string name = "CosineDecay";
  std::optional<double> warmup_target = std::nullopt;
  int64_t warmup_steps = 0;
};
class CosineDecay final : public Schedule {
 public:
  explicit CosineDecay(CosineDecayOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "CosineDecay"; }
  nlohmann::json get_config() const override;
  static CosineDecay from_config(const nlohmann::json& config);
  const CosineDecayOptions& options() const noexcept { return o_; }

 private:
  CosineDecayOptions o_;
};

// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
// values.back() after the last boundary (Keras's PiecewiseConstantDecay).
struct PiecewiseConstantDecayOptions {
  std::vector<int64_t> boundaries;  // strictly increasing
  std::vector<double> values;       // boundaries.size() + 1 of them
  std::string name = "PiecewiseConstant";
};
class PiecewiseConstantDecay final : public Schedule {
 public:
  explicit PiecewiseConstantDecay(PiecewiseConstantDecayOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "PiecewiseConstantDecay"; }
  nlohmann::json get_config() const override;
  static PiecewiseConstantDecay from_config(const nlohmann::json& config);
  const PiecewiseConstantDecayOptions& options() const noexcept { return o_; }

 private:
  PiecewiseConstantDecayOptions o_;
};
using PiecewiseConstant = PiecewiseConstantDecay;

// The seeds' large-batch rule (Goyal et al. 2017): start from a base rate (the single-replica
// one) and reach the wrapped schedule linearly over warmup_steps, then follow it:
//   step <  warmup_steps: initial + (schedule(warmup_steps) - initial) * step / warmup_steps
//   step >= warmup_steps: schedule(step)      (the wrapped schedule's steps are not shifted)
// so the rate is continuous where warmup ends. schedule is usually scaled_learning_rate(...) or
// a decay whose initial rate is that.
struct LinearWarmupOptions {
  double initial_learning_rate = 0.0;
  int64_t warmup_steps = 0;  // >= 0; 0 is no warmup
  LearningRate schedule = 0.0;
  std::string name = "LinearWarmup";
};
class LinearWarmup final : public Schedule {
 public:
  explicit LinearWarmup(LinearWarmupOptions options);
  double operator()(int64_t step) const override;
  std::string class_name() const override { return "LinearWarmup"; }
  nlohmann::json get_config() const override;
  static LinearWarmup from_config(const nlohmann::json& config);
  const LinearWarmupOptions& options() const noexcept { return o_; }

 private:
  LinearWarmupOptions o_;
};

// The learning rate for num_replicas replicas (global batch = num_replicas * per-replica batch):
// "linear" multiplies base by num_replicas (Goyal et al.), "sqrt" by its square root (Krizhevsky
// 2014, often better for Adam). Throws ValueError for num_replicas < 1 or another rule.
double scaled_learning_rate(double base, int64_t num_replicas, std::string_view rule = "linear");

}  // namespace osprey::optim
