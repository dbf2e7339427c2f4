// ModelParallel: Keras 3's keras.distribution.ModelParallel on osprey's virtual devices. The mesh
// has a batch axis (the global batch is split along it, as in data parallelism) and at most one
// model axis, over which the kernels of Dense, Conv2D and Embedding layers are split as the
// LayoutMap says: split on the output dimension, a layer is column-parallel; on the input
// dimension, row-parallel (sharded_layer.h inserts the collectives). The mesh may span the
// processes of a multi-worker job (mpirun, OSPREY_CONFIG): each holds a run of consecutive
// devices, and a mesh axis must either stay inside a process or take one device from each (put
// the axis that crosses processes first). Each device holds only its
// shards and their optimizer slots; the compiled model (the host copy predict, save and
// get_weights see) holds every variable whole, so checkpoints are whole and load under any layout.
//   DeviceMesh mesh({2, 4}, {"data", "model"});
//   LayoutMap layout(mesh);
//   layout["dense.*/kernel"] = {std::nullopt, "model"};
//   ModelParallel mp(layout, "data");
//   mp.memory_report(model, 64).to_string();      // per device, before anything is allocated
//   { auto scope = mp.scope(); model.compile("adam", "sparse_categorical_crossentropy"); }
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "osprey/distribute/cluster/worker_group.h"
#include "osprey/distribute/model_parallel/device_mesh.h"
#include "osprey/distribute/model_parallel/sharded_layer.h"
#include "osprey/distribute/strategy_base.h"

namespace osprey::distribute {

struct ModelParallelOptions {
  int threads_per_device = 0;  // each device's kernel threads; 0: num_threads() / devices
  // Keep every mesh device in this process even when it was launched as one of several workers
  // (mpirun, OSPREY_CONFIG / TF_CONFIG); by default the mesh spans the workers, each holding
  // an equal run of consecutive devices.
  bool single_process = false;
};

// Where a model's variables go: one entry per direct layer holding a split variable.
struct LayerShardPlan {
  std::string layer;  // the layer's name in the model
  ShardPlan plan;
};

// Bytes one device holds for a model under a layout at a global batch size.
struct DeviceMemory {
  std::string device;
  int64_t parameters = 0, gradients = 0, optimizer_slots = 0, activations = 0;
  int64_t total() const noexcept { return parameters + gradients + optimizer_slots + activations; }
};
struct MemoryReport {
  std::vector<DeviceMemory> devices;
  std::string to_string() const;
};

class ModelParallel final : public StrategyBase {
 public:
  // batch_dim_name: the mesh axis the batch is split along ("" when the mesh has none: every
  // device sees the whole batch). ValueError when it is not a mesh axis, or when the mesh has more
  // than one other axis.
  explicit ModelParallel(LayoutMap layout_map, std::string batch_dim_name = "",
                         ModelParallelOptions options = {});

  std::string name() const override { return "ModelParallel"; }
  std::string describe() const override;
  int num_replicas_in_sync() const override { return static_cast<int>(data_size_); }
  int num_workers() const noexcept override { return group_ ? group_->size() : 1; }
  int worker_rank() const noexcept override { return group_ ? group_->rank() : 0; }
  // The workers the mesh spans (null: this process alone), connected at construction.
  const std::shared_ptr<WorkerGroup>& worker_group() const noexcept { return group_; }
  const DeviceMesh& device_mesh() const noexcept { return layout_map_.device_mesh(); }
  const LayoutMap& layout_map() const noexcept { return layout_map_; }
  const std::string& batch_dim_name() const noexcept { return batch_dim_; }
  // The axis kernels are split over ("" when the mesh has only the batch axis).
  const std::string& model_axis() const noexcept { return model_axis_; }
  const ModelParallelOptions& options() const noexcept { return options_; }

  // The layout of the variable at `path` with `shape`: its rule's (checked against the shape and
  // the mesh), or replicated when no rule matches. ValueError for a layout over the batch axis.
  TensorLayout layout_for(const std::string& path, const Shape& shape) const;
  // Keras's variable.value.sharding, as text (visualize_sharding of its layout).
  std::string sharding(const autograd::Variable& variable) const;
  // How each layer of a built model runs; ValueError naming the variable for a split this
  // execution cannot do (another layer class, a kernel split on both dimensions, ...).
  std::vector<LayerShardPlan> plan(const models::Network& model) const;
  // The lint: the paths of the model's variables that no rule matched (replicated silently by
  // Keras).
  std::vector<std::string> unmatched_variables(const nn::Layer& model) const;
  // The per-device memory of training the built `model` at this global batch size with an
  // optimizer keeping `slots_per_variable` slots (Adam: 2), computed from shapes alone.
  MemoryReport memory_report(models::Network& model, int64_t global_batch,
                             int slots_per_variable = 0) const;

  std::unique_ptr<train::StepExecutor> make_executor(
      std::shared_ptr<models::Network> network,
      std::shared_ptr<optim::Optimizer> optimizer) const override;
  std::shared_ptr<const train::Strategy> clone() const override {
    return std::make_shared<ModelParallel>(*this);
  }

 private:
  LayoutMap layout_map_;
  std::string batch_dim_, model_axis_;
  int64_t data_size_ = 1, model_size_ = 1;
  ModelParallelOptions options_;
  std::shared_ptr<WorkerGroup> group_;
};

// A LayoutMap for a built Sequential or functional model on `mesh` (axes batch_dim_name and one
// model axis), from its shapes and a communication cost model: consecutive large Dense (or
// Conv2D) layers pair up as column- then row-parallel (one all-reduce per pair, Megatron-LM), a
// lone large one is column-parallel (one all-gather), large Embeddings split their output
// dimension, and layers whose kernels are small (or do not divide) stay replicated, where the
// collectives would cost more than the memory they save. Keys are the exact variable paths.
LayoutMap suggest_layout(models::Network& model, const DeviceMesh& mesh,
                         const std::string& batch_dim_name = "");

}  // namespace osprey::distribute
