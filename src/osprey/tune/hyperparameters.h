// HyperParameters: the search space and the current values of one trial, as KerasTuner's
// kt.HyperParameters. A build function asks it for values; the first call with a name
// registers the hyperparameter (with its default as the value until an oracle fills values in),
// later calls with the same name return the same value. Conditional hyperparameters are declared
// inside conditional_scope(parent, values) and are active only when the parent takes one of the
// values; an inactive one returns its default and has no value in the trial.
//   os::Model build_model(os::tune::HyperParameters& hp) {
//     auto units = hp.Int("units", 16, 64, {.step = 16});
//     auto lr = hp.Float("learning_rate", 1e-4, 1e-2, {.sampling = "log"});
//     std::string opt = hp.Choice("optimizer", {"rmsprop", "adam"});
//     if (hp.Boolean("dropout")) {
//       auto scope = hp.conditional_scope("dropout", {true});
//       rate = hp.Float("rate", 0.1, 0.5);
//     }
//     ...
//   }
#pragma once

#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "osprey/tune/hyperparameter.h"

namespace osprey::tune {

// Values under this prefix are not hyperparameters: an oracle sets them for its own bookkeeping
// (Hyperband's tuner/epochs, hyperband.h). Duplicate detection ignores them; summaries show them.
inline constexpr char kTunerValuePrefix[] = "tuner/";

struct IntOptions {
  std::optional<int64_t> step{};
  std::string sampling = "linear";  // linear, log, reverse_log
  std::optional<int64_t> default_value{};
};
struct FloatOptions {
  std::optional<double> step{};
  std::string sampling = "linear";
  std::optional<double> default_value{};
};
struct ChoiceOptions {
  std::optional<Value> default_value{};
  std::optional<bool> ordered{};  // default: true for numeric values
};
struct BooleanOptions {
  bool default_value = false;
};

namespace detail {
template <class T>
using ChoiceResult = std::conditional_t<
    std::is_same_v<T, bool>, bool,
    std::conditional_t<std::is_integral_v<T>, int64_t,
                       std::conditional_t<std::is_floating_point_v<T>, double, std::string>>>;
template <class R>
R value_as(const Value& v) {
  if constexpr (std::is_same_v<R, bool>)
    return v.as_bool();
  else if constexpr (std::is_same_v<R, int64_t>)
    return v.as_int();
  else if constexpr (std::is_same_v<R, double>)
    return v.as_double();
  else
    return v.as_string();
}
}  // namespace detail

class HyperParameters {
 public:
  int64_t Int(const std::string& name, int64_t min_value, int64_t max_value,
              const IntOptions& options = {});
  double Float(const std::string& name, double min_value, double max_value,
               const FloatOptions& options = {});
  template <class T>
  detail::ChoiceResult<T> Choice(const std::string& name, std::initializer_list<T> values,
                                 const ChoiceOptions& options = {}) {
    return Choice(name, std::vector<T>(values), options);
  }
  template <class T>
  detail::ChoiceResult<T> Choice(const std::string& name, const std::vector<T>& values,
                                 const ChoiceOptions& options = {}) {
    std::vector<Value> vs;
    vs.reserve(values.size());
    for (const T& v : values) vs.push_back(Value(static_cast<detail::ChoiceResult<T>>(v)));
    return detail::value_as<detail::ChoiceResult<T>>(retrieve(
        HyperParameter::Choice(name, std::move(vs), options.ordered, options.default_value)));
  }
  bool Boolean(const std::string& name, const BooleanOptions& options = {});
  template <class T>
  detail::ChoiceResult<T> Fixed(const std::string& name, T value) {
    return detail::value_as<detail::ChoiceResult<T>>(
        retrieve(HyperParameter::Fixed(name, Value(static_cast<detail::ChoiceResult<T>>(value)))));
  }

  // Registers hp under the conditions of the open scopes (or finds it by name) and returns its
  // value: the trial's value when active and set, else its default.
  Value retrieve(HyperParameter hp);

  // While the returned guard lives, hyperparameters declared are children of `parent` for
  // `values`. Scopes nest (a child needs every enclosing condition).
  class [[nodiscard]] ConditionalScope {
   public:
    explicit ConditionalScope(HyperParameters* hp) : hp_(hp) {}
    ConditionalScope(ConditionalScope&& o) noexcept : hp_(o.hp_) { o.hp_ = nullptr; }
    ConditionalScope(const ConditionalScope&) = delete;
    ConditionalScope& operator=(const ConditionalScope&) = delete;
    ConditionalScope& operator=(ConditionalScope&&) = delete;
    ~ConditionalScope();

   private:
    HyperParameters* hp_;
  };
  // ValueError when the parent is not registered yet or a value is not one of its values.
  ConditionalScope conditional_scope(const std::string& parent, std::vector<Value> values);

  bool is_active(const HyperParameter& hp) const;
  bool is_active(const std::string& name) const;  // false for unknown names

  // The space in registration order, and the values of the active hyperparameters.
  const std::vector<HyperParameter>& space() const { return space_; }
  const std::map<std::string, Value>& values() const { return values_; }
  const HyperParameter* find(const std::string& name) const;
  bool has_value(const std::string& name) const { return values_.count(name) > 0; }
  // The value, or the default of an inactive hyperparameter; ValueError for unknown names
  // naming the known ones.
  Value get(const std::string& name) const;
  // Sets a value; for a registered hyperparameter it must be one of its values.
  void set(const std::string& name, Value value);
  void erase_value(const std::string& name) { values_.erase(name); }
  // Adds the hyperparameters of `other` that this space lacks (its values ignored).
  void merge_space(const HyperParameters& other);
  // Same space, no values.
  HyperParameters copy_space() const;
  // The number of tunable hyperparameters (the dimension Bayesian optimization works in).
  size_t num_tunable() const;

  // search_space_summary's text: "Search space summary\nDefault search space size: 2\n..."
  std::string summary() const;

  // {"space": [...], "values": {...}}: KerasTuner's get_config().
  nlohmann::json to_json() const;
  static HyperParameters from_json(const nlohmann::json& j, const std::string& where);

  friend bool operator==(const HyperParameters&, const HyperParameters&) = default;

 private:
  std::vector<HyperParameter> space_;
  std::map<std::string, Value> values_;
  std::vector<Condition> scopes_;
};

}  // namespace osprey::tune
