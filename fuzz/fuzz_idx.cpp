// IDX files (MNIST's format): magic, dtype code, rank, big-endian sizes, then the data. A header
// claiming more elements than the file holds is refused before the tensor is allocated.
#include "fuzz_target.h"
#include "osprey/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey;
  const auto path = fuzz::scratch_file(fuzz::as_text(data, size), ".idx");
  fuzz::expect_refusal_or_success([&] { data::read_idx(path.string()); });
  return 0;
}
