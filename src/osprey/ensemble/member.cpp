#include "osprey/ensemble/member.h"

#include <fmt/ranges.h>

#include "osprey/core/error.h"
#include "osprey/ensemble/model_member.h"
#include "osprey/ensemble/xgboost_member.h"

namespace osprey::ensemble {

const std::vector<std::string>& member_kinds() {
  static const std::vector<std::string> kinds = {"model", "xgboost"};
  return kinds;
}

std::shared_ptr<Member> load_member(const nlohmann::json& config,
                                    const std::filesystem::path& dir) {
  OSPREY_CHECK(config.is_object() && config.contains("kind") && config["kind"].is_string(),
               "load_member: the config must be an object with a string \"kind\". Received: {}",
               config.dump());
  const std::string kind = config["kind"].get<std::string>();
  if (kind == "model") return ModelMember::load(config, dir);
  if (kind == "xgboost") return XGBoostMember::load(config, dir);
  OSPREY_THROW(ValueError, "load_member: unknown member kind '{}'. Expected one of: {}", kind,
               fmt::join(member_kinds(), ", "));
}

}  // namespace osprey::ensemble
