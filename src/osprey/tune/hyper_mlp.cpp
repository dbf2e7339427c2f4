#include "osprey/tune/hyper_mlp.h"

#include <fmt/format.h>

#include <algorithm>

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/factory.h"
#include "osprey/optim/sgd.h"

namespace osprey::tune {

namespace detail {

namespace {

// The values an override can take, as far as kind and range checks need: the ends of an Int or
// Float range, every value of the others.
std::vector<Value> probe_values(const HyperParameter& h) {
  if (h.type == HpType::Int)
    return {static_cast<int64_t>(h.min_value), static_cast<int64_t>(h.max_value)};
  if (h.type == HpType::Float) return {h.min_value, h.max_value};
  return h.values;
}

std::string kind_text(const HyperParameter& builtin, double lo, double hi) {
  const Value& want = builtin.default_value;
  if (want.is_bool()) return "boolean values";
  if (want.is_string()) {
    std::vector<std::string> names;
    for (const Value& v : builtin.values) names.push_back(v.as_string());
    return fmt::format("values among {{{}}}", fmt::join(names, ", "));
  }
  return fmt::format("{} values within [{}, {}]", want.is_int() ? "int" : "numeric",
                     Value(lo).to_string(), Value(hi).to_string());
}

bool fits(const Value& v, const HyperParameter& builtin, double lo, double hi) {
  const Value& want = builtin.default_value;
  if (want.is_bool()) return v.is_bool();
  if (want.is_string()) return v.is_string() && builtin.contains(v);
  if (want.is_int() ? !v.is_int() : !v.is_number()) return false;
  return v.as_double() >= lo && v.as_double() <= hi;
}

}  // namespace

Value PrebuiltSpace::declare(HyperParameters& hp, const HyperParameter& builtin) const {
  return declare(hp, builtin, builtin.min_value, builtin.max_value);
}

Value PrebuiltSpace::declare(HyperParameters& hp, const HyperParameter& builtin, double lo,
                             double hi) const {
  if (fixed_ == nullptr) return hp.retrieve(builtin);
  HyperParameter h;
  if (const HyperParameter* declared = fixed_->find(builtin.name)) {
    h = *declared;
    h.conditions.clear();  // the model places it under its own conditions
  } else if (fixed_->has_value(builtin.name)) {
    h = HyperParameter::Fixed(builtin.name, fixed_->get(builtin.name));
  } else {
    return hp.retrieve(builtin);
  }
  for (const Value& v : probe_values(h)) {
    OSPREY_CHECK(fits(v, builtin, lo, hi),
                 "{}: fixed hyperparameter '{}' must take {}. Received: {} {}", owner_,
                 builtin.name, kind_text(builtin, lo, hi), hp_type_name(h.type), h.describe());
  }
  return hp.retrieve(std::move(h));
}

std::optional<HyperParameters::ConditionalScope> PrebuiltSpace::scope(
    HyperParameters& hp, const std::string& parent, const std::vector<Value>& values) const {
  const HyperParameter* p = hp.find(parent);
  OSPREY_ASSERT(p != nullptr, "{}: '{}' is declared before its children", owner_, parent);
  std::vector<Value> possible;
  std::copy_if(values.begin(), values.end(), std::back_inserter(possible),
               [&](const Value& v) { return p->contains(v); });
  if (possible.empty()) return std::nullopt;
  return hp.conditional_scope(parent, std::move(possible));
}

void PrebuiltSpace::check_names(const HyperParameters& all) const {
  if (fixed_ == nullptr) return;
  std::vector<std::string> unknown;
  auto check = [&](const std::string& name) {
    if (all.find(name) == nullptr && !name.starts_with(kTunerValuePrefix) &&
        std::find(unknown.begin(), unknown.end(), name) == unknown.end())
      unknown.push_back(name);
  };
  for (const HyperParameter& h : fixed_->space()) check(h.name);
  for (const auto& [name, value] : fixed_->values()) check(name);
  std::vector<std::string> known;
  for (const HyperParameter& h : all.space()) known.push_back(h.name);
  OSPREY_CHECK(unknown.empty(),
               "{}: fixed names hyperparameters the model does not read: {}. It reads: {}", owner_,
               fmt::join(unknown, ", "), fmt::join(known, ", "));
}

HyperParameter int_hp(const std::string& name, int64_t min, int64_t max,
                      std::optional<int64_t> step, int64_t default_value) {
  return HyperParameter::Int(name, min, max, step, Sampling::linear, default_value);
}

OptimizerValues declare_optimizer(HyperParameters& hp, const PrebuiltSpace& space) {
  OptimizerValues o;
  o.optimizer =
      space.declare(hp, HyperParameter::Choice("optimizer", {"adam", "sgd", "rmsprop"}, {}, "adam"))
          .as_string();
  o.learning_rate =
      space
          .declare(hp, HyperParameter::Float("learning_rate", 1e-4, 1e-2, {}, Sampling::log, 1e-3),
                   1e-8, 1.0)
          .as_double();
  return o;
}

std::shared_ptr<optim::Optimizer> make_optimizer(const OptimizerValues& o) {
  if (o.optimizer == "sgd") {
    return std::make_shared<optim::SGD>(
        optim::SGDOptions{.learning_rate = o.learning_rate, .momentum = 0.9});
  }
  std::shared_ptr<optim::Optimizer> optimizer = optim::get(o.optimizer);
  optimizer->set_learning_rate(o.learning_rate);
  return optimizer;
}

void compile_classifier(Model& model, const OptimizerValues& o) {
  model.compile(make_optimizer(o), "sparse_categorical_crossentropy", {"accuracy"});
}

}  // namespace detail

namespace {

constexpr int kMaxLayers = 3;

struct MlpValues {
  std::vector<int64_t> units;  // one per hidden layer
  double dropout = 0;
  detail::OptimizerValues optimizer;
};

// Every hyperparameter, in the order a search space summary lists them: num_layers (1-3,
// default 2), units_i (32-512 step 32, default 256; units_1 and units_2 only active with that
// many layers), dropout (0-0.5 step 0.1, default 0.2), optimizer, learning_rate.
MlpValues declare_mlp(HyperParameters& hp, const detail::PrebuiltSpace& space) {
  MlpValues v;
  const int64_t layers_n =
      space.declare(hp, HyperParameter::Int("num_layers", 1, kMaxLayers, {}, Sampling::linear, 2))
          .as_int();
  for (int i = 0; i < kMaxLayers; ++i) {
    std::vector<Value> when;  // units_i (i > 0) is used when there are more than i layers
    for (int n = i + 1; n <= kMaxLayers; ++n) when.emplace_back(n);
    auto scope = i == 0 ? std::nullopt : space.scope(hp, "num_layers", when);
    if (i > 0 && !scope) continue;
    const HyperParameter units =
        HyperParameter::Int(fmt::format("units_{}", i), 32, 512, 32, Sampling::linear, 256);
    const int64_t u = space.declare(hp, units, 1, 1 << 16).as_int();
    if (i < layers_n) v.units.push_back(u);
  }
  v.dropout =
      space
          .declare(hp, HyperParameter::Float("dropout", 0.0, 0.5, 0.1, Sampling::linear, 0.2), 0.0,
                   0.95)
          .as_double();
  v.optimizer = detail::declare_optimizer(hp, space);
  return v;
}

}  // namespace

HyperMLP::HyperMLP(HyperMLPOptions options) : options_(std::move(options)) {
  OSPREY_CHECK(options_.num_classes >= 2,
               "HyperMLP: num_classes must be at least 2. Received: num_classes={}",
               options_.num_classes);
  OSPREY_CHECK(!options_.input_shape.empty(),
               "HyperMLP: input_shape must give one sample's dimensions, e.g. {{28, 28}}. "
               "Received: an empty input_shape");
  OSPREY_CHECK(std::all_of(options_.input_shape.begin(), options_.input_shape.end(),
                           [](int64_t d) { return d > 0; }),
               "HyperMLP: input_shape dimensions must be positive. Received: input_shape={}",
               options_.input_shape.to_string());
  const detail::PrebuiltSpace space("HyperMLP", options_.fixed ? &*options_.fixed : nullptr);
  HyperParameters all;
  declare_mlp(all, detail::PrebuiltSpace("HyperMLP", nullptr));
  space.check_names(all);
  HyperParameters probe;
  declare_mlp(probe, space);  // the kind and range of every override
}

Model HyperMLP::build(HyperParameters& hp) {
  const MlpValues v = declare_mlp(
      hp, detail::PrebuiltSpace("HyperMLP", options_.fixed ? &*options_.fixed : nullptr));
  std::vector<std::shared_ptr<nn::Layer>> stack = {layers::Flatten()};
  for (const int64_t units : v.units) {
    stack.push_back(layers::Dense(units, "relu"));
    if (v.dropout > 0) stack.push_back(layers::Dropout(v.dropout));
  }
  // The output stays float32 under a mixed precision policy, as Keras advises.
  stack.push_back(layers::Dense(options_.num_classes, "softmax", {.dtype = "float32"}));
  Model model = Sequential(stack, {.input_shape = options_.input_shape});
  detail::compile_classifier(model, v.optimizer);
  return model;
}

}  // namespace osprey::tune
