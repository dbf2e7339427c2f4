// Saving and loading a model as a directory users already know how to read: config.json (the
// architecture as Keras-like JSON, plus whatever the caller adds, such as the compile config)
// and model.safetensors (every weight under its path, e.g. "sequential/dense/kernel"), plus
// optional extra safetensors files (optimizer state). The directory is written atomically: a
// crash mid-save leaves the previous save intact.
//   models::save_model(*net, "fmnist_best");
//   auto loaded = models::load_model("fmnist_best");   // identical predictions
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "osprey/io/safetensors.h"
#include "osprey/models/network.h"

namespace osprey::models {

struct SaveExtras {
  nlohmann::json config = nlohmann::json::object();  // merged into config.json at the top level
  std::vector<std::pair<std::string, io::NamedTensors>> files{};  // {"optimizer.safetensors", ...}
  std::vector<std::pair<std::string, nlohmann::json>> json_files{};  // {"training_state.json", ...}
};

void save_model(const Network& model, const std::filesystem::path& dir,
                const SaveExtras& extras = {});

struct LoadedModel {
  std::shared_ptr<Network> model;
  nlohmann::json config;  // the whole config.json
  std::filesystem::path dir;
};
// Rebuilds the architecture, then copies every weight by path; IoError naming the file and the
// tensor when a weight is missing or of the wrong shape.
LoadedModel load_model(const std::filesystem::path& dir);
// Copies every weight of a built model by path from a model.safetensors (the second half of
// load_model, for a model built some other way); the same IoErrors.
void load_weights(Network& model, const std::filesystem::path& weights_path);

}  // namespace osprey::models
