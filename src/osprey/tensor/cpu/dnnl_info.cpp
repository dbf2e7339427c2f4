#include "osprey/tensor/cpu/dnnl_info.h"

#include <cpuid.h>
#include <fmt/format.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace osprey::cpu {

std::string dnnl_version_string() {
  const dnnl_version_t* v = dnnl_version();
  std::string s = fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
  if (v->hash != nullptr && std::string_view(v->hash) != "N/A" && *v->hash != '\0') {
    s += fmt::format(" ({})", v->hash);
  }
  return s;
}

std::string dnnl_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::sse41:
      return "sse41";
    default:
      return "unknown";
  }
}

bool native_bf16() noexcept {
  static const bool v = __builtin_cpu_supports("avx512bf16") ||
                        dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx;
  return v;
}

namespace {
// clang 14's __builtin_cpu_supports does not know "avxvnni" (GCC's does): CPUID leaf 7, subleaf
// 1, EAX bit 4.
bool has_avx_vnni() noexcept {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
}
}  // namespace

bool native_int8() noexcept {
  static const bool v = __builtin_cpu_supports("avx512vnni") || has_avx_vnni() ||
                        dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx;
  return v;
}

bool avx512_available() noexcept {
  static const bool v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return v;
}

}  // namespace osprey::cpu
