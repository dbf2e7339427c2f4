#include "osprey/tune/objective.h"

#include <limits>
#include <string_view>

#include "osprey/core/error.h"

namespace osprey::tune {

namespace {
bool has(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}
}  // namespace

Objective::Objective(std::string name) : name_(std::move(name)) {
  OSPREY_CHECK(!name_.empty(), "Objective: the metric name is empty");
  std::string_view base = name_;
  if (base.rfind("val_", 0) == 0) base.remove_prefix(4);
  if (has(base, "loss") || has(base, "error") || base == "mse" || base == "mae" || base == "mape" ||
      base == "msle" || base == "rmse") {
    direction_ = "min";
  } else if (has(base, "accuracy") || has(base, "acc") || has(base, "auc") ||
             has(base, "precision") || has(base, "recall") || base == "r2_score" ||
             has(base, "f1")) {
    direction_ = "max";
  } else {
    OSPREY_THROW(ValueError,
                 "Objective: cannot infer whether to minimize or maximize '{}'; give it, e.g. "
                 "Objective(\"{}\", \"max\")",
                 name_, name_);
  }
}

Objective::Objective(std::string name, std::string direction)
    : name_(std::move(name)), direction_(std::move(direction)) {
  OSPREY_CHECK(!name_.empty(), "Objective: the metric name is empty");
  OSPREY_CHECK(direction_ == "min" || direction_ == "max",
               "Objective('{}'): direction must be \"min\" or \"max\". Received: \"{}\"", name_,
               direction_);
}

double Objective::worst() const {
  return maximize() ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
}

Objective Objective::from_json(const nlohmann::json& j) {
  OSPREY_CHECK(j.is_object() && j.contains("name") && j.contains("direction"),
               "Objective: expected {{\"name\": ..., \"direction\": ...}}, got {}", j.dump());
  return Objective(j.at("name").get<std::string>(), j.at("direction").get<std::string>());
}

}  // namespace osprey::tune
