// DTypePolicy: which dtype a layer keeps its variables in and which it computes in (Keras's
// keras.DTypePolicy). "mixed_bfloat16" keeps float32 master variables and computes in bfloat16;
// "bfloat16" does both in bfloat16. Layers read the global policy (config::set_dtype_policy, the
// Keras spelling) when they are constructed, unless given their own `dtype`.
//   osprey::config::set_dtype_policy("mixed_bfloat16");   // before the model is built
//   auto d = layers::Dense(10, "softmax", {.dtype = "float32"});   // the output stays float32
//   d->dtype_policy().name();  // "float32"; other layers: variable float32, compute bfloat16
#pragma once

#include <string>
#include <string_view>

#include "osprey/core/dtype.h"

namespace osprey::precision {

class DTypePolicy {
 public:
  DTypePolicy() = default;  // float32
  // "float32", "float64", "float16", "bfloat16", "mixed_float16" or "mixed_bfloat16"; anything
  // else throws ValueError listing the valid names.
  explicit DTypePolicy(std::string_view name);

  const std::string& name() const noexcept { return name_; }
  DType variable_dtype() const noexcept { return variable_dtype_; }
  DType compute_dtype() const noexcept { return compute_dtype_; }
  // Variables and computation in different dtypes (the mixed_* policies).
  bool is_mixed() const noexcept { return variable_dtype_ != compute_dtype_; }
  // Whether a layer under this policy casts an input of dtype d to compute_dtype(): floating
  // inputs of another dtype are cast (Keras's autocast); integer inputs (indices, labels) never.
  bool casts_input(DType d) const noexcept { return is_floating(d) && d != compute_dtype_; }

  bool operator==(const DTypePolicy& other) const noexcept { return name_ == other.name_; }

 private:
  std::string name_ = "float32";
  DType variable_dtype_ = DType::float32;
  DType compute_dtype_ = DType::float32;
};

// "float32, float64, float16, bfloat16, mixed_float16, mixed_bfloat16": for error messages.
const char* valid_policy_names() noexcept;

// Sets the global policy for the calling scope and restores the previous one on destruction
// (for tests and for code that builds one model under a policy).
class DTypePolicyScope {
 public:
  explicit DTypePolicyScope(std::string_view name);
  ~DTypePolicyScope();
  DTypePolicyScope(const DTypePolicyScope&) = delete;
  DTypePolicyScope& operator=(const DTypePolicyScope&) = delete;

 private:
  DTypePolicy previous_;
};

}  // namespace osprey::precision

namespace osprey::config {
// The global dtype policy layers take when their own `dtype` is empty (Keras's
// keras.config.set_dtype_policy). Set it before building the model: layers read it once, when
// they are constructed. Thread-safe; the default is "float32".
void set_dtype_policy(std::string_view name);
void set_dtype_policy(const precision::DTypePolicy& policy);
precision::DTypePolicy dtype_policy();
}  // namespace osprey::config
