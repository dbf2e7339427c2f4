// A search space written in TOML, for a search run from a file (osprey tune --space): one table
// per hyperparameter, in the file's order, the TOML side of HyperParameters::from_json.
//   [units]
//   type = "int"            # int, float, choice, boolean, fixed
//   min = 64
//   max = 512
//   step = 64               # optional; int also takes sampling and default
//   [learning_rate]
//   type = "float"
//   min = 1e-4
//   max = 1e-2
//   sampling = "log"        # linear (the default), log, reverse_log
//   [optimizer]
//   type = "choice"
//   values = ["adam", "rmsprop"]   # booleans, numbers or strings; optional default, ordered
//   [use_bias]
//   type = "boolean"        # optional default
//   [layers]
//   type = "fixed"
//   value = 2
//   [momentum]              # any type: active only when a parent declared above takes one of
//   type = "float"          # parent_values (HyperParameters::conditional_scope)
//   min = 0.5
//   max = 0.99
//   parent_name = "optimizer"
//   parent_values = ["rmsprop"]
//   auto space = tune::hyperparameters_from_toml("space.toml");
// docs/guide/search_space.md is the user's page, with examples/search_space.toml.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "osprey/tune/hyperparameters.h"

namespace osprey::tune {

// The space the file declares (no values). IoError when the file cannot be read; ValueError
// naming the file, the table and the field for invalid TOML (with its line and column), a
// missing or unknown field, a value of the wrong type or a range a hyperparameter refuses.
HyperParameters hyperparameters_from_toml(const std::filesystem::path& path);
// The same from TOML text; `source` names it in errors.
HyperParameters hyperparameters_from_toml_text(std::string_view text, const std::string& source);
// The space a file declares for a model that reads `model_space`'s hyperparameters: ValueError
// naming the file for a name the model does not read, or a value of another kind than it needs
// (a string for a number, a float for an integer); what the file leaves out is fixed at the
// model's default.
HyperParameters hyperparameters_from_toml(const std::filesystem::path& path,
                                          const HyperParameters& model_space);

}  // namespace osprey::tune
