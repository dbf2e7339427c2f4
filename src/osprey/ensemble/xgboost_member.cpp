#include "osprey/ensemble/xgboost_member.h"

#include <algorithm>
#include <string>

#include "osprey/autograd/grad_mode.h"
#include "osprey/core/error.h"
#include "osprey/io/json.h"
#include "osprey/io/temporary_directory.h"
#include "osprey/models/network.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/quant/quantize.h"
#include "osprey/tensor/ops.h"

namespace osprey::ensemble {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTreesFile = "model.json";
constexpr const char* kFeaturesFolder = "features";

const models::Sequential& sequential_for_features(const Model& model) {
  OSPREY_CHECK(model.defined(), "XGBoostMember: the feature model is empty (default-constructed)");
  const auto* seq = dynamic_cast<const models::Sequential*>(&model.network());
  OSPREY_CHECK(seq != nullptr,
               "XGBoostMember: penultimate features need a Sequential model (the output of all "
               "its layers but the last). Received: model '{}' of class {}",
               model.name(), model.network().class_name());
  OSPREY_CHECK(seq->layers().size() >= 2,
               "XGBoostMember: penultimate features need a Sequential model of at least two "
               "layers. Received: model '{}' with {} layer(s)",
               model.name(), seq->layers().size());
  return *seq;
}

Tensor flatten_rows(const Tensor& x) {
  OSPREY_CHECK(x.defined() && x.ndim() >= 1 && x.size(0) > 0,
               "XGBoostMember: the inputs must be [N, ...] with N > 0. Received: {}",
               x.defined() ? x.describe() : "undefined");
  return x.reshape({x.size(0), -1}).to(DType::float32).contiguous();
}

// A copy of the network's architecture (from its config) and weights, not sharing a variable
// with it, as Keras's clone_model plus set_weights.
Model clone_network(const Model& model) {
  models::register_model_classes();
  quant::register_layers();  // the network may hold quantized layers
  const nlohmann::json s = nn::serialize_layer(model.network());
  auto net = std::dynamic_pointer_cast<models::Network>(
      nn::layer_from_config(s.at("class_name").get<std::string>(), s.at("config")));
  OSPREY_ASSERT(net != nullptr, "cloning model '{}' gave no model", model.name());
  const std::vector<autograd::Variable> from = model.network().variables();
  const std::vector<autograd::Variable> to = net->variables();
  OSPREY_ASSERT(from.size() == to.size(), "cloning model '{}': {} weights became {}", model.name(),
                from.size(), to.size());
  for (size_t k = 0; k < from.size(); ++k) {
    OSPREY_ASSERT(from[k].shape() == to[k].shape(), "cloning model '{}': weight {} changed shape",
                  model.name(), from[k].name());
    Tensor dst = to[k].value();
    dst.copy_(from[k].value());
  }
  return Model(net);
}

}  // namespace

Tensor penultimate_features(const Model& model, const Tensor& x, int64_t batch_size) {
  const models::Sequential& seq = sequential_for_features(model);
  OSPREY_CHECK(batch_size > 0, "penultimate_features: batch_size must be positive. Received: {}",
               batch_size);
  OSPREY_CHECK(x.defined() && x.ndim() >= 1 && x.size(0) > 0,
               "penultimate_features: the inputs must be [N, ...] with N > 0. Received: {}",
               x.defined() ? x.describe() : "undefined");
  const std::vector<std::shared_ptr<nn::Layer>> layers = seq.layers();
  const autograd::NoGradGuard no_grad;
  std::vector<Tensor> parts;
  const int64_t n = x.size(0);
  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t stop = std::min(n, start + batch_size);
    autograd::Variable h(x.slice(0, start, stop).contiguous());
    for (size_t l = 0; l + 1 < layers.size(); ++l) h = (*layers[l])(h, false);
    parts.push_back(h.value());
  }
  const Tensor features = parts.size() == 1 ? parts[0] : concat(parts, 0);
  return features.reshape({n, -1}).to(DType::float32).contiguous();
}

XGBoostMember::XGBoostMember(BoostedTrees trees, std::optional<Model> feature_model,
                             std::string name, std::optional<BoostedTreesOptions> options)
    : Member(std::move(name)),
      trees_(std::move(trees)),
      feature_model_(std::move(feature_model)),
      options_(std::move(options)) {
  OSPREY_CHECK(trees_.defined(), "XGBoostMember '{}': the trees are empty (not fitted or loaded)",
               this->name());
  if (feature_model_) sequential_for_features(*feature_model_);
}

std::shared_ptr<XGBoostMember> XGBoostMember::fit_on_inputs(const Tensor& x_train,
                                                            const Tensor& y_train, int num_classes,
                                                            const BoostedTreesOptions& options,
                                                            const Tensor* x_val,
                                                            const Tensor* y_val, std::string name) {
  const Tensor x = flatten_rows(x_train);
  std::optional<Tensor> xv;
  if (x_val != nullptr) xv = flatten_rows(*x_val);
  BoostedTrees trees =
      BoostedTrees::fit(x, y_train, num_classes, options, xv ? &*xv : nullptr, y_val);
  return std::make_shared<XGBoostMember>(std::move(trees), std::nullopt, std::move(name), options);
}

std::shared_ptr<XGBoostMember> XGBoostMember::fit_on_features(
    Model feature_model, const Tensor& x_train, const Tensor& y_train, int num_classes,
    const BoostedTreesOptions& options, const Tensor* x_val, const Tensor* y_val,
    std::string name) {
  sequential_for_features(feature_model);
  OSPREY_CHECK(feature_model.network().built(),
               "XGBoostMember: the feature model '{}' is not built; train it (or build it) first",
               feature_model.name());
  // A snapshot: training or quantizing the network later (it may be another member too) must
  // not move the features these trees were fitted on.
  feature_model = clone_network(feature_model);
  const Tensor f = penultimate_features(feature_model, x_train);
  std::optional<Tensor> fv;
  if (x_val != nullptr) fv = penultimate_features(feature_model, *x_val);
  BoostedTrees trees =
      BoostedTrees::fit(f, y_train, num_classes, options, fv ? &*fv : nullptr, y_val);
  return std::make_shared<XGBoostMember>(std::move(trees), std::move(feature_model),
                                         std::move(name), options);
}

Tensor XGBoostMember::features(const Tensor& x) const {
  return feature_model_ ? penultimate_features(*feature_model_, x) : flatten_rows(x);
}

Tensor XGBoostMember::predict(const Tensor& x) { return trees_.predict_proba(features(x)); }

void XGBoostMember::save(const fs::path& dir) const {
  fs::create_directories(dir);
  trees_.save(dir / kTreesFile);
  if (feature_model_) feature_model_->save((dir / kFeaturesFolder).string());
}

nlohmann::json XGBoostMember::config() const {
  nlohmann::json c = {{"kind", kind()},
                      {"name", name()},
                      {"features", feature_model_ ? "penultimate" : "inputs"},
                      {"num_classes", trees_.num_classes()},
                      {"num_features", trees_.num_features()},
                      {"best_iteration", trees_.best_iteration()}};
  if (options_) c["boosted_trees_options"] = to_json(*options_);
  return c;
}

int64_t XGBoostMember::size_bytes() const {
  if (!trees_bytes_) {
    const io::TemporaryDirectory tmp("osprey_xgboost_size");
    trees_.save(tmp.path() / kTreesFile);
    trees_bytes_ = static_cast<int64_t>(fs::file_size(tmp.path() / kTreesFile));
  }
  int64_t bytes = *trees_bytes_;
  if (feature_model_) {
    for (const Tensor& w : feature_model_->get_weights()) bytes += static_cast<int64_t>(w.nbytes());
  }
  return bytes;
}

std::shared_ptr<XGBoostMember> XGBoostMember::load(const nlohmann::json& config,
                                                   const fs::path& dir) {
  const io::JsonView c(config, "XGBoostMember config");
  const auto features = c.get_or<std::string>("features", "inputs");
  if (features != "inputs" && features != "penultimate")
    c["features"].fail(fmt::format("must be \"inputs\" or \"penultimate\", got \"{}\"", features));
  const fs::path trees_file = dir / kTreesFile;
  BoostedTrees trees = BoostedTrees::load(trees_file);
  if (c.contains("num_classes") && c.get<int>("num_classes") != trees.num_classes()) {
    c["num_classes"].fail(fmt::format("is {}, but {} holds a {}-class model",
                                      c.get<int>("num_classes"), trees_file.string(),
                                      trees.num_classes()));
  }
  std::optional<Model> feature_model;
  if (features == "penultimate")
    feature_model = osprey::load_model((dir / kFeaturesFolder).string());
  std::optional<BoostedTreesOptions> options;
  if (c.contains("boosted_trees_options"))
    options = boosted_trees_options_from_json(c["boosted_trees_options"].json());
  auto member = std::make_shared<XGBoostMember>(std::move(trees), std::move(feature_model),
                                                c.get_or<std::string>("name", "xgboost"), options);
  member->trees_bytes_ = static_cast<int64_t>(fs::file_size(trees_file));
  return member;
}

}  // namespace osprey::ensemble
