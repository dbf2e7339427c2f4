// Chief-only writing (tf.distribute's write_filepath convention): every worker of a multi-worker
// job runs the same saving code, but only the chief's files reach the destination. The others
// write into a temporary folder of their own, removed right after, so a save costs the same and
// fails the same way on every worker, and shared storage holds one copy written by one process.
//   write_on_chief(model.trainer().strategy(), "ckpt", [&](const std::filesystem::path& p) {
//     models::save_model(net, p);
//   });
#pragma once

#include <filesystem>
#include <functional>

#include "osprey/train/strategy.h"

namespace osprey::train {

// Calls write(target) on the chief; elsewhere write(<temporary folder>/<target's name>), then
// removes the temporary folder (also when write throws; the exception propagates).
void write_on_chief(const Strategy& strategy, const std::filesystem::path& target,
                    const std::function<void(const std::filesystem::path&)>& write);

}  // namespace osprey::train
