// Member: one classifier of an Ensemble, seen only through its class probabilities. A network
// (ModelMember, model_member.h) and gradient-boosted trees (XGBoostMember, xgboost_member.h)
// both give [N, C] float32 probabilities for the same inputs, save into their own folder and
// describe themselves with a small JSON config, from which load_member() rebuilds them.
//   std::shared_ptr<Member> m = std::make_shared<ModelMember>(model, "cnn");
//   Tensor p = m->predict(x_test);             // [N, C] probabilities
//   m->save("ens/members/cnn");                // the member's own files
//   auto again = load_member(m->config(), "ens/members/cnn");
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "osprey/tensor/tensor.h"

namespace osprey::ensemble {

class Member {
 public:
  explicit Member(std::string name) : name_(std::move(name)) {}
  virtual ~Member() = default;
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

  // "model" or "xgboost": what load_member() dispatches on.
  virtual std::string kind() const = 0;
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // x: the inputs (any shape the member takes, batch first) -> [N, C] float32 probabilities.
  virtual Tensor predict(const Tensor& x) = 0;
  // Writes the member's own files into dir (created when missing).
  virtual void save(const std::filesystem::path& dir) const = 0;
  // {"kind", "name", ...what load_member needs besides the files}.
  virtual nlohmann::json config() const = 0;
  // Post-training quantization ("int8", ...) where the member has something to quantize; the
  // default keeps the member as it is.
  virtual void quantize(const std::string& mode) {}
  // Bytes of the member's saved weights (for a report's size column).
  virtual int64_t size_bytes() const = 0;

 private:
  std::string name_;
};

// The kinds load_member() knows, in the order errors list them: "model", "xgboost".
const std::vector<std::string>& member_kinds();

// Rebuilds a member from its config() and the folder its save() wrote; ValueError for an unknown
// kind (listing member_kinds()), IoError from the member's own loader for missing files.
std::shared_ptr<Member> load_member(const nlohmann::json& config, const std::filesystem::path& dir);

}  // namespace osprey::ensemble
