// Objective: the metric a search optimizes and its direction, as kt.Objective. Built-in names
// infer the direction (anything with "loss" or an error metric: min; accuracy, auc, precision,
// recall: max); a custom metric names its direction.
//   Objective("val_accuracy");                  // max
//   Objective("val_custom_score", "max");
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace osprey::tune {

class Objective {
 public:
  Objective(const char* name)
      : Objective(std::string(name)) {}                // NOLINT(google-explicit-constructor)
  Objective(std::string name);                         // NOLINT: infers the direction
  Objective(std::string name, std::string direction);  // "min" or "max"

  const std::string& name() const { return name_; }
  const std::string& direction() const { return direction_; }
  bool maximize() const { return direction_ == "max"; }
  // Whether a is strictly better than b.
  bool better(double a, double b) const { return maximize() ? a > b : a < b; }
  // The worst possible value (the start of a running best).
  double worst() const;

  nlohmann::json to_json() const { return {{"name", name_}, {"direction", direction_}}; }
  static Objective from_json(const nlohmann::json& j);

  friend bool operator==(const Objective&, const Objective&) = default;

 private:
  std::string name_, direction_;
};

}  // namespace osprey::tune
