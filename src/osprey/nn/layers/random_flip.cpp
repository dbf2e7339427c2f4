#include "osprey/nn/layers/random_flip.h"

#include <cstring>

#include "osprey/nn/layers/image_transform.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

namespace {

// Writes the n pixels of `from` (`pixel` bytes each) to `to` in reverse order. A pixel size known
// at compile time (one float32 or bfloat16 channel, the common case) turns each copy into a move.
template <int64_t kPixel>
void reverse_fixed(unsigned char* to, const unsigned char* from, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(to + i * kPixel, from + (n - 1 - i) * kPixel, kPixel);
}

void reverse_pixels(unsigned char* to, const unsigned char* from, int64_t n, int64_t pixel) {
  switch (pixel) {
    case 2:
      return reverse_fixed<2>(to, from, n);
    case 4:
      return reverse_fixed<4>(to, from, n);
    case 8:
      return reverse_fixed<8>(to, from, n);
    case 12:
      return reverse_fixed<12>(to, from, n);
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(to + i * pixel, from + (n - 1 - i) * pixel, static_cast<size_t>(pixel));
  }
}

}  // namespace

RandomFlip::RandomFlip(std::string mode, RandomFlipOptions options)
    : SingleInputLayer("RandomFlip", base_options(options)),
      mode_(std::move(mode)),
      options_(std::move(options)) {
  OSPREY_CHECK(mode_ == "horizontal" || mode_ == "vertical" || mode_ == "horizontal_and_vertical",
               "RandomFlip: mode must be one of horizontal, vertical, horizontal_and_vertical. "
               "Received: mode={}",
               mode_);
  horizontal_ = mode_ != "vertical";
  vertical_ = mode_ != "horizontal";
}

Shape RandomFlip::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  detail::image_batch_shape(input_shapes[0], "RandomFlip");
  return input_shapes[0];
}

Variable RandomFlip::call_single(const Variable& x, bool training) {
  const Shape s = detail::image_batch_shape(x.value(), "RandomFlip");
  if (!training) return x;
  detail::check_no_input_gradient(x, "RandomFlip");
  const Philox rng(detail::call_seed(options_.seed, calls_));
  // Flipping moves whole pixels: copy C elements at a time, bytes as they are, in any dtype.
  const Tensor in = x.value().contiguous();
  Tensor out = Tensor::empty(in.shape(), {.dtype = in.dtype(), .device = in.device()});
  const int64_t h = s[1], w = s[2];
  const auto pixel = static_cast<int64_t>(in.itemsize()) * s[3];
  const auto* src = static_cast<const unsigned char*>(in.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  detail::for_each_image(s[0], h * w * s[3], detail::kCopyChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto u = detail::image_uniforms(rng, i);
      const bool flip_h = horizontal_ && u[0] < 0.5, flip_v = vertical_ && u[1] < 0.5;
      for (int64_t y = 0; y < h; ++y) {
        const unsigned char* row = src + ((i * h) + (flip_v ? h - 1 - y : y)) * w * pixel;
        unsigned char* to = dst + ((i * h) + y) * w * pixel;
        if (!flip_h) {
          std::memcpy(to, row, static_cast<size_t>(w * pixel));
          continue;
        }
        reverse_pixels(to, row, w, pixel);
      }
    }
  });
  return Variable(out);
}

nlohmann::json RandomFlip::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["mode"] = mode_;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json();
  c["data_format"] = "channels_last";
  return c;
}

std::shared_ptr<Layer> RandomFlip::from_config(const nlohmann::json& c) {
  RandomFlipOptions o;
  read_base_options(c, o);
  if (c.contains("seed") && !c["seed"].is_null()) o.seed = c["seed"].get<uint64_t>();
  detail::check_channels_last(c, "RandomFlip");
  return std::make_shared<RandomFlip>(c.value("mode", std::string("horizontal_and_vertical")), o);
}

}  // namespace osprey::nn
