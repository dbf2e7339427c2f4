// TOML: the reader under osprey train --model net.toml (io::toml_to_json) and the search spaces of
// osprey tune --space (every hyperparameter kind, its range, conditions).
#include "fuzz_target.h"
#include "osprey/io/toml.h"
#include "osprey/tune/search_space_toml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey;
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::expect_refusal_or_success([&] { io::toml_to_json(text, "fuzz input"); });
  fuzz::expect_refusal_or_success(
      [&] { tune::hyperparameters_from_toml_text(text, "fuzz input"); });
  return 0;
}
