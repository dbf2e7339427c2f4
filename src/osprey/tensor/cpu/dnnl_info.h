// What oneDNN does on this machine, for `osprey info` and for kernels that choose a path by ISA:
// the library version, the instruction set its JIT kernels dispatch to, and whether bfloat16
// and int8 run natively (AVX512_BF16 / AVX512_VNNI or AVX-VNNI). Every answer follows the ISA cap
// of core/cpu_isa.h (OSPREY_MAX_CPU_ISA), which apply_cpu_isa_cap() hands to oneDNN.
//   fmt::print("oneDNN {} on {}\n", dnnl_version_string(), dnnl_isa_name());
#pragma once

#include <string>

namespace osprey::cpu {

// Hands OSPREY_MAX_CPU_ISA to oneDNN (dnnl::set_max_cpu_isa) before its first primitive, once
// per process; engine() calls it. Throws ValueError for a malformed cap (cpu_isa_cap()).
void apply_cpu_isa_cap();

// "2.6.3" (and the git hash when the build has one).
std::string dnnl_version_string();
// The ISA oneDNN dispatches to: "avx512_core_amx", "avx512_core_bf16", "avx512_core_vnni",
// "avx512_core", "avx2_vnni", "avx2", "avx", "sse41", or "unknown".
std::string dnnl_isa_name();
// bfloat16 dot products in hardware (AVX512_BF16 or AMX), within the cap.
bool native_bf16() noexcept;
// int8 dot products in hardware (AVX512_VNNI, AVX-VNNI or AMX), within the cap.
bool native_int8() noexcept;
// AVX-512 (F, BW, VL, DQ) within the cap: oneDNN's bf16 kernels run, emulated if not native.
bool avx512_available() noexcept;

}  // namespace osprey::cpu
