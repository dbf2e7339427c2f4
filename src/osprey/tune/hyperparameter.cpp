#include "osprey/tune/hyperparameter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "osprey/core/error.h"
#include "osprey/io/json.h"

namespace osprey::tune {

const char* hp_type_name(HpType t) {
  switch (t) {
    case HpType::Int:
      return "Int";
    case HpType::Float:
      return "Float";
    case HpType::Choice:
      return "Choice";
    case HpType::Boolean:
      return "Boolean";
    case HpType::Fixed:
      return "Fixed";
  }
  return "?";
}

const char* sampling_name(Sampling s) {
  switch (s) {
    case Sampling::linear:
      return "linear";
    case Sampling::log:
      return "log";
    case Sampling::reverse_log:
      return "reverse_log";
  }
  return "?";
}

Sampling parse_sampling(const std::string& s, const std::string& what) {
  if (s == "linear") return Sampling::linear;
  if (s == "log") return Sampling::log;
  if (s == "reverse_log") return Sampling::reverse_log;
  OSPREY_THROW(ValueError, "{}: sampling must be linear, log or reverse_log. Received: '{}'", what,
               s);
}

namespace {

// How many values a stepped range holds, as a double: a range read from a file may hold more than
// int64 counts (min 0, max 1e23, step 32).
double grid_count(double min, double max, double step, Sampling sampling) {
  if (sampling == Sampling::linear) return std::floor((max - min) / step + 1e-9) + 1;
  return std::floor(std::log(max / min) / std::log(step) + 1e-9) + 1;
}

// The most values a stepped range may hold: every index is exact in a double, and far from
// int64's limit. No search enumerates that many.
constexpr double kMaxGridValues = 9007199254740992.0;  // 2^53

void check_range(const std::string& name, double min, double max, std::optional<double> step,
                 Sampling sampling) {
  OSPREY_CHECK(
      std::isfinite(min) && std::isfinite(max) && min <= max,
      "hyperparameter '{}': min_value must be <= max_value. Received: min_value={}, max_value={}",
      name, min, max);
  if (sampling != Sampling::linear) {
    OSPREY_CHECK(min > 0,
                 "hyperparameter '{}': {} sampling needs min_value > 0. Received: min_value={}",
                 name, sampling_name(sampling), min);
  }
  if (step) {
    if (sampling == Sampling::linear) {
      OSPREY_CHECK(*step > 0, "hyperparameter '{}': step must be positive. Received: step={}", name,
                   *step);
    } else {
      OSPREY_CHECK(*step > 1,
                   "hyperparameter '{}': with {} sampling step is a factor and must be > 1. "
                   "Received: step={}",
                   name, sampling_name(sampling), *step);
    }
    const double n = grid_count(min, max, *step, sampling);
    OSPREY_CHECK(n <= kMaxGridValues,
                 "hyperparameter '{}': step {} makes {:.3g} values from {} to {}; at most 2^53 "
                 "are allowed (use a larger step, or none)",
                 name, *step, n, min, max);
  }
}

double clamp_unit(double u) { return std::clamp(u, 0.0, std::nextafter(1.0, 0.0)); }

// Continuous u -> x in [lo, hi] by the sampling curve, and back.
double curve(double u, double lo, double hi, Sampling s) {
  switch (s) {
    case Sampling::linear:
      return lo + u * (hi - lo);
    case Sampling::log:
      return lo * std::pow(hi / lo, u);
    case Sampling::reverse_log:
      return hi + lo - lo * std::pow(hi / lo, 1.0 - u);
  }
  return lo;
}

double inverse_curve(double x, double lo, double hi, Sampling s) {
  if (hi <= lo) return 0.5;
  switch (s) {
    case Sampling::linear:
      return (x - lo) / (hi - lo);
    case Sampling::log:
      return std::log(x / lo) / std::log(hi / lo);
    case Sampling::reverse_log:
      return 1.0 - std::log((hi + lo - x) / lo) / std::log(hi / lo);
  }
  return 0.5;
}

}  // namespace

HyperParameter HyperParameter::Int(std::string name, int64_t min, int64_t max,
                                   std::optional<int64_t> step, Sampling sampling,
                                   std::optional<int64_t> default_value) {
  HyperParameter hp;
  hp.name = std::move(name);
  hp.type = HpType::Int;
  hp.min_value = static_cast<double>(min);
  hp.max_value = static_cast<double>(max);
  if (step) hp.step = static_cast<double>(*step);
  hp.sampling = sampling;
  check_range(hp.name, hp.min_value, hp.max_value, hp.step, sampling);
  hp.default_value = default_value ? *default_value : min;
  OSPREY_CHECK(hp.contains(hp.default_value),
               "hyperparameter '{}': default {} is not one of its values ({})", hp.name,
               hp.default_value.to_string(), hp.describe());
  return hp;
}

HyperParameter HyperParameter::Float(std::string name, double min, double max,
                                     std::optional<double> step, Sampling sampling,
                                     std::optional<double> default_value) {
  HyperParameter hp;
  hp.name = std::move(name);
  hp.type = HpType::Float;
  hp.min_value = min;
  hp.max_value = max;
  hp.step = step;
  hp.sampling = sampling;
  check_range(hp.name, min, max, step, sampling);
  hp.default_value = default_value ? *default_value : min;
  OSPREY_CHECK(hp.contains(hp.default_value),
               "hyperparameter '{}': default {} is not one of its values ({})", hp.name,
               hp.default_value.to_string(), hp.describe());
  return hp;
}

HyperParameter HyperParameter::Choice(std::string name, std::vector<Value> values,
                                      std::optional<bool> ordered,
                                      std::optional<Value> default_value) {
  HyperParameter hp;
  hp.name = std::move(name);
  hp.type = HpType::Choice;
  OSPREY_CHECK(!values.empty(), "hyperparameter '{}': Choice needs at least one value", hp.name);
  const std::string kind = values[0].type_name();
  for (const Value& v : values) {
    OSPREY_CHECK(
        v.type_name() == kind,
        "hyperparameter '{}': Choice values must all be of one type. Received {} and {} ({})",
        hp.name, kind, v.type_name(), v.to_string());
  }
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      OSPREY_CHECK(!(values[i] == values[j]), "hyperparameter '{}': Choice value {} appears twice",
                   hp.name, values[i].to_string());
    }
  }
  const bool numeric = values[0].is_number();
  OSPREY_CHECK(!ordered.value_or(false) || numeric,
               "hyperparameter '{}': only numeric choices can be ordered", hp.name);
  hp.ordered = ordered.value_or(numeric);
  hp.values = std::move(values);
  hp.default_value = default_value ? *default_value : hp.values[0];
  OSPREY_CHECK(hp.contains(hp.default_value),
               "hyperparameter '{}': default {} is not one of its values ({})", hp.name,
               hp.default_value.to_string(), hp.describe());
  return hp;
}

HyperParameter HyperParameter::Boolean(std::string name, bool default_value) {
  HyperParameter hp;
  hp.name = std::move(name);
  hp.type = HpType::Boolean;
  hp.values = {Value(false), Value(true)};
  hp.default_value = default_value;
  return hp;
}

HyperParameter HyperParameter::Fixed(std::string name, Value value) {
  HyperParameter hp;
  hp.name = std::move(name);
  hp.type = HpType::Fixed;
  hp.values = {value};
  hp.default_value = std::move(value);
  return hp;
}

bool HyperParameter::tunable() const {
  switch (type) {
    case HpType::Int:
    case HpType::Float:
      return max_value > min_value;
    case HpType::Choice:
      return values.size() > 1;
    case HpType::Boolean:
      return true;
    case HpType::Fixed:
      return false;
  }
  return false;
}

int64_t HyperParameter::grid_size() const {
  return static_cast<int64_t>(grid_count(min_value, max_value, *step, sampling));  // check_range
}

Value HyperParameter::grid_value(int64_t i) const {
  const int64_t n = grid_size();
  double x = 0;
  switch (sampling) {
    case Sampling::linear:
      x = min_value + static_cast<double>(i) * *step;
      break;
    case Sampling::log:
      x = min_value * std::pow(*step, static_cast<double>(i));
      break;
    case Sampling::reverse_log:
      x = max_value + min_value - min_value * std::pow(*step, static_cast<double>(n - 1 - i));
      break;
  }
  if (type == HpType::Int) return static_cast<int64_t>(std::llround(x));
  return x;
}

Value HyperParameter::from_unit(double u) const {
  u = clamp_unit(u);
  switch (type) {
    case HpType::Int:
    case HpType::Float: {
      if (step) {
        const int64_t n = grid_size();
        return grid_value(
            std::min<int64_t>(n - 1, static_cast<int64_t>(std::floor(u * static_cast<double>(n)))));
      }
      if (type == HpType::Float)
        return std::clamp(curve(u, min_value, max_value, sampling), min_value, max_value);
      // Integers: the curve over [min, max + 1), floored, so each integer gets its share.
      const double x = curve(u, min_value, max_value + 1, sampling);
      return static_cast<int64_t>(std::clamp(std::floor(x), min_value, max_value));
    }
    case HpType::Choice:
    case HpType::Boolean: {
      const auto n = static_cast<double>(values.size());
      return values[std::min(values.size() - 1, static_cast<size_t>(std::floor(u * n)))];
    }
    case HpType::Fixed:
      return values[0];
  }
  return default_value;
}

double HyperParameter::to_unit(const Value& v) const {
  switch (type) {
    case HpType::Int:
    case HpType::Float: {
      const double x = v.as_double();
      if (step) {
        const int64_t n = grid_size();
        int64_t best = 0;
        double best_d = INFINITY;
        for (int64_t i = 0; i < n; ++i) {
          const double d = std::abs(grid_value(i).as_double() - x);
          if (d < best_d) best_d = d, best = i;
        }
        return (static_cast<double>(best) + 0.5) / static_cast<double>(n);
      }
      if (type == HpType::Float)
        return std::clamp(inverse_curve(x, min_value, max_value, sampling), 0.0, 1.0);
      return std::clamp(inverse_curve(x + 0.5, min_value, max_value + 1, sampling), 0.0, 1.0);
    }
    case HpType::Choice:
    case HpType::Boolean: {
      for (size_t i = 0; i < values.size(); ++i) {
        if (values[i] == v)
          return (static_cast<double>(i) + 0.5) / static_cast<double>(values.size());
      }
      OSPREY_THROW(ValueError, "hyperparameter '{}': {} is not one of its values ({})", name,
                   v.to_string(), describe());
    }
    case HpType::Fixed:
      return 0.5;
  }
  return 0.5;
}

bool HyperParameter::contains(const Value& v) const {
  switch (type) {
    case HpType::Int:
    case HpType::Float: {
      if (type == HpType::Int ? !v.is_int() : !v.is_number()) return false;
      const double x = v.as_double();
      const double tol = 1e-9 * std::max(1.0, std::abs(max_value));
      if (x < min_value - tol || x > max_value + tol) return false;
      if (!step) return true;
      const int64_t n = grid_size();
      for (int64_t i = 0; i < n; ++i) {
        if (std::abs(grid_value(i).as_double() - x) <= tol) return true;
      }
      return false;
    }
    case HpType::Choice:
    case HpType::Boolean:
    case HpType::Fixed:
      return std::find(values.begin(), values.end(), v) != values.end();
  }
  return false;
}

std::string HyperParameter::describe() const {
  std::string s;
  switch (type) {
    case HpType::Int:
    case HpType::Float:
      s = fmt::format(
          "[{}, {}]",
          Value(type == HpType::Int ? Value(static_cast<int64_t>(min_value)) : Value(min_value))
              .to_string(),
          Value(type == HpType::Int ? Value(static_cast<int64_t>(max_value)) : Value(max_value))
              .to_string());
      if (step) s += fmt::format(" step {}", Value(*step).to_string());
      s += fmt::format(", {}", sampling_name(sampling));
      break;
    case HpType::Choice:
    case HpType::Boolean:
    case HpType::Fixed: {
      std::vector<std::string> parts;
      for (const Value& v : values) parts.push_back(v.to_string());
      s = fmt::format("{{{}}}", fmt::join(parts, ", "));
      if (type == HpType::Choice && ordered) s += " ordered";
      break;
    }
  }
  s += fmt::format(", default {}", default_value.to_string());
  for (const Condition& c : conditions) {
    std::vector<std::string> parts;
    for (const Value& v : c.values) parts.push_back(v.to_string());
    s += fmt::format(", when {} in {{{}}}", c.parent, fmt::join(parts, ", "));
  }
  return s;
}

nlohmann::json HyperParameter::to_json() const {
  nlohmann::json config = {{"name", name}, {"default", tune::to_json(default_value)}};
  if (type == HpType::Int || type == HpType::Float) {
    if (type == HpType::Int) {
      config["min_value"] = static_cast<int64_t>(min_value);
      config["max_value"] = static_cast<int64_t>(max_value);
      config["step"] = step ? nlohmann::json(static_cast<int64_t>(*step)) : nlohmann::json();
    } else {
      config["min_value"] = min_value;
      config["max_value"] = max_value;
      config["step"] = step ? nlohmann::json(*step) : nlohmann::json();
    }
    config["sampling"] = sampling_name(sampling);
  } else if (type == HpType::Choice) {
    nlohmann::json vs = nlohmann::json::array();
    for (const Value& v : values) vs.push_back(tune::to_json(v));
    config["values"] = vs;
    config["ordered"] = ordered;
  } else if (type == HpType::Fixed) {
    config["value"] = tune::to_json(values[0]);
  }
  nlohmann::json conds = nlohmann::json::array();
  for (const Condition& c : conditions) {
    nlohmann::json vs = nlohmann::json::array();
    for (const Value& v : c.values) vs.push_back(tune::to_json(v));
    conds.push_back({{"class_name", "Parent"}, {"config", {{"name", c.parent}, {"values", vs}}}});
  }
  config["conditions"] = conds;
  return {{"class_name", hp_type_name(type)}, {"config", config}};
}

HyperParameter HyperParameter::from_json(const nlohmann::json& j, const std::string& where) {
  OSPREY_CHECK(j.is_object() && j.contains("class_name") && j.contains("config"),
               "{}: a hyperparameter must be an object with class_name and config, got {}", where,
               j.dump());
  const std::string cls = j.at("class_name").get<std::string>();
  const nlohmann::json& c = j.at("config");
  const std::string name = c.at("name").get<std::string>();
  const std::string at = fmt::format("{} ('{}')", where, name);
  auto opt_value = [&](const char* key) -> std::optional<Value> {
    if (!c.contains(key) || c.at(key).is_null()) return std::nullopt;
    return value_from_json(c.at(key), at);
  };
  HyperParameter hp;
  const Sampling sampling = parse_sampling(c.value("sampling", std::string("linear")), at);
  if (cls == "Int") {
    // Its bounds are read as int64 with a plain cast, undefined for a float past that range.
    io::check_float_magnitudes(c, 9.2e18, at);
    auto step = opt_value("step");
    auto def = opt_value("default");
    hp = Int(name, c.at("min_value").get<int64_t>(), c.at("max_value").get<int64_t>(),
             step ? std::optional<int64_t>(step->as_int()) : std::nullopt, sampling,
             def ? std::optional<int64_t>(def->as_int()) : std::nullopt);
  } else if (cls == "Float") {
    auto step = opt_value("step");
    auto def = opt_value("default");
    hp = Float(name, c.at("min_value").get<double>(), c.at("max_value").get<double>(),
               step ? std::optional<double>(step->as_double()) : std::nullopt, sampling,
               def ? std::optional<double>(def->as_double()) : std::nullopt);
  } else if (cls == "Choice") {
    std::vector<Value> vs;
    for (const auto& v : c.at("values")) vs.push_back(value_from_json(v, at));
    hp = Choice(
        name, std::move(vs),
        c.contains("ordered") ? std::optional<bool>(c.at("ordered").get<bool>()) : std::nullopt,
        opt_value("default"));
  } else if (cls == "Boolean") {
    auto def = opt_value("default");
    hp = Boolean(name, def ? def->as_bool() : false);
  } else if (cls == "Fixed") {
    auto v = opt_value("value");
    OSPREY_CHECK(v.has_value(), "{}: Fixed needs a value", at);
    hp = Fixed(name, *v);
  } else {
    OSPREY_THROW(
        ValueError,
        "{}: unknown hyperparameter class '{}' (expected Int, Float, Choice, Boolean or Fixed)", at,
        cls);
  }
  if (c.contains("conditions")) {
    for (const auto& cj : c.at("conditions")) {
      Condition cond;
      cond.parent = cj.at("config").at("name").get<std::string>();
      for (const auto& v : cj.at("config").at("values"))
        cond.values.push_back(value_from_json(v, at));
      hp.conditions.push_back(std::move(cond));
    }
  }
  return hp;
}

}  // namespace osprey::tune
