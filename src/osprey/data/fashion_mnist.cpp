#include "osprey/data/fashion_mnist.h"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/data/idx.h"

namespace osprey::datasets::fashion_mnist {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFiles[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                   "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
constexpr int64_t kSide = 28;
constexpr int kNumClasses = 10;

std::vector<std::string> candidate_directories(const Options& options) {
  if (!options.directory.empty()) return {options.directory};
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("OSPREY_DATA_DIR"); env && *env) {
    dirs.push_back((fs::path(env) / "fashion-mnist").string());
    dirs.emplace_back(env);
  }
  dirs.emplace_back(kDebianDirectory);
  return dirs;
}

// The four paths in the first directory that has all of them (each gzip'd or not); otherwise an
// IoError listing what was looked for.
std::vector<std::string> find_files(const Options& options) {
  std::vector<std::string> looked;
  for (const std::string& dir : candidate_directories(options)) {
    std::vector<std::string> found;
    for (const char* name : kFiles) {
      const fs::path gz = fs::path(dir) / (std::string(name) + ".gz");
      const fs::path raw = fs::path(dir) / name;
      std::error_code ec;
      if (fs::is_regular_file(gz, ec)) {
        found.push_back(gz.string());
      } else if (fs::is_regular_file(raw, ec)) {
        found.push_back(raw.string());
      } else {
        looked.push_back(gz.string() + " (or " + raw.filename().string() + ")");
      }
    }
    if (found.size() == 4) return found;
  }
  OSPREY_THROW(IoError,
               "fashion_mnist::load: the Fashion-MNIST files are missing. Looked for: {}. To get "
               "them, install the Debian package dataset-fashion-mnist (apt-get install "
               "dataset-fashion-mnist), or name a directory that holds them (`--data DIR` of the "
               "osprey command, Options::directory in C++, or OSPREY_DATA_DIR)",
               fmt::join(looked, ", "));
}

Tensor load_images(const std::string& path, bool flatten) {
  const Tensor raw = data::read_idx(path);
  OSPREY_CHECK_T(IoError,
                 raw.dtype() == DType::uint8 && raw.ndim() == 3 && raw.size(1) == kSide &&
                     raw.size(2) == kSide,
                 "fashion_mnist::load: '{}' should hold ubyte images [N, 28, 28] (IDX magic "
                 "0x00000803); it holds {}",
                 path, raw.describe());
  const int64_t n = raw.size(0);
  Tensor x =
      Tensor::empty(flatten ? Shape{n, kSide * kSide} : Shape{n, kSide, kSide}, {DType::float32});
  float lut[256];
  for (int v = 0; v < 256; ++v)
    lut[v] = static_cast<float>(v) / 255.0f;  // as x.astype("float32") / 255
  const uint8_t* src = raw.data<uint8_t>();
  float* dst = x.data<float>();
  parallel_for(0, x.numel(), 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = lut[src[i]];
  });
  return x;
}

Tensor load_labels(const std::string& path, int64_t expected) {
  const Tensor raw = data::read_idx(path);
  OSPREY_CHECK_T(
      IoError, raw.dtype() == DType::uint8 && raw.ndim() == 1,
      "fashion_mnist::load: '{}' should hold ubyte labels [N] (IDX magic 0x00000801); it holds {}",
      path, raw.describe());
  OSPREY_CHECK_T(IoError, raw.size(0) == expected,
                 "fashion_mnist::load: '{}' holds {} labels, but its images file holds {} images",
                 path, raw.size(0), expected);
  Tensor y = Tensor::empty(Shape{expected}, {DType::int64});
  const uint8_t* src = raw.data<uint8_t>();
  auto* dst = y.data<int64_t>();
  for (int64_t i = 0; i < expected; ++i) {
    OSPREY_CHECK_T(IoError, src[i] < kNumClasses,
                   "fashion_mnist::load: '{}': label {} at byte offset {} is not a class id (0..9)",
                   path, src[i], 8 + i);
    dst[i] = src[i];
  }
  return y;
}

}  // namespace

Data load(const Options& options) {
  const std::vector<std::string> files = find_files(options);
  Data d;
  d.train.x = load_images(files[0], options.flatten);
  d.train.y = load_labels(files[1], d.train.x.size(0));
  d.test.x = load_images(files[2], options.flatten);
  d.test.y = load_labels(files[3], d.test.x.size(0));
  return d;
}

}  // namespace osprey::datasets::fashion_mnist
