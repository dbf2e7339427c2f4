// HyperParameter: the definition of one searchable quantity (Int, Float, Choice, Boolean, Fixed)
// with its range, step, sampling and default, and the two maps every oracle works through:
// from a uniform number u in [0, 1) to a value (random sampling), and from a value back to its
// position in [0, 1] (the coordinates the Gaussian process of BayesianOptimization sees, log
// scaled where the sampling is log). The formulas follow KerasTuner's hp_utils so a seeded
// search samples the same distribution.
//   HyperParameter hp = HyperParameter::Int("units", 16, 64, 16);   // 16, 32, 48, 64
//   hp.from_unit(0.6).as_int() == 48;  hp.to_unit(48) == 0.625
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "osprey/tune/value.h"

namespace osprey::tune {

enum class HpType { Int, Float, Choice, Boolean, Fixed };  // as KerasTuner's class names
enum class Sampling { linear, log, reverse_log };

const char* hp_type_name(HpType t);
const char* sampling_name(Sampling s);
// ValueError naming `what` and the choices for anything but linear, log, reverse_log.
Sampling parse_sampling(const std::string& s, const std::string& what);

// A child hyperparameter is active only when its parent currently takes one of `values`.
struct Condition {
  std::string parent;
  std::vector<Value> values;
  friend bool operator==(const Condition&, const Condition&) = default;
};

struct HyperParameter {
  std::string name;
  HpType type = HpType::Fixed;
  double min_value = 0, max_value = 0;  // Int and Float
  std::optional<double> step{};         // linear: added; log / reverse_log: a factor (> 1)
  Sampling sampling = Sampling::linear;
  std::vector<Value> values{};  // Choice (Boolean: false, true; Fixed: the value)
  bool ordered = false;         // Choice: numeric values are ordered
  Value default_value{};
  std::vector<Condition> conditions{};

  // Each constructor checks its arguments (ValueError naming the hyperparameter).
  static HyperParameter Int(std::string name, int64_t min, int64_t max,
                            std::optional<int64_t> step = {}, Sampling sampling = Sampling::linear,
                            std::optional<int64_t> default_value = {});
  static HyperParameter Float(std::string name, double min, double max,
                              std::optional<double> step = {}, Sampling sampling = Sampling::linear,
                              std::optional<double> default_value = {});
  static HyperParameter Choice(std::string name, std::vector<Value> values,
                               std::optional<bool> ordered = {},
                               std::optional<Value> default_value = {});
  static HyperParameter Boolean(std::string name, bool default_value = false);
  static HyperParameter Fixed(std::string name, Value value);

  // Whether the hyperparameter has anything to search (Fixed, and Choice of one value, do not).
  bool tunable() const;
  // u in [0, 1) -> a value in the range; uniform over the grid when there is a step.
  Value from_unit(double u) const;
  // A value -> its position in [0, 1] (the centre of its cell for discrete values).
  double to_unit(const Value& v) const;
  // Whether v is a value this hyperparameter can take (type, range, grid, membership).
  bool contains(const Value& v) const;
  // "Int units: [16, 64] step 16, linear, default 16"
  std::string describe() const;

  // {"class_name": "Int", "config": {"name", "min_value", "max_value", "step", "sampling",
  // "default", "conditions"}}, as KerasTuner serializes.
  nlohmann::json to_json() const;
  static HyperParameter from_json(const nlohmann::json& j, const std::string& where);

  friend bool operator==(const HyperParameter&, const HyperParameter&) = default;

 private:
  int64_t grid_size() const;  // values on the stepped grid (Int and Float with a step)
  Value grid_value(int64_t index) const;
};

}  // namespace osprey::tune
