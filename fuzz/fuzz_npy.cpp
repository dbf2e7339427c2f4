// NumPy .npy files: magic, version, the header dict (descr, fortran_order, shape) and the data.
#include "fuzz_target.h"
#include "osprey/data/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey;
  const auto path = fuzz::scratch_file(fuzz::as_text(data, size), ".npy");
  fuzz::expect_refusal_or_success([&] { data::read_npy(path.string()); });
  return 0;
}
