// What the prebuilt hypermodels' tests share (hyper_models_test.cpp, hyper_text_models_test.cpp):
// a built model's layer classes, a space's lines and names, a build under a fresh name scope, and
// a random point of a space. Test-only: not installed.
#pragma once

#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include "osprey/nn/name_scope.h"
#include "osprey/tune/hypermodel.h"

namespace osprey::tune::test_helpers {

inline std::vector<std::string> layer_classes(const Model& model) {
  std::vector<std::string> classes;
  for (const auto& l : model.layers()) classes.push_back(l->class_name());
  return classes;
}

// "Type name: description" of every hyperparameter, in declaration order.
inline std::vector<std::string> space_lines(const HyperParameters& hp) {
  std::vector<std::string> lines;
  for (const HyperParameter& h : hp.space())
    lines.push_back(fmt::format("{} {}: {}", hp_type_name(h.type), h.name, h.describe()));
  return lines;
}

inline std::vector<std::string> space_names(const HyperParameters& hp) {
  std::vector<std::string> names;
  for (const HyperParameter& h : hp.space()) names.push_back(h.name);
  return names;
}

inline Model build(HyperModel& model, HyperParameters& hp) {
  nn::NameScope names;
  return model.build(hp);
}

// hp with every active tunable hyperparameter of `space` drawn at random (parents come before
// their children in a space, so activity is known when a child is reached).
inline HyperParameters random_values(const HyperParameters& space, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  HyperParameters hp = space.copy_space();
  for (const HyperParameter& h : space.space()) {
    if (hp.is_active(h)) hp.set(h.name, h.from_unit(u(rng)));
  }
  return hp;
}

}  // namespace osprey::tune::test_helpers
