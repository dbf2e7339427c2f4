#include "osprey/precision/dtype_policy.h"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>

#include "osprey/core/cpu_isa.h"
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

// Says once per process and 16-bit type that a policy computing in it is emulated here, and
// what that costs: the CPU kernels then run in float32 on 16-bit storage (tensor/cpu/dnnl_util.h),
// so the policy keeps mixed precision's numerics and memory but brings no speed-up.
void warn_if_emulated(const std::string& name, DType compute) {
  static std::atomic<bool> warned_bf16{false}, warned_f16{false};
  const CpuIsa isa = effective_cpu_isa();
  // float16 is emulated on every CPU here; bfloat16 wherever AVX512_BF16 is missing.
  std::atomic<bool>* warned = compute == DType::float16                              ? &warned_f16
                              : compute == DType::bfloat16 && !cpu_isa_has_bf16(isa) ? &warned_bf16
                                                                                     : nullptr;
  if (warned == nullptr || warned->exchange(true)) return;
  const std::string_view type = dtype_name(compute);
  fmt::print(stderr,
             "osprey: warning: dtype policy '{}': this CPU ({}) has no {} arithmetic, so {} is "
             "emulated: float32 kernels on {} storage, with {}'s rounding. Expect about float32's "
             "step time, not a speed-up.\n",
             name, cpu_isa_name(isa), type, type, type, type);
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
    warn_if_emulated(name_, compute_dtype_);
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
