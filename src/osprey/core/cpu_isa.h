// The x86-64 instruction set osprey's kernels may use: what the CPU has, capped by
// OSPREY_MAX_CPU_ISA (and by ONEDNN_MAX_CPU_ISA, which oneDNN reads itself), so one machine can
// run the suite as an older CPU would. Both take oneDNN's names (AVX2, AVX2_VNNI, AVX512_CORE,
// AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, ALL). tensor/cpu hands the same cap to
// oneDNN, so osprey's hand-vectorized kernels and oneDNN's JIT kernels always agree.
//   if (cpu_isa_has_vnni(effective_cpu_isa())) { ... }   // int8 dot products in hardware
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace osprey {

// oneDNN's x86-64 ISA levels, lowest first. avx2_vnni (AVX-VNNI, Alder Lake, Zen 4) is not a
// subset of avx512_core: capping an AVX-512 CPU at avx2_vnni gives AVX2 with VNNI, and capping
// it at avx512_core leaves VNNI out.
enum class CpuIsa {
  sse41,
  avx,
  avx2,
  avx2_vnni,
  avx512_core,
  avx512_core_vnni,
  avx512_core_bf16,
  avx512_core_amx,
};

// "avx2", "avx512_core_bf16", ... (lower case, as oneDNN prints them).
std::string_view cpu_isa_name(CpuIsa isa) noexcept;
// Parses a cap as OSPREY_MAX_CPU_ISA / ONEDNN_MAX_CPU_ISA take it, in either case; "ALL" is the
// highest level. nullopt for anything else.
std::optional<CpuIsa> parse_cpu_isa(std::string_view name) noexcept;

// True when the CPU (and the OS, for the AVX-512 state) supports every instruction of isa.
bool cpu_has_isa(CpuIsa isa) noexcept;
// The highest level the CPU supports, ignoring any cap.
CpuIsa detected_cpu_isa() noexcept;
// The cap from the environment: the lower of OSPREY_MAX_CPU_ISA and ONEDNN_MAX_CPU_ISA; nullopt
// when neither is set. Throws ValueError naming the variable and the accepted names when a value
// is not one of them.
std::optional<CpuIsa> cpu_isa_cap();
// The level osprey's kernels run at: the highest one the CPU supports that is at most the cap.
// Read once per process (the environment is read on the first call).
CpuIsa effective_cpu_isa() noexcept;
// Where the effective level came from, for `osprey info`: "avx2 (OSPREY_MAX_CPU_ISA=AVX2; the
// CPU has avx512_core_bf16)" or "avx512_core_bf16".
std::string describe_cpu_isa();

// What a level offers.
constexpr bool cpu_isa_has_avx512(CpuIsa isa) noexcept { return isa >= CpuIsa::avx512_core; }
// int8 dot products accumulated in 32 bits without saturation (VNNI's vpdpbusd, or AMX).
constexpr bool cpu_isa_has_vnni(CpuIsa isa) noexcept {
  return isa == CpuIsa::avx2_vnni || isa >= CpuIsa::avx512_core_vnni;
}
// bfloat16 dot products and conversions in hardware (AVX512_BF16, or AMX).
constexpr bool cpu_isa_has_bf16(CpuIsa isa) noexcept { return isa >= CpuIsa::avx512_core_bf16; }

}  // namespace osprey
