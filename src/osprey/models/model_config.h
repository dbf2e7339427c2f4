// A model built from its description, with fresh weights: Keras's model_from_json. The
// description is the architecture Model::save writes, read from config.json, from a folder save()
// wrote, or from the same tree written in TOML (io/toml.h), so `osprey train --model net.toml`
// trains any model the layer registry can build, not only the prebuilt ones.
//   auto net = models::model_from_file("net.toml");           // or "net.json", "saved_model/"
//   os::Model model(net);  model.compile("adam", "sparse_categorical_crossentropy");
// A description is either config.json's whole tree ({"model": {"class_name": "Sequential",
// "config": {...}}, ...}: other top-level fields, compile_config included, are not read) or the
// model alone ({"class_name": "Sequential", "config": {...}}, what Keras's model.to_json() holds:
// Keras 3's, with its InputLayer, DTypePolicy objects and module / registered_name /
// build_config keys, reads as keras_config.h describes).
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "osprey/models/network.h"

namespace osprey::models {

// The model `description` describes, its weights made fresh (from the global seed) when the
// description records an input shape (build_input_shape), else when it is first built. ValueError
// naming `source` and the field: "net.toml: layers[2]: unknown layer class 'Dense2'. ...".
std::shared_ptr<Network> model_from_config(const nlohmann::json& description,
                                           const std::string& source);
// The description in a file: a .toml file is TOML, any other file JSON; a directory is one that
// save() wrote, whose config.json is read (its weights are not: the model starts fresh, as
// model_from_json does; load_model continues from them). IoError when the file cannot be read or
// is not valid JSON; ValueError for invalid TOML and for a description that builds no model.
std::shared_ptr<Network> model_from_file(const std::filesystem::path& path);

}  // namespace osprey::models
