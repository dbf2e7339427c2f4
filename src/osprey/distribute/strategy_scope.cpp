#include "osprey/distribute/strategy_scope.h"

#include "osprey/core/error.h"

namespace osprey::distribute {

StrategyScope::StrategyScope(std::shared_ptr<const train::Strategy> strategy) {
  OSPREY_CHECK(strategy != nullptr, "StrategyScope: the strategy is null");
  const std::string name = strategy->name();
  previous_ = train::exchange_current_strategy(std::move(strategy));
  if (previous_ && previous_->name() != name) {
    const std::string open = previous_->name();
    train::exchange_current_strategy(std::move(previous_));
    active_ = false;
    OSPREY_THROW(ValueError,
                 "{}.scope(): a {} scope is already open on this thread; mixing strategies is not "
                 "supported, "
                 "close it first",
                 name, open);
  }
}

StrategyScope::~StrategyScope() {
  if (active_) train::exchange_current_strategy(std::move(previous_));
}

StrategyScope::StrategyScope(StrategyScope&& other) noexcept
    : previous_(std::move(other.previous_)), active_(other.active_) {
  other.active_ = false;
}

}  // namespace osprey::distribute
