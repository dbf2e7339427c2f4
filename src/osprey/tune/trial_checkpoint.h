// A trial's checkpoint is an ordinary saved model (Model::save: config.json, model.safetensors
// with every weight under its path, optimizer.safetensors with the optimizer's iterations and
// slots), so osprey::load_model reads it too. The tuner builds every trial in a fresh
// nn::NameScope, so two builds of one architecture share their paths and a checkpoint loads into
// another build of its trial's values by path.
//   save_trial_checkpoint(dir / "trial_0003" / "checkpoint", model);
//   Model m = hypermodel.build(hp);                    // in a fresh nn::NameScope
//   load_trial_checkpoint(dir / "trial_0003" / "checkpoint", m);   // weights and optimizer state
#pragma once

#include <filesystem>

#include "osprey/train/model.h"

namespace osprey::tune {

void save_trial_checkpoint(const std::filesystem::path& dir, const Model& model);
// The weights only (get_best_models). A model with no weights yet is built first from the input
// shape config.json records. IoError naming the file when there is no checkpoint, the shape is
// not recorded, or a weight is missing or of another shape.
void load_trial_weights(const std::filesystem::path& dir, Model& model);
// The weights and, when the model is compiled and the checkpoint has one, the optimizer state,
// so a trial that goes on from another takes the very step the other would have taken next.
// IoError naming optimizer.safetensors when that state does not fit the model's optimizer.
void load_trial_checkpoint(const std::filesystem::path& dir, Model& model);

}  // namespace osprey::tune
