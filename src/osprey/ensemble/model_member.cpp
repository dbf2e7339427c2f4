#include "osprey/ensemble/model_member.h"

#include <cmath>

#include "osprey/core/error.h"
#include "osprey/io/json.h"
#include "osprey/tensor/ops.h"

namespace osprey::ensemble {

namespace {
// Softmax outputs can round a hair past 1 (or, in float16, below 0).
constexpr double kProbabilityTolerance = 1e-3;
}  // namespace

ModelMember::ModelMember(Model model, std::string name, ModelMemberOptions options)
    : Member(std::move(name)), model_(std::move(model)), options_(options) {
  OSPREY_CHECK(model_.defined(), "ModelMember: the model is empty (default-constructed)");
  OSPREY_CHECK(options_.batch_size > 0,
               "ModelMember: batch_size must be positive. Received: batch_size={}",
               options_.batch_size);
  if (this->name().empty()) set_name(model_.name());
}

Tensor ModelMember::predict(const Tensor& x) {
  Tensor out = model_.predict(x, {.batch_size = options_.batch_size});
  OSPREY_CHECK(out.ndim() == 2 && is_floating(out.dtype()),
               "ModelMember '{}': the model must output [N, C] class probabilities. Received: "
               "{}",
               name(), out.describe());
  if (options_.from_logits) return softmax(out.to(DType::float32), -1);
  out = out.to(DType::float32).contiguous();
  const float* p = out.data<float>();
  for (int64_t k = 0; k < out.numel(); ++k) {
    OSPREY_CHECK(p[k] >= -kProbabilityTolerance && p[k] <= 1.0 + kProbabilityTolerance,
                 "ModelMember '{}': the model's outputs must be probabilities in [0, 1] (a "
                 "softmax last layer), or logits with from_logits = true. Received: {} at row "
                 "{}, class {}",
                 name(), p[k], k / out.size(1), k % out.size(1));
  }
  return out;
}

void ModelMember::save(const std::filesystem::path& dir) const { model_.save(dir.string()); }

nlohmann::json ModelMember::config() const {
  return {{"kind", kind()},
          {"name", name()},
          {"from_logits", options_.from_logits},
          {"batch_size", options_.batch_size}};
}

void ModelMember::quantize(const std::string& mode) { model_.quantize(mode); }

int64_t ModelMember::size_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& w : model_.get_weights()) bytes += static_cast<int64_t>(w.nbytes());
  return bytes;
}

std::shared_ptr<ModelMember> ModelMember::load(const nlohmann::json& config,
                                               const std::filesystem::path& dir) {
  const io::JsonView c(config, "ModelMember config");
  ModelMemberOptions options;
  options.from_logits = c.get_or<bool>("from_logits", false);
  options.batch_size = c.get_or<int64_t>("batch_size", options.batch_size);
  return std::make_shared<ModelMember>(osprey::load_model(dir.string()),
                                       c.get_or<std::string>("name", ""), options);
}

}  // namespace osprey::ensemble
