// The fuzz targets' main outside libFuzzer: runs LLVMFuzzerTestOneInput once on every file named
// (folders: every file in them, in name order), so ctest replays the corpus and every past
// finding in the ordinary build. Written here because libFuzzer, which has such a mode, needs
// clang; this is the few lines of it the g++ build needs.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path p = argv[i];
    if (fs::is_directory(p)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file()) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      inputs.insert(inputs.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(p)) {
      inputs.push_back(p);
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a folder\n", argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs (name corpus folders or files)\n");
    return 2;
  }
  for (const fs::path& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), {}};
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", p.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replay: %zu inputs, no finding\n", inputs.size());
  return 0;
}
