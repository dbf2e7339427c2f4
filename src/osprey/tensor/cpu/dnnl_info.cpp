#include "osprey/tensor/cpu/dnnl_info.h"

#include <fmt/format.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "osprey/core/cpu_isa.h"

namespace osprey::cpu {

namespace {

dnnl::cpu_isa to_dnnl_isa(CpuIsa isa) noexcept {
  switch (isa) {
    case CpuIsa::sse41:
      return dnnl::cpu_isa::sse41;
    case CpuIsa::avx:
      return dnnl::cpu_isa::avx;
    case CpuIsa::avx2:
      return dnnl::cpu_isa::avx2;
    case CpuIsa::avx2_vnni:
      return dnnl::cpu_isa::avx2_vnni;
    case CpuIsa::avx512_core:
      return dnnl::cpu_isa::avx512_core;
    case CpuIsa::avx512_core_vnni:
      return dnnl::cpu_isa::avx512_core_vnni;
    case CpuIsa::avx512_core_bf16:
      return dnnl::cpu_isa::avx512_core_bf16;
    case CpuIsa::avx512_core_amx:
      return dnnl::cpu_isa::avx512_core_amx;
  }
  return dnnl::cpu_isa::all;
}

}  // namespace

void apply_cpu_isa_cap() {
  // oneDNN takes its cap once, before it first looks at the ISA: the first caller sets it (a
  // malformed value throws here, and the next caller tries again).
  static const bool applied = [] {
    if (const std::optional<CpuIsa> cap = cpu_isa_cap()) dnnl::set_max_cpu_isa(to_dnnl_isa(*cap));
    return true;
  }();
  (void)applied;
}

std::string dnnl_version_string() {
  const dnnl_version_t* v = dnnl_version();
  std::string s = fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
  if (v->hash != nullptr && std::string_view(v->hash) != "N/A" && *v->hash != '\0') {
    s += fmt::format(" ({})", v->hash);
  }
  return s;
}

std::string dnnl_isa_name() {
  apply_cpu_isa_cap();
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

bool native_bf16() noexcept { return cpu_isa_has_bf16(effective_cpu_isa()); }

bool native_int8() noexcept { return cpu_isa_has_vnni(effective_cpu_isa()); }

bool avx512_available() noexcept { return cpu_isa_has_avx512(effective_cpu_isa()); }

}  // namespace osprey::cpu
