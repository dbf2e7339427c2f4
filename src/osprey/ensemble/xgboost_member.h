// XGBoostMember: gradient-boosted trees (BoostedTrees, boosted_trees.h) as an ensemble member.
// The trees see either the raw inputs, flattened to [N, F], or the penultimate features of a
// trained Sequential network (the output of all its layers but the last), so trees can be
// stacked on what a network learned. Its folder holds model.json (XGBoost's own JSON model) and,
// with a feature network, features/ (a saved osprey model).
//   auto trees = XGBoostMember::fit_on_features(cnn, x_train, y_train, /*num_classes=*/10,
//                                               {.num_boost_round = 200}, &x_val, &y_val);
//   Tensor p = trees->predict(x_test);   // [N, 10]
//   ens.add(trees);
#pragma once

#include <optional>

#include "osprey/ensemble/boosted_trees.h"
#include "osprey/ensemble/member.h"
#include "osprey/train/model.h"

namespace osprey::ensemble {

class XGBoostMember : public Member {
 public:
  // Rows per forward pass of the feature network (as Model::predict's batches).
  static constexpr int64_t kFeatureBatchSize = 1024;

  // trees must have been trained on features(x) of this feature_model (none: flattened inputs),
  // which the member holds as given (a Model handle: shared, not copied).
  // options: how the trees were trained, kept for config() (none when unknown).
  XGBoostMember(BoostedTrees trees, std::optional<Model> feature_model = std::nullopt,
                std::string name = "xgboost",
                std::optional<BoostedTreesOptions> options = std::nullopt);

  // Trains the trees on x_train flattened to [N, F]. x_val/y_val (both or neither): held-out rows
  // for early stopping (options.early_stopping_rounds).
  static std::shared_ptr<XGBoostMember> fit_on_inputs(const Tensor& x_train, const Tensor& y_train,
                                                      int num_classes,
                                                      const BoostedTreesOptions& options = {},
                                                      const Tensor* x_val = nullptr,
                                                      const Tensor* y_val = nullptr,
                                                      std::string name = "xgboost");
  // Trains the trees on the penultimate features of feature_model, a trained Sequential model
  // with at least two layers (ValueError otherwise, naming the model and its class). The member
  // keeps a copy of the network as it is now, so training or quantizing feature_model later (it
  // may be another member of the same ensemble) leaves these trees' features as they were.
  static std::shared_ptr<XGBoostMember> fit_on_features(Model feature_model, const Tensor& x_train,
                                                        const Tensor& y_train, int num_classes,
                                                        const BoostedTreesOptions& options = {},
                                                        const Tensor* x_val = nullptr,
                                                        const Tensor* y_val = nullptr,
                                                        std::string name = "xgboost");

  std::string kind() const override { return "xgboost"; }
  const BoostedTrees& trees() const { return trees_; }
  const std::optional<Model>& feature_model() const { return feature_model_; }
  const std::optional<BoostedTreesOptions>& options() const { return options_; }

  // What the trees see: [N, F] float32 (x flattened, or the feature network's penultimate
  // outputs flattened, computed kFeatureBatchSize rows at a time without gradients).
  Tensor features(const Tensor& x) const;
  Tensor predict(const Tensor& x) override;  // trees().predict_proba(features(x))
  // dir/model.json (BoostedTrees::save) and, with a feature network, dir/features/ (Model::save).
  void save(const std::filesystem::path& dir) const override;
  // {"kind": "xgboost", "name", "features": "inputs" | "penultimate", "num_classes",
  //  "num_features", "best_iteration", "boosted_trees_options" (when known)}
  nlohmann::json config() const override;
  // Quantization keeps the trees, and the feature network too: the trees were fitted on its
  // float32 features, which int8 would shift.
  void quantize(const std::string& mode) override {}
  // model.json's bytes plus the feature network's weights.
  int64_t size_bytes() const override;

  static std::shared_ptr<XGBoostMember> load(const nlohmann::json& config,
                                             const std::filesystem::path& dir);

 private:
  BoostedTrees trees_;
  std::optional<Model> feature_model_;
  std::optional<BoostedTreesOptions> options_;
  mutable std::optional<int64_t> trees_bytes_;  // model.json's size, once known
};

// The output of every layer of a Sequential model but the last, flattened to [N, F] float32,
// batch_size rows at a time: the "penultimate features" XGBoostMember trains on. ValueError for
// another kind of model or one with fewer than two layers.
Tensor penultimate_features(const Model& model, const Tensor& x,
                            int64_t batch_size = XGBoostMember::kFeatureBatchSize);

}  // namespace osprey::ensemble
