#include "osprey/tune/hyperparameters.h"

#include <fmt/format.h>

#include "osprey/core/error.h"

namespace osprey::tune {

int64_t HyperParameters::Int(const std::string& name, int64_t min_value, int64_t max_value,
                             const IntOptions& o) {
  return retrieve(HyperParameter::Int(name, min_value, max_value, o.step,
                                      parse_sampling(o.sampling, "hyperparameter '" + name + "'"),
                                      o.default_value))
      .as_int();
}

double HyperParameters::Float(const std::string& name, double min_value, double max_value,
                              const FloatOptions& o) {
  return retrieve(HyperParameter::Float(name, min_value, max_value, o.step,
                                        parse_sampling(o.sampling, "hyperparameter '" + name + "'"),
                                        o.default_value))
      .as_double();
}

bool HyperParameters::Boolean(const std::string& name, const BooleanOptions& o) {
  return retrieve(HyperParameter::Boolean(name, o.default_value)).as_bool();
}

Value HyperParameters::retrieve(HyperParameter hp) {
  OSPREY_CHECK(!hp.name.empty(), "HyperParameters: a hyperparameter needs a name");
  const HyperParameter* known = find(hp.name);
  if (known == nullptr) {
    hp.conditions.insert(hp.conditions.begin(), scopes_.begin(), scopes_.end());
    space_.push_back(std::move(hp));
    known = &space_.back();
  } else {
    // Same name, another definition: the first one wins, as in KerasTuner, but a different
    // kind is a mistake worth naming.
    OSPREY_CHECK(known->type == hp.type,
                 "HyperParameters: '{}' is already a {}, cannot redeclare it as {}", hp.name,
                 hp_type_name(known->type), hp_type_name(hp.type));
  }
  if (!is_active(*known)) return known->default_value;
  auto it = values_.find(known->name);
  if (it != values_.end()) return it->second;
  values_[known->name] = known->default_value;
  return known->default_value;
}

HyperParameters::ConditionalScope::~ConditionalScope() {
  if (hp_ != nullptr) hp_->scopes_.pop_back();
}

HyperParameters::ConditionalScope HyperParameters::conditional_scope(const std::string& parent,
                                                                     std::vector<Value> values) {
  const HyperParameter* p = find(parent);
  OSPREY_CHECK(
      p != nullptr,
      "conditional_scope: parent hyperparameter '{}' is not declared yet; declare it first",
      parent);
  OSPREY_CHECK(!values.empty(), "conditional_scope('{}'): give at least one parent value", parent);
  for (const Value& v : values) {
    OSPREY_CHECK(p->contains(v),
                 "conditional_scope('{}'): {} is not one of the parent's values ({})", parent,
                 v.to_string(), p->describe());
  }
  scopes_.push_back({parent, std::move(values)});
  return ConditionalScope(this);
}

bool HyperParameters::is_active(const HyperParameter& hp) const {
  for (const Condition& c : hp.conditions) {
    if (!is_active(c.parent)) return false;
    auto it = values_.find(c.parent);
    if (it == values_.end()) return false;
    if (std::find(c.values.begin(), c.values.end(), it->second) == c.values.end()) return false;
  }
  return true;
}

bool HyperParameters::is_active(const std::string& name) const {
  const HyperParameter* hp = find(name);
  return hp != nullptr && is_active(*hp);
}

const HyperParameter* HyperParameters::find(const std::string& name) const {
  for (const HyperParameter& hp : space_) {
    if (hp.name == name) return &hp;
  }
  return nullptr;
}

Value HyperParameters::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  const HyperParameter* hp = find(name);
  if (hp == nullptr) {
    std::vector<std::string> names;
    for (const auto& h : space_) names.push_back(h.name);
    OSPREY_THROW(ValueError, "HyperParameters: unknown hyperparameter '{}'. Known: [{}]", name,
                 fmt::join(names, ", "));
  }
  return hp->default_value;
}

void HyperParameters::set(const std::string& name, Value value) {
  const HyperParameter* hp = find(name);
  if (hp != nullptr) {
    OSPREY_CHECK(hp->contains(value), "HyperParameters: {} is not a value of '{}' ({})",
                 value.to_string(), name, hp->describe());
  }
  values_[name] = std::move(value);
}

void HyperParameters::merge_space(const HyperParameters& other) {
  for (const HyperParameter& hp : other.space_) {
    if (find(hp.name) == nullptr) space_.push_back(hp);
  }
}

HyperParameters HyperParameters::copy_space() const {
  HyperParameters hp;
  hp.space_ = space_;
  return hp;
}

size_t HyperParameters::num_tunable() const {
  size_t n = 0;
  for (const auto& hp : space_) n += hp.tunable() ? 1 : 0;
  return n;
}

std::string HyperParameters::summary() const {
  std::string s =
      fmt::format("Search space summary\nDefault search space size: {}\n", space_.size());
  for (const HyperParameter& hp : space_) {
    s += fmt::format("{} ({})\n  {}\n", hp.name, hp_type_name(hp.type), hp.describe());
  }
  return s;
}

nlohmann::json HyperParameters::to_json() const {
  nlohmann::json space = nlohmann::json::array();
  for (const HyperParameter& hp : space_) space.push_back(hp.to_json());
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [k, v] : values_) values[k] = tune::to_json(v);
  return {{"space", space}, {"values", values}};
}

HyperParameters HyperParameters::from_json(const nlohmann::json& j, const std::string& where) {
  OSPREY_CHECK(j.is_object(), "{}: hyperparameters must be an object with space and values", where);
  HyperParameters hp;
  if (j.contains("space")) {
    size_t i = 0;
    for (const auto& e : j.at("space"))
      hp.space_.push_back(HyperParameter::from_json(e, fmt::format("{}: space[{}]", where, i++)));
  }
  if (j.contains("values")) {
    for (const auto& [k, v] : j.at("values").items())
      hp.values_[k] = value_from_json(v, fmt::format("{}: values.{}", where, k));
  }
  return hp;
}

}  // namespace osprey::tune
