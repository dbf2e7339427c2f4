// What compile() takes: an optimizer, a loss and metrics, each by Keras name or as an object,
// and the step options.
#pragma once

#include <memory>
#include <string>

#include "osprey/losses/loss.h"
#include "osprey/losses/registry.h"
#include "osprey/metrics/metric.h"
#include "osprey/metrics/registry.h"
#include "osprey/optim/factory.h"
#include "osprey/optim/optimizer.h"
#include "osprey/train/strategy.h"

namespace osprey::train {

// "adam" or a configured optimizer: compile("adam", ...) or
// compile(std::make_shared<optim::Adam>(...), ...).
struct OptimizerArg {
  OptimizerArg(const char* name) : name(name) {}             // NOLINT
  OptimizerArg(std::string name) : name(std::move(name)) {}  // NOLINT
  template <class O, class = std::enable_if_t<std::is_base_of_v<optim::Optimizer, O>>>
  OptimizerArg(std::shared_ptr<O> o) : optimizer(std::move(o)) {}  // NOLINT
  std::shared_ptr<optim::Optimizer> resolve() const;
  std::string name;
  std::shared_ptr<optim::Optimizer> optimizer;
};

struct LossArg {
  LossArg(const char* name) : name(name) {}             // NOLINT
  LossArg(std::string name) : name(std::move(name)) {}  // NOLINT
  template <class L, class = std::enable_if_t<std::is_base_of_v<losses::Loss, L>>>
  LossArg(std::shared_ptr<L> l) : loss(std::move(l)) {}  // NOLINT
  std::shared_ptr<losses::Loss> resolve() const;
  std::string name;
  std::shared_ptr<losses::Loss> loss;
};

struct MetricArg {
  MetricArg(const char* name) : name(name) {}             // NOLINT
  MetricArg(std::string name) : name(std::move(name)) {}  // NOLINT
  template <class M, class = std::enable_if_t<std::is_base_of_v<metrics::Metric, M>>>
  MetricArg(std::shared_ptr<M> m) : metric(std::move(m)) {}  // NOLINT
  std::string name;
  std::shared_ptr<metrics::Metric> metric;
};

struct CompileOptions {
  // Steps run per host iteration with no callback or metric read-back in between.
  int64_t steps_per_execution = 1;
  // How steps run across devices; null: the strategy whose scope is open at compile() (the
  // model must have been built inside it), else the process-wide one (set_distribution), else
  // single_device_strategy(). Given here, it adopts a model built outside any scope.
  // fit/evaluate/predict use this one wherever they are called.
  std::shared_ptr<const Strategy> strategy = nullptr;
};

}  // namespace osprey::train
