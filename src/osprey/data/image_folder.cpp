#include "osprey/data/image_folder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>

#include "osprey/core/error.h"
#include "osprey/data/class_folders.h"

// stb_image's functions, compiled here and private to this file (STB_IMAGE_STATIC): the formats
// Keras's image_dataset_from_directory reads, from memory, sides up to 16384 pixels (a bound on
// what a hostile header can make it allocate).
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_MAX_DIMENSIONS (1 << 14)
#include <stb/stb_image.h>

namespace osprey::data {
namespace {

namespace fs = std::filesystem;

struct Decoded {
  std::unique_ptr<unsigned char, void (*)(void*)> pixels{nullptr, stbi_image_free};
  int height = 0, width = 0;
};

Decoded decode(const fs::path& file, int channels) {
  std::ifstream in(file, std::ios::binary);
  OSPREY_CHECK_T(IoError, in.good(), "image file '{}': cannot open", file.string());
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  OSPREY_CHECK_T(IoError, !in.bad() && bytes.size() <= INT32_MAX,
                 "image file '{}': cannot read it (or it is over 2 GiB)", file.string());
  Decoded d;
  int file_channels = 0;
  d.pixels.reset(stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                                       static_cast<int>(bytes.size()), &d.width, &d.height,
                                       &file_channels, channels));
  OSPREY_CHECK_T(IoError, d.pixels != nullptr, "image file '{}': cannot decode it: {}",
                 file.string(), stbi_failure_reason());
  return d;
}

// src [h, w, c] bytes -> dst [out_h, out_w, c] in [0, 1]: bilinear with half-pixel centres (as
// tf.image.resize, antialias off), which is a plain copy when the sizes agree.
void resize_bilinear(const unsigned char* src, int64_t h, int64_t w, int64_t c, float* dst,
                     int64_t out_h, int64_t out_w) {
  struct Tap {
    int64_t lo, hi;
    float frac;
  };
  const auto taps = [](int64_t in, int64_t out) {
    std::vector<Tap> t(static_cast<size_t>(out));
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    for (int64_t i = 0; i < out; ++i) {
      const double pos = std::clamp((static_cast<double>(i) + 0.5) * scale - 0.5, 0.0,
                                    static_cast<double>(in - 1));
      const auto lo = static_cast<int64_t>(pos);
      t[static_cast<size_t>(i)] = {lo, std::min(lo + 1, in - 1), static_cast<float>(pos - lo)};
    }
    return t;
  };
  const std::vector<Tap> ty = taps(h, out_h), tx = taps(w, out_w);
  for (int64_t y = 0; y < out_h; ++y) {
    const Tap& a = ty[static_cast<size_t>(y)];
    for (int64_t x = 0; x < out_w; ++x) {
      const Tap& b = tx[static_cast<size_t>(x)];
      for (int64_t k = 0; k < c; ++k) {
        const auto at = [&](int64_t r, int64_t col) {
          return static_cast<float>(src[(r * w + col) * c + k]);
        };
        const float top = at(a.lo, b.lo) + (at(a.lo, b.hi) - at(a.lo, b.lo)) * b.frac;
        const float bottom = at(a.hi, b.lo) + (at(a.hi, b.hi) - at(a.hi, b.lo)) * b.frac;
        dst[(y * out_w + x) * c + k] = (top + (bottom - top) * a.frac) / 255.0f;
      }
    }
  }
}

}  // namespace

ImageFolderData read_image_folder(const std::string& directory, const ImageFolderOptions& options) {
  OSPREY_CHECK(options.color_mode == "rgb" || options.color_mode == "grayscale",
               "read_image_folder: color_mode must be \"rgb\" or \"grayscale\". Received: \"{}\"",
               options.color_mode);
  OSPREY_CHECK(
      options.height >= 0 && options.width >= 0 && (options.height > 0) == (options.width > 0),
      "read_image_folder: height and width must both be positive (to resize) or both 0. "
      "Received: {}x{}",
      options.height, options.width);
  ClassFiles listed = list_class_files(directory, "image", [](const fs::path& p) {
    return has_extension(p, {".png", ".jpg", ".jpeg", ".bmp", ".gif"});
  });
  ImageFolderData out;
  out.class_names = listed.class_names;
  const auto n = static_cast<int64_t>(listed.files.size());
  OSPREY_CHECK_T(IoError, n > 0,
                 "image folder '{}': no images in its class folders ({}); osprey reads .png, "
                 ".jpg, .jpeg, .bmp and .gif files",
                 directory, fmt::join(out.class_names, ", "));
  if (options.shuffle) shuffle_class_files(listed, options.seed);
  out.files = std::move(listed.files);
  const std::vector<int64_t>& labels = listed.labels;

  const int channels = options.color_mode == "rgb" ? 3 : 1;
  int64_t height = options.height, width = options.width;
  for (int64_t i = 0; i < n; ++i) {
    const std::string& file = out.files[static_cast<size_t>(i)];
    const Decoded d = decode(file, channels);
    if (i == 0) {
      if (height == 0) {
        height = d.height;
        width = d.width;
      }
      out.x = Tensor::empty(Shape{n, height, width, channels}, {DType::float32});
    }
    OSPREY_CHECK_T(IoError, options.height > 0 || (d.height == height && d.width == width),
                   "image folder '{}': '{}' is {}x{} (height x width), but '{}' is {}x{}; give a "
                   "size to resize them all to (osprey train --image-size HxW)",
                   directory, file, d.height, d.width, out.files[0], height, width);
    resize_bilinear(d.pixels.get(), d.height, d.width, channels,
                    out.x.data<float>() + i * height * width * channels, height, width);
  }
  out.y = Tensor::empty(Shape{n}, {DType::int64});
  std::copy(labels.begin(), labels.end(), out.y.data<int64_t>());
  return out;
}

}  // namespace osprey::data
