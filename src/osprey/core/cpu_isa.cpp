// CPUID feature checks for oneDNN's ISA levels and the environment's cap (cpu_isa.h).
#include "osprey/core/cpu_isa.h"

#include <cpuid.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>

#include "osprey/core/error.h"

namespace osprey {

namespace {

constexpr std::array<CpuIsa, 8> kLevels = {CpuIsa::sse41,
                                           CpuIsa::avx,
                                           CpuIsa::avx2,
                                           CpuIsa::avx2_vnni,
                                           CpuIsa::avx512_core,
                                           CpuIsa::avx512_core_vnni,
                                           CpuIsa::avx512_core_bf16,
                                           CpuIsa::avx512_core_amx};

// CPUID leaf 7 subleaf `sub`, register by index (0 eax, 1 ebx, 2 ecx, 3 edx); 0 when absent.
unsigned leaf7(unsigned sub, int reg) noexcept {
  std::array<unsigned, 4> r{};
  if (__get_cpuid_count(7, sub, &r[0], &r[1], &r[2], &r[3]) == 0) return 0;
  return r[static_cast<size_t>(reg)];
}

// clang 14's __builtin_cpu_supports knows neither "avxvnni" nor the AMX features (GCC's does):
// read CPUID directly. AVX-VNNI is leaf 7.1 EAX bit 4; AMX-BF16, AMX-TILE and AMX-INT8 are leaf
// 7.0 EDX bits 22, 24 and 25.
bool has_avx_vnni() noexcept { return (leaf7(1, 0) & (1u << 4)) != 0; }
bool has_amx() noexcept {
  const unsigned edx = leaf7(0, 3);
  const unsigned need = (1u << 22) | (1u << 24) | (1u << 25);
  return (edx & need) == need;
}

bool has_avx512_core() noexcept {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

std::optional<CpuIsa> read_cap(const char* var) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return std::nullopt;
  const std::optional<CpuIsa> isa = parse_cpu_isa(v);
  OSPREY_CHECK(isa.has_value(),
               "{}: unknown instruction set '{}'. Expected one of SSE41, AVX, AVX2, AVX2_VNNI, "
               "AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, ALL",
               var, v);
  return isa;
}

}  // namespace

std::string_view cpu_isa_name(CpuIsa isa) noexcept {
  switch (isa) {
    case CpuIsa::sse41:
      return "sse41";
    case CpuIsa::avx:
      return "avx";
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::avx2_vnni:
      return "avx2_vnni";
    case CpuIsa::avx512_core:
      return "avx512_core";
    case CpuIsa::avx512_core_vnni:
      return "avx512_core_vnni";
    case CpuIsa::avx512_core_bf16:
      return "avx512_core_bf16";
    case CpuIsa::avx512_core_amx:
      return "avx512_core_amx";
  }
  return "unknown";
}

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) noexcept {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "all") return CpuIsa::avx512_core_amx;
  for (CpuIsa isa : kLevels) {
    if (cpu_isa_name(isa) == lower) return isa;
  }
  return std::nullopt;
}

bool cpu_has_isa(CpuIsa isa) noexcept {
  __builtin_cpu_init();
  switch (isa) {
    case CpuIsa::sse41:
      return __builtin_cpu_supports("sse4.1");
    case CpuIsa::avx:
      return __builtin_cpu_supports("avx");
    case CpuIsa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::avx2_vnni:
      return cpu_has_isa(CpuIsa::avx2) && has_avx_vnni();
    case CpuIsa::avx512_core:
      return has_avx512_core();
    case CpuIsa::avx512_core_vnni:
      return has_avx512_core() && __builtin_cpu_supports("avx512vnni");
    case CpuIsa::avx512_core_bf16:
      return cpu_has_isa(CpuIsa::avx512_core_vnni) && __builtin_cpu_supports("avx512bf16");
    case CpuIsa::avx512_core_amx:
      return cpu_has_isa(CpuIsa::avx512_core_bf16) && has_amx();
  }
  return false;
}

CpuIsa detected_cpu_isa() noexcept {
  CpuIsa best = CpuIsa::sse41;
  for (CpuIsa isa : kLevels) {
    if (cpu_has_isa(isa)) best = isa;
  }
  return best;
}

std::optional<CpuIsa> cpu_isa_cap() {
  const std::optional<CpuIsa> ours = read_cap("OSPREY_MAX_CPU_ISA");
  const std::optional<CpuIsa> onednn = read_cap("ONEDNN_MAX_CPU_ISA");
  if (ours && onednn) return std::min(*ours, *onednn);
  return ours ? ours : onednn;
}

CpuIsa effective_cpu_isa() noexcept {
  static const CpuIsa isa = [] {
    // A malformed cap is reported by cpu_isa_cap(), which the CPU backend calls before it creates
    // its engine; the kernels that ask here (conversions, from noexcept code) then run uncapped.
    CpuIsa cap = CpuIsa::avx512_core_amx;
    try {
      cap = cpu_isa_cap().value_or(cap);
    } catch (const ValueError&) {
    }
    CpuIsa best = CpuIsa::sse41;
    for (CpuIsa l : kLevels) {
      if (l <= cap && cpu_has_isa(l)) best = l;
    }
    return best;
  }();
  return isa;
}

std::string describe_cpu_isa() {
  const CpuIsa isa = effective_cpu_isa(), cpu = detected_cpu_isa();
  if (isa == cpu) return std::string(cpu_isa_name(isa));
  std::string by;
  for (const char* var : {"OSPREY_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') by += fmt::format("{}{}={}", by.empty() ? "" : ", ", var, v);
  }
  return fmt::format("{} ({}; the CPU has {})", cpu_isa_name(isa), by, cpu_isa_name(cpu));
}

}  // namespace osprey
