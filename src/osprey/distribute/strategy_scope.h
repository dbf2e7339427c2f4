// StrategyScope: the RAII guard strategy.scope() returns. While it lives, the strategy is the
// current one on this thread (train::current_strategy()), so a model compiled inside it is bound
// to it and later fit/evaluate/predict calls use it, inside the scope or not. Opening the scope
// of a different kind of strategy inside another is a ValueError naming both (tf.distribute
// forbids mixing strategies).
//   os::distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
//   { auto scope = strategy.scope(); model = build_model(); model.compile("adam", "mse"); }
#pragma once

#include <memory>

#include "osprey/train/strategy.h"

namespace osprey::distribute {

class [[nodiscard]] StrategyScope {
 public:
  explicit StrategyScope(std::shared_ptr<const train::Strategy> strategy);
  ~StrategyScope();
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;
  StrategyScope(StrategyScope&& other) noexcept;
  StrategyScope& operator=(StrategyScope&&) = delete;

 private:
  std::shared_ptr<const train::Strategy> previous_;
  bool active_ = true;
};

}  // namespace osprey::distribute
