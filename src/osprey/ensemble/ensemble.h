// Ensemble: several classifiers (networks, gradient-boosted trees) behind one Model-like handle:
// predict() is the weighted average of the members' class probabilities, with weights fitted on
// held-out predictions by a combiner (combiners.h): the plain average, Nelder-Mead or random
// search on the log loss, or Caruana's greedy selection. It saves into one folder, loads,
// evaluates and quantizes like a Model. The weights change only through fit_weights*() and
// set_weights(); predict() and evaluate() never touch them, so a test split cannot leak in.
// Copies of an Ensemble share their members (as copies of a Model share the network).
//   ensemble::Ensemble ens;
//   ens.add(cnn, "cnn").add(mlp, "mlp");
//   ens.add(ensemble::XGBoostMember::fit_on_features(cnn, x_train, y_train, 10));
//   ens.fit_weights(x_val, y_val, "greedy");
//   train::Logs logs = ens.evaluate(x_test, y_test);   // {"loss", "accuracy"}
//   ens.save("fmnist_ensemble");  auto back = ensemble::Ensemble::load("fmnist_ensemble");
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "osprey/ensemble/combiners.h"
#include "osprey/ensemble/member.h"
#include "osprey/ensemble/model_member.h"
#include "osprey/ensemble/xgboost_member.h"
#include "osprey/train/logs.h"
#include "osprey/train/model.h"

namespace osprey::tune {
class Tuner;
}

namespace osprey::ensemble {

class Ensemble {
 public:
  // ensemble.json's "format" and "version".
  static constexpr const char* kFormat = "osprey.ensemble";
  static constexpr int kVersion = 1;

  Ensemble() = default;

  // Adds a member. Its name (by default the model's name) must be unique in the ensemble and a
  // plain folder name (letters, digits, '.', '_', '-'; not starting with '.'), ValueError
  // otherwise. Adding resets the weights to the plain average (combiner "average"): weights
  // fitted for other members mean nothing for the new set.
  Ensemble& add(Model model, std::string name = "", ModelMemberOptions options = {});
  Ensemble& add(std::shared_ptr<Member> member);

  const std::vector<std::shared_ptr<Member>>& members() const { return members_; }
  size_t size() const { return members_.size(); }
  std::shared_ptr<Member> member(const std::string& name) const;  // ValueError listing names
  const std::vector<double>& weights() const { return weights_; }
  // One weight per member, finite, >= 0, positive sum; stored divided by their sum. combiner()
  // becomes `combiner` ("manual" unless told).
  void set_weights(const std::vector<double>& weights, std::string combiner = "manual");
  // What fitted the weights: "average" (a fresh ensemble), a combiner_names() entry, or what
  // set_weights() was told.
  const std::string& combiner() const { return combiner_; }

  // Predicts every member on the held-out rows, then fits the weights on those predictions.
  // Returns the weights.
  const std::vector<double>& fit_weights(const Tensor& x_val, const Tensor& y_val,
                                         const std::string& combiner = "nelder_mead",
                                         const CombinerOptions& options = {});
  // The same from predictions computed elsewhere: member_val_probs[m] is members()[m]'s [N, C]
  // probabilities on the held-out rows whose labels are y_val.
  const std::vector<double>& fit_weights_from_predictions(
      const std::vector<Tensor>& member_val_probs, const Tensor& y_val,
      const std::string& combiner = "nelder_mead", const CombinerOptions& options = {});

  // Each member's [N, C] probabilities (ValueError naming the members whose shapes differ).
  std::vector<Tensor> predict_members(const Tensor& x) const;
  // The weighted average of the members' probabilities: [N, C] float32.
  Tensor predict(const Tensor& x) const;
  // {"loss": log loss, "accuracy"} of predict(x) against y (class ids or one-hot rows), the keys
  // of Model::evaluate with a crossentropy loss and the accuracy metric.
  train::Logs evaluate(const Tensor& x, const Tensor& y) const;
  // The same for every member alone, in members() order.
  std::vector<train::Logs> evaluate_members(const Tensor& x, const Tensor& y) const;

  // Quantizes every member that supports it (networks; XGBoost members keep their trees).
  // ValueError for a mode not in quant::quantization_modes().
  void quantize(const std::string& mode);

  // One folder, replaced atomically (io::atomic_write_directory): dir/ensemble.json and
  // dir/members/<name>/ per member (written by the member's save()).
  void save(const std::filesystem::path& dir) const;
  // IoError naming dir/ensemble.json and the field for a missing or corrupt file, another
  // format or version, an unknown member kind, a missing member folder, or as many weights as
  // members; the members' own loaders name their files.
  static Ensemble load(const std::filesystem::path& dir);

  int64_t size_bytes() const;  // the sum of the members' size_bytes()

  // The top_k best completed trials of a search (tune::Tuner::get_best_models, members named
  // "trial_<id>"), weighted by `combiner` on the validation predictions the tuner kept for each
  // (Tuner::validation_predictions): no retraining and no predicting. ValueError when the search
  // completed no trial or the trials were scored on different validation rows; IoError naming
  // the file when a trial kept no predictions.
  static Ensemble from_tuner(tune::Tuner& tuner, int top_k,
                             const std::string& combiner = "nelder_mead",
                             const CombinerOptions& options = {});

 private:
  void check_not_empty(const char* what) const;

  std::vector<std::shared_ptr<Member>> members_;
  std::vector<double> weights_;
  std::string combiner_ = "average";
};

}  // namespace osprey::ensemble
