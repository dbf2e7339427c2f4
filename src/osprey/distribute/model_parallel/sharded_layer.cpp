#include "osprey/distribute/model_parallel/sharded_layer.h"

#include "osprey/autograd/node.h"
#include "osprey/autograd/ops.h"
#include "osprey/core/error.h"
#include "osprey/nn/activations.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/embedding_indices.h"
#include "osprey/tensor/ops.h"

namespace osprey::distribute {

using autograd::Variable;

namespace {

// The wire is float32: other dtypes (bf16 activations under a mixed policy) cross as float32 and
// come back in their own dtype.
Tensor all_reduce_sum(const Tensor& t, comm::Communicator& group) {
  Tensor buf = t.to(DType::float32).clone();
  group.all_reduce(buf, comm::ReduceOp::sum);
  return buf.to(t.dtype());
}

Tensor all_gather_along(const Tensor& t, int axis, comm::Communicator& group) {
  const Tensor local = t.to(DType::float32).contiguous();
  Shape stacked = local.shape();
  stacked.insert(0, group.size());
  Tensor all = Tensor::empty(stacked, {DType::float32, local.device()});
  group.all_gather(local, all);
  std::vector<Tensor> parts;
  parts.reserve(static_cast<size_t>(group.size()));
  for (int r = 0; r < group.size(); ++r) parts.push_back(all.select(0, r));
  return osprey::concat(parts, axis).to(t.dtype());
}

Tensor local_part(const Tensor& t, int axis, comm::Communicator& group, const char* op) {
  const int64_t n = t.shape().at(axis);
  OSPREY_CHECK(n % group.size() == 0,
               "{}: dimension {} of size {} cannot be split evenly over {} devices (shape {})", op,
               axis, n, group.size(), t.shape().to_string());
  const int64_t k = n / group.size();
  return t.narrow(axis, group.rank() * k, k).contiguous();
}

}  // namespace

Variable copy_to_group(const Variable& x, comm::Communicator& group) {
  if (group.size() == 1 || !autograd::should_record(x)) return x;
  return autograd::make_variable(x.value(), "copy_to_group", {x},
                                 [&group](const Tensor& g, const std::vector<bool>&) {
                                   return std::vector<Tensor>{all_reduce_sum(g, group)};
                                 });
}

Variable reduce_from_group(const Variable& x, comm::Communicator& group) {
  if (group.size() == 1) return x;
  Tensor y = all_reduce_sum(x.value(), group);
  if (!autograd::should_record(x)) return Variable(y);
  return autograd::make_variable(
      y, "reduce_from_group", {x},
      [](const Tensor& g, const std::vector<bool>&) { return std::vector<Tensor>{g}; });
}

Variable gather_from_group(const Variable& x, int axis, comm::Communicator& group) {
  if (group.size() == 1) return x;
  const int a = axis < 0 ? axis + x.ndim() : axis;
  Tensor y = all_gather_along(x.value(), a, group);
  if (!autograd::should_record(x)) return Variable(y);
  return autograd::make_variable(
      y, "gather_from_group", {x}, [a, &group](const Tensor& g, const std::vector<bool>&) {
        return std::vector<Tensor>{local_part(g, a, group, "gather_from_group")};
      });
}

Variable scatter_to_group(const Variable& x, int axis, comm::Communicator& group) {
  if (group.size() == 1) return x;
  const int a = axis < 0 ? axis + x.ndim() : axis;
  Tensor y = local_part(x.value(), a, group, "scatter_to_group");
  if (!autograd::should_record(x)) return Variable(y);
  return autograd::make_variable(y, "scatter_to_group", {x},
                                 [a, &group](const Tensor& g, const std::vector<bool>&) {
                                   return std::vector<Tensor>{all_gather_along(g, a, group)};
                                 });
}

std::string to_string(ShardMode mode) {
  switch (mode) {
    case ShardMode::column:
      return "column";
    case ShardMode::row:
      return "row";
    case ShardMode::replicated:
      break;
  }
  return "replicated";
}

int kernel_output_dim(const nn::Layer& layer) {
  const std::string& c = layer.class_name();
  if (c == "Dense" || c == "Embedding") return 1;
  if (c == "Conv2D") return 3;
  return -1;
}

int kernel_input_dim(const nn::Layer& layer) {
  const std::string& c = layer.class_name();
  if (c == "Dense" || c == "Embedding") return 0;
  if (c == "Conv2D") return 2;
  return -1;
}

std::string kernel_name(const nn::Layer& layer) {
  return layer.class_name() == "Embedding" ? "embeddings" : "kernel";
}

namespace {

// One device's part of a Dense, Conv2D or Embedding. The matmul, convolution or lookup runs in
// an inner layer of the same class rebuilt from the original's config at this rank's shard size
// (so strides, padding, dilation and the dtype policy are the original's), without bias or
// activation: this layer adds the bias and applies the activation where the split allows.
class ShardedLayer final : public nn::SingleInputLayer {
 public:
  ShardedLayer(const nn::Layer& original, const ShardPlan& plan, comm::Communicator& group)
      : SingleInputLayer(original.class_name(), {.name = original.name(),
                                                 .dtype = original.dtype_policy().name(),
                                                 .trainable = original.trainable()}),
        plan_(plan),
        group_(group),
        config_(original.get_config()) {
    const std::string& c = original.class_name();
    OSPREY_CHECK(c == "Dense" || c == "Conv2D" || c == "Embedding",
                 "ModelParallel: layer '{}' is a {}; osprey splits the kernels of Dense, Conv2D "
                 "and Embedding only (replicate its weights: give them no layout)",
                 original.path(), c);
    if (c == "Conv2D") {
      OSPREY_CHECK(config_.value("groups", 1) == 1,
                   "ModelParallel: Conv2D '{}' has groups={}; only groups=1 can be split",
                   original.path(), config_.value("groups", 1));
      channels_first_ = config_.value("data_format", "channels_last") == "channels_first";
    }
    activation_ = nn::ActivationFn(config_.value("activation", std::string("linear")));
    use_bias_ = config_.value("use_bias", c != "Embedding");
    set_path_prefix(prefix_of(original));
    build(original.build_input_shapes());
  }

  std::vector<Variable> variables() const override {
    std::vector<Variable> v = inner_->variables();
    if (bias_.defined()) v.push_back(bias_);
    return v;
  }
  std::vector<std::shared_ptr<nn::Layer>> sublayers() const override { return {inner_}; }
  void set_path_prefix(const std::string& prefix) override {
    SingleInputLayer::set_path_prefix(prefix);
    if (inner_) inner_->set_path_prefix(prefix);
  }
  nlohmann::json get_config() const override { return config_; }

 protected:
  void build_single(const Shape& input_shape) override {
    const int m = group_.size();
    const std::string& c = class_name();
    nlohmann::json inner = config_;
    if (c != "Embedding") {
      inner["use_bias"] = false;
      inner["activation"] = "linear";
    }
    Shape inner_input = input_shape;
    int64_t out_features = 0;
    if (c == "Dense") out_features = config_.at("units").get<int64_t>();
    if (c == "Conv2D") out_features = config_.at("filters").get<int64_t>();
    if (c == "Embedding") out_features = config_.at("output_dim").get<int64_t>();
    const char* out_key = c == "Dense" ? "units" : c == "Conv2D" ? "filters" : "output_dim";
    if (plan_.mode == ShardMode::column) {
      inner[out_key] = out_features / m;
    } else if (plan_.mode == ShardMode::row) {
      if (c == "Embedding") {
        vocab_ = config_.at("input_dim").get<int64_t>();
        inner["input_dim"] = vocab_ / m;
      } else {
        const int axis = channel_axis(input_shape.ndim());
        inner_input[axis] = input_shape[axis] / m;
      }
    }
    inner_ = nn::layer_from_config(c, inner);
    inner_->set_path_prefix(path_prefix());
    inner_->build({inner_input});
    if (use_bias_) {
      const int64_t n = plan_.bias_sharded ? out_features / m : out_features;
      bias_ = add_weight("bias", {n}, nn::Initializer("zeros"), true);
    }
  }

  // Indices, not activations, for Embedding (as the layer itself).
  bool autocasts_inputs() const override { return class_name() != "Embedding"; }

  Variable call_single(const Variable& x, bool training) override {
    if (plan_.mode == ShardMode::column) {
      Variable h = (*inner_)(class_name() == "Embedding" ? x : copy_to_group(x, group_), training);
      if (bias_.defined()) {
        Variable b = autocast(bias_);
        h = add_bias(h, plan_.bias_sharded ? b : scatter_to_group(b, 0, group_));
      }
      const bool elementwise = activation_.name() != "softmax";
      if (elementwise) h = activation_(h);
      if (!plan_.output_split) h = gather_from_group(h, channel_axis(h.ndim()), group_);
      return elementwise ? h : activation_(h);
    }
    Variable h;
    if (plan_.mode == ShardMode::row && class_name() == "Embedding") {
      h = reduce_from_group(vocab_parallel_lookup(x, training), group_);
    } else if (plan_.mode == ShardMode::row) {
      const Variable xs =
          plan_.input_split ? x : scatter_to_group(x, channel_axis(x.ndim()), group_);
      h = reduce_from_group((*inner_)(xs, training), group_);
    } else {
      h = (*inner_)(x, training);
    }
    if (bias_.defined()) {
      Variable b = autocast(bias_);
      h = add_bias(h, plan_.bias_sharded ? gather_from_group(b, 0, group_) : b);
    }
    return activation_(h);
  }

 private:
  static std::string prefix_of(const nn::Layer& layer) {
    const std::string p = layer.path();
    const size_t slash = p.rfind('/');
    return slash == std::string::npos ? std::string() : p.substr(0, slash);
  }
  std::string path_prefix() const {
    const std::string p = path();
    const size_t slash = p.rfind('/');
    return slash == std::string::npos ? std::string() : p.substr(0, slash);
  }
  // The axis holding features (Dense, Embedding: last; Conv2D: channels).
  int channel_axis(int ndim) const {
    return class_name() == "Conv2D" && channels_first_ ? 1 : ndim - 1;
  }
  Variable add_bias(const Variable& h, const Variable& b) const {
    if (channel_axis(h.ndim()) == h.ndim() - 1) return autograd::add(h, b);
    Shape s = Shape::filled(h.ndim() - 1, 1);
    s[0] = b.shape()[0];
    return autograd::add(h, autograd::reshape(b, s));
  }
  // Vocabulary-parallel lookup: this rank holds rows [r * V / m, (r + 1) * V / m) of the table;
  // ids outside them look up row 0 and are zeroed, so the group's sum is the full lookup.
  Variable vocab_parallel_lookup(const Variable& x, bool training) {
    const Tensor ids =
        nn::detail::embedding_indices(x.value(), vocab_, name()).to(DType::int64).contiguous();
    const int64_t rows = vocab_ / group_.size(), start = group_.rank() * rows;
    Tensor local = Tensor::empty(ids.shape(), {DType::int64, ids.device()});
    Shape mask_shape = ids.shape();
    mask_shape.push_back(1);
    Tensor mask = Tensor::empty(mask_shape, {DType::float32, ids.device()});
    const int64_t* p = ids.data<int64_t>();
    int64_t* l = local.data<int64_t>();
    float* k = mask.data<float>();
    for (int64_t i = 0; i < ids.numel(); ++i) {
      const bool mine = p[i] >= start && p[i] < start + rows;
      l[i] = mine ? p[i] - start : 0;
      k[i] = mine ? 1.0F : 0.0F;
    }
    Variable h = (*inner_)(Variable(local), training);
    return autograd::mul(h, Variable(mask.to(h.dtype())));
  }

  ShardPlan plan_;
  comm::Communicator& group_;
  nlohmann::json config_;
  nn::ActivationFn activation_;
  bool use_bias_ = true;
  bool channels_first_ = false;
  int64_t vocab_ = 0;
  std::shared_ptr<nn::Layer> inner_;
  Variable bias_;
};

}  // namespace

std::shared_ptr<nn::Layer> make_sharded_layer(const nn::Layer& layer, const ShardPlan& plan,
                                              comm::Communicator& group) {
  return std::make_shared<ShardedLayer>(layer, plan, group);
}

}  // namespace osprey::distribute
