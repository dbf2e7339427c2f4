// ModelMember: an osprey::Model as an ensemble member. Its outputs must be [N, C] class
// probabilities (a softmax last layer), or logits with from_logits = true, which applies the
// softmax here. It saves with Model::save and loads with osprey::load_model, so a member's folder
// is an ordinary saved model; quantize() forwards to Model::quantize.
//   auto member = std::make_shared<ModelMember>(model, "cnn",
//                                               ModelMemberOptions{.from_logits = true});
//   Tensor p = member->predict(x_val);   // [N, 10], rows sum to 1
#pragma once

#include "osprey/ensemble/member.h"
#include "osprey/train/model.h"

namespace osprey::ensemble {

struct ModelMemberOptions {
  bool from_logits = false;   // the model outputs logits: softmax them
  int64_t batch_size = 1024;  // rows per forward pass in predict()
};

class ModelMember : public Member {
 public:
  // An empty name takes the model's own name.
  explicit ModelMember(Model model, std::string name = "", ModelMemberOptions options = {});

  std::string kind() const override { return "model"; }
  const Model& model() const { return model_; }
  const ModelMemberOptions& options() const { return options_; }

  // ValueError naming the member when the output is not [N, C], or (without from_logits) holds
  // values outside [0, 1], which are logits rather than probabilities.
  Tensor predict(const Tensor& x) override;
  void save(const std::filesystem::path& dir) const override;  // Model::save(dir)
  // {"kind": "model", "name", "from_logits", "batch_size"}
  nlohmann::json config() const override;
  void quantize(const std::string& mode) override;  // Model::quantize(mode)
  int64_t size_bytes() const override;              // bytes of every weight, as stored

  static std::shared_ptr<ModelMember> load(const nlohmann::json& config,
                                           const std::filesystem::path& dir);

 private:
  Model model_;
  ModelMemberOptions options_;
};

}  // namespace osprey::ensemble
