// safetensors files: the 8-byte length, the JSON header (dtypes, shapes, offsets, metadata, the
// CRC32C osprey stores) and the data section. The header must be checked against the input's
// size before anything is allocated, so no input allocates more than a few times its own size.
#include "fuzz_target.h"
#include "osprey/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey;
  const std::string_view bytes = fuzz::as_text(data, size);
  fuzz::expect_refusal_or_success([&] { io::deserialize_safetensors(bytes, "fuzz input"); });
  // Without the checksum, mutated data sections get past it to the tensors themselves.
  fuzz::expect_refusal_or_success([&] {
    const io::SafetensorsFile f =
        io::deserialize_safetensors(bytes, "fuzz input", {.verify_checksum = false});
    for (const auto& [name, t] : f.tensors) (void)t.numel();
  });
  // The file path: the reader that takes paths reads the header first, then the data.
  fuzz::expect_refusal_or_success(
      [&] { io::load_safetensors(fuzz::scratch_file(bytes, ".safetensors")); });
  return 0;
}
