// Keras 3's distribution API (keras.distribution) over the same engine as distribute/:
// list_devices(), DataParallel (a MirroredStrategy over the given devices), ModelParallel with
// DeviceMesh, TensorLayout and LayoutMap (model_parallel.h), and set_distribution(), which makes
// either the process-wide default every later compile() binds to.
//   auto devices = os::distribution::list_devices();                 // {"cpu:0", ...}
//   os::distribution::set_distribution(os::distribution::DataParallel(devices));
//   model.compile("adam", "mse");                                      // data parallel
//   os::distribution::set_distribution(std::nullopt);                 // back to one device
//   os::distribution::DeviceMesh mesh({2, 4}, {"data", "model"});
//   os::distribution::LayoutMap layout(mesh);
//   layout["dense.*/kernel"] = {std::nullopt, "model"};
//   os::distribution::set_distribution(os::distribution::ModelParallel(layout, "data"));
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/model_parallel/model_parallel.h"

namespace osprey::distribution {

// "cpu:0", "cpu:1", ...: the virtual CPU devices of this process (OSPREY_CPU_DEVICES).
// device_type "" or "cpu"; anything else is a ValueError.
std::vector<std::string> list_devices(const std::string& device_type = "");

class DataParallel {
 public:
  explicit DataParallel(const std::vector<std::string>& devices = {});
  const distribute::MirroredStrategy& strategy() const noexcept { return strategy_; }
  int num_replicas_in_sync() const { return strategy_.num_replicas_in_sync(); }
  distribute::StrategyScope scope() const { return strategy_.scope(); }

 private:
  distribute::MirroredStrategy strategy_;
};

using distribute::DeviceMesh;
using distribute::LayoutMap;
using distribute::ModelParallel;
using distribute::suggest_layout;
using distribute::TensorLayout;
using distribute::visualize_sharding;

void set_distribution(const std::optional<DataParallel>& distribution);
void set_distribution(const ModelParallel& distribution);
// How `variable` is split under the process-wide distribution (visualize_sharding's text); a
// one-line "replicated" note under any other distribution or none.
std::string sharding(const autograd::Variable& variable);
// The strategy set_distribution installed (null when none).
std::shared_ptr<const train::Strategy> distribution();

}  // namespace osprey::distribution
