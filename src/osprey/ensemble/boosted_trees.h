// BoostedTrees: a gradient-boosted-trees classifier on XGBoost's C API (objective
// multi:softprob), so an ensemble can put trees beside neural networks: it takes the same tensors
// (x: [N, ...] float32, y: [N] class ids) and gives the same [N, num_classes] probabilities.
// Without libxgboost (OSPREY_WITH_XGBOOST off) the API still compiles; fit and load throw
// NotImplementedError, and xgboost_built() says which build this is.
//   auto trees = BoostedTrees::fit(x, y, /*num_classes=*/10, {.num_boost_round = 200,
//                                  .early_stopping_rounds = 10}, &x_val, &y_val);
//   Tensor p = trees.predict_proba(x_test);   // [N, 10], rows sum to 1
//   trees.save("trees.json");  auto back = BoostedTrees::load("trees.json");
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "osprey/io/json.h"
#include "osprey/tensor/tensor.h"

namespace osprey::ensemble {

// XGBoost's parameters under their XGBoost names (learning_rate is eta).
struct BoostedTreesOptions {
  int num_boost_round = 100;
  int max_depth = 6;
  double learning_rate = 0.3;
  double subsample = 1.0;
  double colsample_bytree = 1.0;
  double min_child_weight = 1.0;
  double reg_lambda = 1.0;
  std::string tree_method = "hist";
  int max_bin = 256;
  int nthread = 0;  // 0: osprey's thread count (osprey/core/parallel.h)
  // XGBoost's seed is a signed 64-bit integer: seeds past INT64_MAX wrap around (same bits).
  uint64_t seed = 0;
  // > 0 needs validation data: training stops when the validation mlogloss has not improved for
  // this many rounds, and the best round is kept (best_iteration()); the later trees stay in the
  // model but predictions use only the rounds up to the best one.
  int early_stopping_rounds = 0;
  int verbose = 0;  // 1: print the eval log (train, validation mlogloss) every 10 rounds
  bool operator==(const BoostedTreesOptions&) const = default;
};

// For saving an ensemble member's config. Missing fields keep their defaults; an unknown field
// or a field of the wrong type is a ValueError naming it.
nlohmann::json to_json(const BoostedTreesOptions& options);
BoostedTreesOptions boosted_trees_options_from_json(const nlohmann::json& j);

// True when osprey was built with XGBoost; false in the stub build.
bool xgboost_built() noexcept;

class BoostedTrees {
 public:
  BoostedTrees();  // empty: defined() is false, everything but defined() throws ValueError
  BoostedTrees(BoostedTrees&& other) noexcept;
  BoostedTrees& operator=(BoostedTrees&& other) noexcept;
  ~BoostedTrees();

  // x: [N, ...] (flattened to [N, F], converted to float32), y: [N] (or [N, 1]) integer class
  // ids in [0, num_classes): int32/int64, or a float dtype holding integers. NaN in x means a
  // missing value (XGBoost learns which branch it takes); +-inf is refused. x_val/y_val: held-out
  // data for early stopping and the verbose log, both or neither.
  static BoostedTrees fit(const Tensor& x, const Tensor& y, int num_classes,
                          const BoostedTreesOptions& options = {}, const Tensor* x_val = nullptr,
                          const Tensor* y_val = nullptr);

  // x: [N, ...] with num_features() features per row -> [N, num_classes] float32, rows sum to 1.
  // Uses the rounds up to best_iteration() when early stopping chose one, else all of them.
  Tensor predict_proba(const Tensor& x) const;

  int num_classes() const;
  int64_t num_features() const;
  int best_iteration() const;  // 0-based round kept by early stopping; -1 when none
  bool defined() const noexcept { return impl_ != nullptr; }

  // XGBoost's own JSON model format (readable by any XGBoost >= 1.0), so the path must end in
  // .json; the file is replaced atomically (temporary + rename): an existing file is never left
  // half-written. best_iteration travels as a booster attribute, as in XGBoost's Python package.
  void save(const std::filesystem::path& json_file) const;
  // Reads a multi:softprob model saved by save() or by XGBoost itself; IoError naming the file
  // when it is missing, not an XGBoost JSON model, or not a multi-class classifier.
  static BoostedTrees load(const std::filesystem::path& json_file);

 private:
  struct Impl;  // owns the BoosterHandle
  explicit BoostedTrees(std::unique_ptr<Impl> impl);
  const Impl& impl(const char* op) const;  // ValueError naming op on an empty model

  std::unique_ptr<Impl> impl_;
};

// ---- Options JSON: inline so the XGBoost build and the stub build share one definition. ----

inline nlohmann::json to_json(const BoostedTreesOptions& options) {
  return {{"num_boost_round", options.num_boost_round},
          {"max_depth", options.max_depth},
          {"learning_rate", options.learning_rate},
          {"subsample", options.subsample},
          {"colsample_bytree", options.colsample_bytree},
          {"min_child_weight", options.min_child_weight},
          {"reg_lambda", options.reg_lambda},
          {"tree_method", options.tree_method},
          {"max_bin", options.max_bin},
          {"nthread", options.nthread},
          {"seed", options.seed},
          {"early_stopping_rounds", options.early_stopping_rounds},
          {"verbose", options.verbose}};
}

inline BoostedTreesOptions boosted_trees_options_from_json(const nlohmann::json& j) {
  const io::JsonView v(j, "BoostedTreesOptions");
  const nlohmann::json known = to_json(BoostedTreesOptions{});
  for (const auto& [key, value] : v.items()) {
    if (!known.contains(key)) value.fail("is not a BoostedTreesOptions field");
  }
  BoostedTreesOptions o;
  o.num_boost_round = v.get_or("num_boost_round", o.num_boost_round);
  o.max_depth = v.get_or("max_depth", o.max_depth);
  o.learning_rate = v.get_or("learning_rate", o.learning_rate);
  o.subsample = v.get_or("subsample", o.subsample);
  o.colsample_bytree = v.get_or("colsample_bytree", o.colsample_bytree);
  o.min_child_weight = v.get_or("min_child_weight", o.min_child_weight);
  o.reg_lambda = v.get_or("reg_lambda", o.reg_lambda);
  o.tree_method = v.get_or("tree_method", o.tree_method);
  o.max_bin = v.get_or("max_bin", o.max_bin);
  o.nthread = v.get_or("nthread", o.nthread);
  o.seed = v.get_or("seed", o.seed);
  o.early_stopping_rounds = v.get_or("early_stopping_rounds", o.early_stopping_rounds);
  o.verbose = v.get_or("verbose", o.verbose);
  return o;
}

}  // namespace osprey::ensemble
