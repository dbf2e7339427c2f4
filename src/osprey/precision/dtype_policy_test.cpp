#include "osprey/precision/dtype_policy.h"

#include <gtest/gtest.h>

#include "osprey/core/error.h"

namespace osprey::precision {
namespace {

TEST(DTypePolicyTest, EachPolicyNamesItsVariableAndComputeDtypes) {
  struct Case {
    const char* name;
    DType variable, compute;
  };
  const Case cases[] = {{"float32", DType::float32, DType::float32},
                        {"float64", DType::float64, DType::float64},
                        {"float16", DType::float16, DType::float16},
                        {"bfloat16", DType::bfloat16, DType::bfloat16},
                        {"mixed_float16", DType::float32, DType::float16},
                        {"mixed_bfloat16", DType::float32, DType::bfloat16}};
  for (const Case& c : cases) {
    const DTypePolicy p(c.name);
    EXPECT_EQ(p.name(), c.name);
    EXPECT_EQ(p.variable_dtype(), c.variable) << c.name;
    EXPECT_EQ(p.compute_dtype(), c.compute) << c.name;
    EXPECT_EQ(p.is_mixed(), c.variable != c.compute) << c.name;
  }
  EXPECT_EQ(DTypePolicy().name(), "float32");
}

TEST(DTypePolicyTest, UnknownNameListsTheValidOnes) {
  try {
    DTypePolicy p("mixed_float32");
    FAIL() << "no throw";
  } catch (const ValueError& e) {
    EXPECT_STREQ(
        e.what(),
        "DTypePolicy: unknown dtype policy 'mixed_float32'. Valid policies: float32, float64, "
        "float16, bfloat16, mixed_float16, mixed_bfloat16");
  }
  EXPECT_THROW(config::set_dtype_policy("fp16"), ValueError);
  EXPECT_EQ(config::dtype_policy().name(), "float32");  // a bad name changes nothing
}

TEST(DTypePolicyTest, CastsOnlyFloatingInputsOfAnotherDtype) {
  const DTypePolicy p("mixed_bfloat16");
  EXPECT_TRUE(p.casts_input(DType::float32));
  EXPECT_TRUE(p.casts_input(DType::float16));
  EXPECT_FALSE(p.casts_input(DType::bfloat16));
  EXPECT_FALSE(p.casts_input(DType::int64));
  EXPECT_FALSE(p.casts_input(DType::int32));
}

TEST(DTypePolicyTest, GlobalPolicyIsSetByNameAndScopesRestoreIt) {
  EXPECT_EQ(config::dtype_policy().name(), "float32");
  {
    DTypePolicyScope scope("mixed_bfloat16");
    EXPECT_EQ(config::dtype_policy().compute_dtype(), DType::bfloat16);
    config::set_dtype_policy("float64");
    EXPECT_EQ(config::dtype_policy().variable_dtype(), DType::float64);
  }
  EXPECT_EQ(config::dtype_policy().name(), "float32");
}

}  // namespace
}  // namespace osprey::precision
