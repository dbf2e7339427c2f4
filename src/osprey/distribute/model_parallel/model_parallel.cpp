#include "osprey/distribute/model_parallel/model_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "osprey/core/error.h"
#include "osprey/distribute/devices.h"
#include "osprey/distribute/model_parallel/model_parallel_executor.h"

namespace osprey::distribute {

namespace {

std::vector<Device> mesh_devices(const DeviceMesh& mesh) {
  return resolve_devices(mesh.devices(), "ModelParallel");
}

// The variable of `layer` called `name` (its own weights), or undefined.
autograd::Variable own_weight(const nn::Layer& layer, const std::string& name) {
  for (const nn::Weight& w : layer.own_weights())
    if (w.name == name) return w.variable;
  return {};
}

std::string human_bytes(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1 << 30));
  if (b >= (int64_t{1} << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(b) / (1 << 20));
  if (b >= (int64_t{1} << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(b) / (1 << 10));
  return fmt::format("{} B", b);
}

}  // namespace

ModelParallel::ModelParallel(LayoutMap layout_map, std::string batch_dim_name,
                             ModelParallelOptions options)
    : StrategyBase(mesh_devices(layout_map.device_mesh())),
      layout_map_(std::move(layout_map)),
      batch_dim_(std::move(batch_dim_name)),
      options_(options) {
  const DeviceMesh& mesh = layout_map_.device_mesh();
  if (!batch_dim_.empty()) data_size_ = mesh.axis_size(batch_dim_);  // ValueError naming it
  std::vector<std::string> others;
  for (const std::string& a : mesh.axis_names())
    if (a != batch_dim_) others.push_back(a);
  OSPREY_CHECK(others.size() <= 1,
               "ModelParallel: {} has {} axes besides the batch axis '{}' ({}); osprey splits "
               "variables over one model axis",
               mesh.to_string(), others.size(), batch_dim_, fmt::join(others, ", "));
  if (!others.empty()) {
    model_axis_ = others[0];
    model_size_ = mesh.axis_size(model_axis_);
  }
  if (!options_.single_process) {
    const ClusterResolver cluster = ClusterResolver::from_environment();
    if (cluster.num_workers() > 1) {
      OSPREY_CHECK(mesh.size() % cluster.num_workers() == 0,
                   "ModelParallel: {} has {} devices, which {} workers cannot hold equally",
                   mesh.to_string(), mesh.size(), cluster.num_workers());
      group_ = WorkerGroup::connect(cluster, {.caller = "ModelParallel"});
    }
  }
}

std::string ModelParallel::describe() const {
  return fmt::format("ModelParallel({}, batch_dim_name='{}')", device_mesh().to_string(),
                     batch_dim_);
}

TensorLayout ModelParallel::layout_for(const std::string& path, const Shape& shape) const {
  std::optional<TensorLayout> layout = layout_map_.lookup(path);
  if (!layout) return {};
  check_layout(path, shape, *layout, device_mesh());
  OSPREY_CHECK(batch_dim_.empty() || layout->dim_of(batch_dim_) < 0,
               "ModelParallel: the layout {} of '{}' splits it over the batch axis '{}'; osprey "
               "splits variables over the model axis '{}' only",
               layout->to_string(), path, batch_dim_, model_axis_);
  return *layout;
}

std::string ModelParallel::sharding(const autograd::Variable& variable) const {
  return visualize_sharding(variable.name(), variable.shape(),
                            layout_for(variable.name(), variable.shape()), device_mesh());
}

std::vector<LayerShardPlan> ModelParallel::plan(const models::Network& model) const {
  std::vector<LayerShardPlan> plans;
  std::vector<std::shared_ptr<nn::Layer>> planned;
  for (const std::shared_ptr<nn::Layer>& layer : model.layers()) {
    // Which of the layer's variables are split, and on which dimension.
    std::map<std::string, int> split;  // weight name -> split dimension
    for (const autograd::Variable& v : layer->variables()) {
      const TensorLayout l = layout_for(v.name(), v.shape());
      if (l.replicated()) continue;
      const std::string weight = v.name().substr(v.name().rfind('/') + 1);
      OSPREY_CHECK(v.name() == layer->path() + "/" + weight,
                   "ModelParallel: '{}' belongs to a layer nested in '{}'; osprey splits the "
                   "variables of a model's direct Dense, Conv2D and Embedding layers",
                   v.name(), layer->path());
      split[weight] = l.dim_of(model_axis_);
    }
    if (split.empty()) continue;
    const int out = kernel_output_dim(*layer), in = kernel_input_dim(*layer);
    OSPREY_CHECK(out >= 0,
                 "ModelParallel: '{}' has a split layout, but its layer '{}' is a {}; osprey "
                 "splits the kernels and biases of Dense, Conv2D and Embedding layers",
                 layer->path() + "/" + split.begin()->first, layer->name(), layer->class_name());
    ShardPlan p;
    const std::string kernel = kernel_name(*layer);
    for (const auto& [weight, dim] : split) {
      const std::string path = layer->path() + "/" + weight;
      if (weight == kernel) {
        OSPREY_CHECK(dim == out || dim == in,
                     "ModelParallel: '{}' is split on dimension {}; a {} kernel can be split on "
                     "its output dimension {} (column-parallel) or its input dimension {} "
                     "(row-parallel)",
                     path, dim, layer->class_name(), out, in);
        p.mode = dim == out ? ShardMode::column : ShardMode::row;
      } else if (weight == "bias") {
        p.bias_sharded = true;
      } else {
        OSPREY_THROW(ValueError,
                     "ModelParallel: '{}' cannot be split; only the {} and bias of {} "
                     "'{}' can",
                     path, kernel, layer->class_name(), layer->name());
      }
    }
    if (layer->class_name() == "Conv2D") {
      OSPREY_CHECK(layer->get_config().value("groups", 1) == 1,
                   "ModelParallel: Conv2D '{}' has groups={}; only groups=1 can be split",
                   layer->path(), layer->get_config().value("groups", 1));
    }
    plans.push_back({layer->name(), p});
    planned.push_back(layer);
  }
  // A column-parallel layer directly followed (in a Sequential) by a row-parallel one of the same
  // class leaves its output split: the row layer takes it as it is, one all-reduce per pair
  // instead of an all-gather and an all-reduce (Megatron-LM's MLP).
  if (model.class_name() == "Sequential") {
    const auto layers = model.layers();
    for (size_t i = 0; i + 1 < plans.size(); ++i) {
      auto a = std::find(layers.begin(), layers.end(), planned[i]);
      if (a + 1 == layers.end() || *(a + 1) != planned[i + 1]) continue;
      ShardPlan& pa = plans[i].plan;
      ShardPlan& pb = plans[i + 1].plan;
      const bool same_class = planned[i]->class_name() == planned[i + 1]->class_name() &&
                              planned[i]->class_name() != "Embedding";
      const bool elementwise = planned[i]->get_config().value("activation", "linear") != "softmax";
      if (same_class && elementwise && pa.mode == ShardMode::column && pb.mode == ShardMode::row &&
          planned[i]->get_config().value("data_format", "") ==
              planned[i + 1]->get_config().value("data_format", "")) {
        pa.output_split = true;
        pb.input_split = true;
      }
    }
  }
  return plans;
}

std::vector<std::string> ModelParallel::unmatched_variables(const nn::Layer& model) const {
  std::vector<std::string> paths;
  for (const autograd::Variable& v : model.variables()) paths.push_back(v.name());
  return layout_map_.unmatched(paths);
}

std::string MemoryReport::to_string() const {
  std::string s = fmt::format("{:<10} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "device", "parameters",
                              "gradients", "optimizer", "activations", "total");
  for (const DeviceMemory& d : devices) {
    s += fmt::format("{:<10} {:>12} {:>12} {:>12} {:>12} {:>12}\n", d.device,
                     human_bytes(d.parameters), human_bytes(d.gradients),
                     human_bytes(d.optimizer_slots), human_bytes(d.activations),
                     human_bytes(d.total()));
  }
  return s;
}

MemoryReport ModelParallel::memory_report(models::Network& model, int64_t global_batch,
                                          int slots_per_variable) const {
  OSPREY_CHECK(!model.variables().empty(),
               "ModelParallel: memory_report needs a built model (call it or build it first)");
  OSPREY_CHECK(global_batch % data_size_ == 0,
               "ModelParallel: the global batch {} cannot be split evenly over the {} devices of "
               "batch axis '{}'",
               global_batch, data_size_, batch_dim_);
  const std::vector<LayerShardPlan> plans = plan(model);
  const int64_t rows = global_batch / data_size_;
  // Activations kept for backward: every layer's output for the device's rows; a split layer
  // also keeps its local part (column) or its partial sums (row) before the collective.
  int64_t activations = 0;
  for (const auto& row : model.summary_rows()) {
    Shape s = row.output_shape;
    s[0] = rows;
    const int64_t bytes = s.numel() * static_cast<int64_t>(sizeof(float));
    activations += bytes;
    for (const LayerShardPlan& p : plans) {
      if (p.layer != row.name) continue;
      if (p.plan.mode == ShardMode::column && !p.plan.output_split)
        activations += bytes / model_size_;
      if (p.plan.mode == ShardMode::column && p.plan.output_split)
        activations -= bytes - bytes / model_size_;
      if (p.plan.mode == ShardMode::row) activations += bytes;
    }
  }
  MemoryReport report;
  for (int64_t i = 0; i < device_mesh().size(); ++i) {
    DeviceMemory d{.device = device_mesh().devices()[static_cast<size_t>(i)]};
    for (const autograd::Variable& v : model.variables()) {
      const ShardSlice s =
          shard_slice(v.name(), v.shape(), layout_for(v.name(), v.shape()), device_mesh(), i);
      const int64_t bytes = Shape(s.length).numel() * static_cast<int64_t>(dtype_size(v.dtype()));
      d.parameters += bytes;
      if (v.requires_grad()) {
        d.gradients += bytes;
        d.optimizer_slots += bytes * slots_per_variable;
      }
    }
    d.activations = activations;
    report.devices.push_back(d);
  }
  return report;
}

std::unique_ptr<train::StepExecutor> ModelParallel::make_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer) const {
  return make_model_parallel_executor(std::move(network), std::move(optimizer), *this);
}

LayoutMap suggest_layout(models::Network& model, const DeviceMesh& mesh,
                         const std::string& batch_dim_name) {
  LayoutMap layout(mesh);
  std::string model_axis;
  for (const std::string& a : mesh.axis_names())
    if (a != batch_dim_name) model_axis = a;
  if (model_axis.empty()) return layout;
  const int64_t m = mesh.axis_size(model_axis);
  OSPREY_CHECK(!model.variables().empty(), "suggest_layout: the model must be built first");
  // A kernel is worth splitting when the memory it saves per device (its (m-1)/m share) exceeds
  // what its collective moves per row of the batch by kWorth: small heads and stems stay whole.
  constexpr int64_t kWorth = 64;
  std::vector<std::shared_ptr<nn::Layer>> cands;
  for (const auto& layer : model.layers()) {
    const int out = kernel_output_dim(*layer);
    const autograd::Variable k =
        out >= 0 ? own_weight(*layer, kernel_name(*layer)) : autograd::Variable();
    if (!k.defined() ||
        (layer->class_name() == "Conv2D" && layer->get_config().value("groups", 1) != 1)) {
      cands.push_back(nullptr);
      continue;
    }
    const int64_t features = k.shape()[out];
    const int64_t saved = k.shape().numel() / m * (m - 1);
    const bool worth = features % m == 0 && saved >= kWorth * features;
    cands.push_back(worth ? layer : nullptr);
  }
  const auto escape = [](const std::string& path) {
    std::string r;
    for (char c : path) {
      if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) r += '\\';
      r += c;
    }
    return r;
  };
  for (size_t i = 0; i < cands.size(); ++i) {
    const auto& layer = cands[i];
    if (!layer) continue;
    const std::string k = escape(layer->path() + "/" + kernel_name(*layer));
    const int ndim = own_weight(*layer, kernel_name(*layer)).ndim();
    std::vector<std::optional<std::string>> col(static_cast<size_t>(ndim));
    col[static_cast<size_t>(kernel_output_dim(*layer))] = model_axis;
    const bool has_bias = own_weight(*layer, "bias").defined();
    // Pair with the next layer when it is a candidate of the same class whose input dimension
    // divides: column then row.
    const bool pair = i + 1 < cands.size() && cands[i + 1] &&
                      cands[i + 1]->class_name() == layer->class_name() &&
                      layer->class_name() != "Embedding";
    layout[k] = TensorLayout(col);
    if (has_bias) layout[escape(layer->path() + "/bias")] = {model_axis};
    if (pair) {
      const auto& next = cands[i + 1];
      const int nd = own_weight(*next, kernel_name(*next)).ndim();
      std::vector<std::optional<std::string>> r(static_cast<size_t>(nd));
      r[static_cast<size_t>(kernel_input_dim(*next))] = model_axis;
      layout[escape(next->path() + "/" + kernel_name(*next))] = TensorLayout(r);
      ++i;
    }
  }
  return layout;
}

}  // namespace osprey::distribute
