#include "osprey/optim/schedules.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "osprey/core/error.h"
#include "osprey/optim/config_reader.h"

namespace osprey::optim {

using nlohmann::json;

json Schedule::serialize() const {
  return {{"class_name", class_name()}, {"config", get_config()}};
}

std::shared_ptr<const Schedule> schedule_from_config(const json& serialized) {
  detail::ConfigReader r(serialized, "schedule_from_config");
  const std::string cls = r.string("class_name", "");
  const json* config = r.raw("config");
  OSPREY_CHECK(config != nullptr,
               "schedule_from_config: the \"config\" field is missing. Received: {}",
               serialized.dump());
  r.raw("module");  // Keras writes these two; they carry nothing osprey needs
  r.raw("registered_name");
  r.finish();
  if (cls == "Constant") return std::make_shared<const Constant>(Constant::from_config(*config));
  if (cls == "ExponentialDecay") {
    return std::make_shared<const ExponentialDecay>(ExponentialDecay::from_config(*config));
  }
  if (cls == "CosineDecay")
    return std::make_shared<const CosineDecay>(CosineDecay::from_config(*config));
  if (cls == "PiecewiseConstantDecay" || cls == "PiecewiseConstant") {
    return std::make_shared<const PiecewiseConstantDecay>(
        PiecewiseConstantDecay::from_config(*config));
  }
  if (cls == "LinearWarmup")
    return std::make_shared<const LinearWarmup>(LinearWarmup::from_config(*config));
  OSPREY_THROW(ValueError,
               "schedule_from_config: unknown schedule class \"{}\". Expected one of: Constant, "
               "ExponentialDecay, CosineDecay, PiecewiseConstantDecay, LinearWarmup",
               cls);
}

// ---- LearningRate

LearningRate::LearningRate(std::shared_ptr<const Schedule> schedule)
    : schedule_(std::move(schedule)) {
  OSPREY_CHECK(schedule_ != nullptr, "LearningRate: the schedule must not be null");
}

json LearningRate::to_config() const { return schedule_ ? schedule_->serialize() : json(value_); }

LearningRate LearningRate::from_config(const json& j) {
  if (j.is_number()) return LearningRate(j.get<double>());
  OSPREY_CHECK(j.is_object(),
               "learning_rate must be a number or a serialized schedule. Received: {}", j.dump());
  return LearningRate(schedule_from_config(j));
}

// ---- Constant

json Constant::get_config() const { return {{"learning_rate", learning_rate_}}; }

Constant Constant::from_config(const json& config) {
  detail::ConfigReader r(config, "Constant");
  const double lr = r.number("learning_rate", 0.0);
  r.finish();
  return Constant(lr);
}

// ---- ExponentialDecay

ExponentialDecay::ExponentialDecay(ExponentialDecayOptions options) : o_(std::move(options)) {
  OSPREY_CHECK(o_.decay_steps > 0,
               "ExponentialDecay: decay_steps must be > 0. Received: decay_steps={}",
               o_.decay_steps);
}

double ExponentialDecay::operator()(int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(o_.decay_steps);
  if (o_.staircase) p = std::floor(p);
  return o_.initial_learning_rate * std::pow(o_.decay_rate, p);
}

json ExponentialDecay::get_config() const {
  return {{"initial_learning_rate", o_.initial_learning_rate},
          {"decay_steps", o_.decay_steps},
          {"decay_rate", o_.decay_rate},
          {"staircase", o_.staircase},
          {"name", o_.name}};
}

ExponentialDecay ExponentialDecay::from_config(const json& config) {
  detail::ConfigReader r(config, "ExponentialDecay");
  ExponentialDecayOptions o;
  o.initial_learning_rate = r.number("initial_learning_rate", 0.0);
  o.decay_steps = r.integer("decay_steps", 0);
  o.decay_rate = r.number("decay_rate", 0.0);
  o.staircase = r.boolean("staircase", false);
  o.name = r.string("name", o.name);
  r.finish();
  return ExponentialDecay(std::move(o));
}

// ---- CosineDecay

CosineDecay::CosineDecay(CosineDecayOptions options) : o_(std::move(options)) {
  OSPREY_CHECK(o_.decay_steps > 0, "CosineDecay: decay_steps must be > 0. Received: decay_steps={}",
               o_.decay_steps);
  OSPREY_CHECK(o_.warmup_steps >= 0,
               "CosineDecay: warmup_steps must be >= 0. Received: warmup_steps={}",
               o_.warmup_steps);
}

double CosineDecay::operator()(int64_t step) const {
  const double decay_steps = static_cast<double>(o_.decay_steps);
  const auto decayed = [&](double s, double from) {
    const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * s / decay_steps));
    return from * ((1.0 - o_.alpha) * cosine + o_.alpha);
  };
  double s = static_cast<double>(step);
  if (!o_.warmup_target) return decayed(std::min(s, decay_steps), o_.initial_learning_rate);
  const double warmup_steps = static_cast<double>(o_.warmup_steps);
  s = std::min(s, decay_steps + warmup_steps);
  if (s < warmup_steps) {
    return (*o_.warmup_target - o_.initial_learning_rate) * (s / warmup_steps) +
           o_.initial_learning_rate;
  }
  return decayed(s - warmup_steps, *o_.warmup_target);
}

json CosineDecay::get_config() const {
  return {{"initial_learning_rate", o_.initial_learning_rate},
          {"decay_steps", o_.decay_steps},
          {"alpha", o_.alpha},
          {"name", o_.name},
          {"warmup_target", o_.warmup_target ? json(*o_.warmup_target) : json(nullptr)},
          {"warmup_steps", o_.warmup_steps}};
}

CosineDecay CosineDecay::from_config(const json& config) {
  detail::ConfigReader r(config, "CosineDecay");
  CosineDecayOptions o;
  o.initial_learning_rate = r.number("initial_learning_rate", 0.0);
  o.decay_steps = r.integer("decay_steps", 0);
  o.alpha = r.number("alpha", 0.0);
  o.name = r.string("name", o.name);
  o.warmup_target = r.optional_number("warmup_target");
  o.warmup_steps = r.integer("warmup_steps", 0);
  r.finish();
  return CosineDecay(std::move(o));
}

// ---- PiecewiseConstantDecay

PiecewiseConstantDecay::PiecewiseConstantDecay(PiecewiseConstantDecayOptions options)
    : o_(std::move(options)) {
  OSPREY_CHECK(o_.boundaries.size() + 1 == o_.values.size(),
               "PiecewiseConstantDecay: the length of boundaries should be 1 less than the length "
               "of values. Received: boundaries=[{}] of length {}, and values=[{}] of length {}.",
               fmt::join(o_.boundaries, ", "), o_.boundaries.size(), fmt::join(o_.values, ", "),
               o_.values.size());
  for (size_t i = 1; i < o_.boundaries.size(); ++i) {
    OSPREY_CHECK(o_.boundaries[i - 1] < o_.boundaries[i],
                 "PiecewiseConstantDecay: boundaries must be strictly increasing. Received: "
                 "boundaries=[{}]",
                 fmt::join(o_.boundaries, ", "));
  }
}

double PiecewiseConstantDecay::operator()(int64_t step) const {
  const auto it = std::lower_bound(o_.boundaries.begin(), o_.boundaries.end(), step);
  return o_.values[static_cast<size_t>(it - o_.boundaries.begin())];
}

json PiecewiseConstantDecay::get_config() const {
  return {{"boundaries", o_.boundaries}, {"values", o_.values}, {"name", o_.name}};
}

PiecewiseConstantDecay PiecewiseConstantDecay::from_config(const json& config) {
  detail::ConfigReader r(config, "PiecewiseConstantDecay");
  PiecewiseConstantDecayOptions o;
  for (double b : r.numbers("boundaries")) {
    OSPREY_CHECK(b == std::floor(b),
                 "PiecewiseConstantDecay: boundaries must be integers (steps). "
                 "Received: {}",
                 b);
    o.boundaries.push_back(static_cast<int64_t>(b));
  }
  o.values = r.numbers("values");
  o.name = r.string("name", o.name);
  r.finish();
  return PiecewiseConstantDecay(std::move(o));
}

// ---- LinearWarmup

LinearWarmup::LinearWarmup(LinearWarmupOptions options) : o_(std::move(options)) {
  OSPREY_CHECK(o_.warmup_steps >= 0,
               "LinearWarmup: warmup_steps must be >= 0. Received: warmup_steps={}",
               o_.warmup_steps);
}

double LinearWarmup::operator()(int64_t step) const {
  if (step >= o_.warmup_steps) return o_.schedule(step);
  const double target = o_.schedule(o_.warmup_steps);
  const double fraction = static_cast<double>(step) / static_cast<double>(o_.warmup_steps);
  return o_.initial_learning_rate + (target - o_.initial_learning_rate) * fraction;
}

json LinearWarmup::get_config() const {
  return {{"initial_learning_rate", o_.initial_learning_rate},
          {"warmup_steps", o_.warmup_steps},
          {"schedule", o_.schedule.to_config()},
          {"name", o_.name}};
}

LinearWarmup LinearWarmup::from_config(const json& config) {
  detail::ConfigReader r(config, "LinearWarmup");
  LinearWarmupOptions o;
  o.initial_learning_rate = r.number("initial_learning_rate", 0.0);
  o.warmup_steps = r.integer("warmup_steps", 0);
  const json* schedule = r.raw("schedule");
  OSPREY_CHECK(schedule != nullptr, "LinearWarmup: config field \"schedule\" is missing");
  o.schedule = LearningRate::from_config(*schedule);
  o.name = r.string("name", o.name);
  r.finish();
  return LinearWarmup(std::move(o));
}

// ---- scaling rules

double scaled_learning_rate(double base, int64_t num_replicas, std::string_view rule) {
  OSPREY_CHECK(num_replicas >= 1,
               "scaled_learning_rate: num_replicas must be >= 1. Received: num_replicas={}",
               num_replicas);
  if (rule == "linear") return base * static_cast<double>(num_replicas);
  if (rule == "sqrt") return base * std::sqrt(static_cast<double>(num_replicas));
  OSPREY_THROW(ValueError,
               "scaled_learning_rate: rule must be \"linear\" or \"sqrt\". Received: rule=\"{}\"",
               rule);
}

}  // namespace osprey::optim
