// For tests/int8_isa_test.sh: `int8_isa_probe write DIR` builds a small CNN whose every layer
// quantizes to int8 (no softmax: its logits are int8 layers' outputs), quantizes it and saves
// it; `int8_isa_probe predict DIR` loads it, predicts on fixed inputs with negative and positive
// values, and prints the logits' bytes as hex and each row's class. The script runs `predict`
// under each ISA cap and compares the lines: int8 sums are exact on every ISA, so the bits must
// be the same (docs/cpus_and_determinism.md).
#include <osprey/osprey.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
namespace os = osprey;

namespace {

// 64 images [28, 28] of values in [-1, 1) from a 64-bit LCG: no libm, the same on every CPU.
os::Tensor inputs() {
  std::vector<float> v(64 * 28 * 28);
  uint64_t s = 12345;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<int64_t>(s >> 40) - (int64_t{1} << 23)) / (1 << 23);
  }
  return os::from_vector<float>(v, {64, 28, 28});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: int8_isa_probe write|predict DIR\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  if (mode == "write") {
    os::set_global_seed(7);
    namespace L = os::layers;
    auto model =
        os::Sequential({L::Reshape({28, 28, 1}), L::Conv2D(16, 3, {.activation = "relu"}),
                        L::MaxPooling2D(2), L::Conv2D(32, 3, {.activation = "relu"}),
                        L::MaxPooling2D(2), L::Flatten(), L::Dense(64, "relu"), L::Dense(10)},
                       {.input_shape = {28, 28}});
    model.quantize("int8");
    model.save(dir);
    return 0;
  }
  auto model = os::load_model(dir);
  const os::Tensor logits = model.predict(inputs(), {.batch_size = 64, .verbose = 0});
  const auto* bytes = static_cast<const unsigned char*>(logits.raw_data());
  for (size_t i = 0; i < logits.nbytes(); ++i) std::printf("%02x", bytes[i]);
  std::printf("\n");
  const std::vector<float> v = logits.to_vector<float>();
  for (int64_t r = 0; r < logits.shape()[0]; ++r) {
    int best = 0;
    for (int c = 1; c < 10; ++c) best = v[r * 10 + c] > v[r * 10 + best] ? c : best;
    std::printf("%d", best);
  }
  std::printf("\n");
  return 0;
}
