#include "osprey/tune/trial_tensorboard.h"

#include <fmt/format.h>

#include <set>

#include "osprey/train/callbacks/hparams.h"
#include "osprey/train/callbacks/tensorboard.h"

namespace osprey::tune {
namespace {

io::HParamValue hparam_value(const Value& v) {
  if (v.is_bool()) return v.as_bool();
  if (v.is_string()) return v.as_string();
  return v.as_double();
}

io::HParamInfo hparam_info(const HyperParameter& hp) {
  io::HParamInfo info{.name = hp.name};
  if (hp.type == HpType::Int || hp.type == HpType::Float) {
    info.range = std::make_pair(hp.min_value, hp.max_value);
  } else {
    for (const Value& v : hp.values) info.values.push_back(hparam_value(v));
  }
  return info;
}

}  // namespace

std::vector<train::CallbackPtr> trial_callbacks(const std::vector<train::CallbackPtr>& callbacks,
                                                const Trial& trial, int execution) {
  std::vector<train::CallbackPtr> out;
  for (const train::CallbackPtr& c : callbacks) {
    if (const auto* tb = dynamic_cast<const train::TensorBoard*>(c.get())) {
      const std::string group = fmt::format("trial_{}", trial.trial_id);
      const std::filesystem::path run =
          tb->log_dir() / group / fmt::format("execution_{}", execution);
      std::map<std::string, io::HParamValue> values;
      for (const auto& [name, value] : trial.hyperparameters.values()) {
        if (trial.hyperparameters.is_active(name)) values.emplace(name, hparam_value(value));
      }
      out.push_back(std::make_shared<train::TensorBoard>(run, tb->options()));
      out.push_back(std::make_shared<train::HParams>(run, std::move(values), group));
      continue;
    }
    auto copy = c->clone();
    out.push_back(copy ? copy : c);
  }
  return out;
}

void write_hparams_experiment(const std::vector<train::CallbackPtr>& callbacks,
                              const Oracle& oracle) {
  std::vector<io::HParamInfo> hparams;
  for (const HyperParameter& hp : oracle.hyperparameters().space()) {
    hparams.push_back(hparam_info(hp));
  }
  // Each metric once, as the TensorBoard callback files it: val_x under validation/epoch_x.
  std::set<std::pair<std::string, std::string>> names;
  for (const Trial& t : oracle.trials()) {
    for (const auto& execution : t.executions) {
      for (const EpochRecord& r : execution) {
        for (const auto& [name, value] : r.metrics) {
          if (name.rfind("val_", 0) == 0) {
            names.emplace("validation", "epoch_" + name.substr(4));
          } else {
            names.emplace("train", "epoch_" + name);
          }
        }
      }
    }
  }
  std::vector<io::HParamMetric> metrics;
  metrics.reserve(names.size());
  for (const auto& [group, tag] : names) metrics.push_back({.group = group, .tag = tag});
  for (const train::CallbackPtr& c : callbacks) {
    if (const auto* tb = dynamic_cast<const train::TensorBoard*>(c.get())) {
      io::EventFileWriter(tb->log_dir()).add_hparams_experiment(hparams, metrics);
    }
  }
}

}  // namespace osprey::tune
