// Model descriptions: config.json as Model::save writes it, or Keras's to_json (osprey train
// --model net.json). The description is parsed and the model built under element budgets
// (nn/build_limits.h), since a description alone may legitimately ask for a model of any size:
// what is fuzzed is that every field is checked, and that nothing is allocated past the budget.
#include "fuzz_target.h"
#include "osprey/io/json.h"
#include "osprey/models/model_config.h"
#include "osprey/nn/build_limits.h"
#include "osprey/nn/name_scope.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey;
  fuzz::expect_refusal_or_success([&] {
    const nlohmann::json description = io::parse_json(fuzz::as_text(data, size), "fuzz input");
    nn::NameScope names;
    nn::BuildLimits limits;
    limits.source = "fuzz input";
    limits.max_weight_elements = int64_t{1} << 20;
    limits.max_activation_elements = int64_t{1} << 20;
    nn::BuildLimitsScope scope(std::move(limits));
    models::model_from_config(description, "fuzz input");
  });
  return 0;
}
