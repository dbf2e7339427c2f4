// The ISA cap: oneDNN's names, the lower of the two variables, the error for a bad value, and an
// effective level the CPU supports.
#include "osprey/core/cpu_isa.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"

namespace osprey {
namespace {

// Sets (or unsets, for null) the two cap variables for one test and restores them after.
class CapEnv {
 public:
  CapEnv(const char* ours, const char* onednn) {
    save("OSPREY_MAX_CPU_ISA", ours, saved_ours_, had_ours_);
    save("ONEDNN_MAX_CPU_ISA", onednn, saved_onednn_, had_onednn_);
  }
  ~CapEnv() {
    restore("OSPREY_MAX_CPU_ISA", saved_ours_, had_ours_);
    restore("ONEDNN_MAX_CPU_ISA", saved_onednn_, had_onednn_);
  }
  CapEnv(const CapEnv&) = delete;
  CapEnv& operator=(const CapEnv&) = delete;

 private:
  static void save(const char* var, const char* value, std::string& saved, bool& had) {
    const char* old = std::getenv(var);
    had = old != nullptr;
    if (had) saved = old;
    if (value != nullptr) {
      setenv(var, value, 1);
    } else {
      unsetenv(var);
    }
  }
  static void restore(const char* var, const std::string& saved, bool had) {
    if (had) {
      setenv(var, saved.c_str(), 1);
    } else {
      unsetenv(var);
    }
  }
  std::string saved_ours_, saved_onednn_;
  bool had_ours_ = false, had_onednn_ = false;
};

TEST(CpuIsaTest, ParsesOneDnnsNamesInEitherCaseAndAll) {
  EXPECT_EQ(parse_cpu_isa("AVX2"), CpuIsa::avx2);
  EXPECT_EQ(parse_cpu_isa("avx2_vnni"), CpuIsa::avx2_vnni);
  EXPECT_EQ(parse_cpu_isa("AVX512_CORE"), CpuIsa::avx512_core);
  EXPECT_EQ(parse_cpu_isa("Avx512_Core_Vnni"), CpuIsa::avx512_core_vnni);
  EXPECT_EQ(parse_cpu_isa("AVX512_CORE_BF16"), CpuIsa::avx512_core_bf16);
  EXPECT_EQ(parse_cpu_isa("AVX512_CORE_AMX"), CpuIsa::avx512_core_amx);
  EXPECT_EQ(parse_cpu_isa("ALL"), CpuIsa::avx512_core_amx);
  EXPECT_EQ(parse_cpu_isa("SSE41"), CpuIsa::sse41);
  EXPECT_FALSE(parse_cpu_isa("AVX3"));
  EXPECT_FALSE(parse_cpu_isa(""));
  for (CpuIsa isa : {CpuIsa::avx, CpuIsa::avx2, CpuIsa::avx512_core_bf16}) {
    EXPECT_EQ(parse_cpu_isa(cpu_isa_name(isa)), isa);
  }
}

TEST(CpuIsaTest, TheCapIsTheLowerOfTheTwoVariables) {
  {
    const CapEnv env(nullptr, nullptr);
    EXPECT_FALSE(cpu_isa_cap());
  }
  {
    const CapEnv env("AVX2", nullptr);
    EXPECT_EQ(cpu_isa_cap(), CpuIsa::avx2);
  }
  {
    const CapEnv env(nullptr, "AVX512_CORE");
    EXPECT_EQ(cpu_isa_cap(), CpuIsa::avx512_core);
  }
  {
    const CapEnv env("AVX512_CORE_BF16", "avx2");
    EXPECT_EQ(cpu_isa_cap(), CpuIsa::avx2);
  }
}

TEST(CpuIsaTest, AnUnknownCapNamesTheVariableAndTheAcceptedNames) {
  const CapEnv env("AVX1024", nullptr);
  EXPECT_EQ(testing::error_of<ValueError>([] { (void)cpu_isa_cap(); }),
            "OSPREY_MAX_CPU_ISA: unknown instruction set 'AVX1024'. Expected one of SSE41, AVX, "
            "AVX2, AVX2_VNNI, AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, "
            "ALL");
}

TEST(CpuIsaTest, TheEffectiveLevelIsOneTheCpuSupportsWithinTheCap) {
  const CpuIsa isa = effective_cpu_isa();
  EXPECT_TRUE(cpu_has_isa(isa)) << cpu_isa_name(isa);
  EXPECT_LE(isa, detected_cpu_isa());
  if (const auto cap = cpu_isa_cap()) {
    EXPECT_LE(isa, *cap);
  }
  // The x86-64-v3 baseline osprey is built for.
  EXPECT_TRUE(cpu_has_isa(CpuIsa::avx2));
  EXPECT_GE(isa, CpuIsa::avx2);
  EXPECT_NE(describe_cpu_isa().find(cpu_isa_name(isa)), std::string::npos);
}

TEST(CpuIsaTest, WhatEachLevelOffers) {
  EXPECT_FALSE(cpu_isa_has_vnni(CpuIsa::avx2));
  EXPECT_TRUE(cpu_isa_has_vnni(CpuIsa::avx2_vnni));
  EXPECT_FALSE(cpu_isa_has_vnni(CpuIsa::avx512_core));
  EXPECT_TRUE(cpu_isa_has_vnni(CpuIsa::avx512_core_vnni));
  EXPECT_FALSE(cpu_isa_has_avx512(CpuIsa::avx2_vnni));
  EXPECT_TRUE(cpu_isa_has_avx512(CpuIsa::avx512_core));
  EXPECT_FALSE(cpu_isa_has_bf16(CpuIsa::avx512_core_vnni));
  EXPECT_TRUE(cpu_isa_has_bf16(CpuIsa::avx512_core_bf16));
  EXPECT_TRUE(cpu_isa_has_bf16(CpuIsa::avx512_core_amx));
}

}  // namespace
}  // namespace osprey
