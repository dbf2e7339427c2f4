#include "osprey/precision/dtype_policy.h"

#include <array>
#include <mutex>

#include "osprey/core/error.h"

namespace osprey::precision {

namespace {

struct PolicyDef {
  std::string_view name;
  DType variable_dtype;
  DType compute_dtype;
};

constexpr std::array<PolicyDef, 6> kPolicies{{
    {"float32", DType::float32, DType::float32},
    {"float64", DType::float64, DType::float64},
    {"float16", DType::float16, DType::float16},
    {"bfloat16", DType::bfloat16, DType::bfloat16},
    {"mixed_float16", DType::float32, DType::float16},
    {"mixed_bfloat16", DType::float32, DType::bfloat16},
}};

std::mutex g_policy_mutex;
DTypePolicy& global_policy() {
  static DTypePolicy policy;
  return policy;
}

}  // namespace

const char* valid_policy_names() noexcept {
  return "float32, float64, float16, bfloat16, mixed_float16, mixed_bfloat16";
}

DTypePolicy::DTypePolicy(std::string_view name) {
  for (const PolicyDef& p : kPolicies) {
    if (p.name != name) continue;
    name_ = std::string(name);
    variable_dtype_ = p.variable_dtype;
    compute_dtype_ = p.compute_dtype;
    return;
  }
  OSPREY_THROW(ValueError, "DTypePolicy: unknown dtype policy '{}'. Valid policies: {}", name,
               valid_policy_names());
}

DTypePolicyScope::DTypePolicyScope(std::string_view name) : previous_(config::dtype_policy()) {
  config::set_dtype_policy(name);
}

DTypePolicyScope::~DTypePolicyScope() { config::set_dtype_policy(previous_); }

}  // namespace osprey::precision

namespace osprey::config {

void set_dtype_policy(std::string_view name) { set_dtype_policy(precision::DTypePolicy(name)); }

void set_dtype_policy(const precision::DTypePolicy& policy) {
  std::lock_guard<std::mutex> lock(precision::g_policy_mutex);
  precision::global_policy() = policy;
}

precision::DTypePolicy dtype_policy() {
  std::lock_guard<std::mutex> lock(precision::g_policy_mutex);
  return precision::global_policy();
}

}  // namespace osprey::config
