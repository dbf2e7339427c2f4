#include "osprey/nn/layers/random_crop.h"

#include <algorithm>
#include <cstring>

#include "osprey/nn/layers/image_transform.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

RandomCrop::RandomCrop(int64_t height, int64_t width, RandomCropOptions options)
    : SingleInputLayer("RandomCrop", base_options(options)),
      height_(height),
      width_(width),
      options_(std::move(options)) {
  OSPREY_CHECK(height > 0 && width > 0,
               "RandomCrop: height and width must be positive. Received: height={}, width={}",
               height, width);
}

Shape RandomCrop::compute_output_shape(const std::vector<Shape>& input_shapes) {
  check_num_inputs(input_shapes.size(), 1);
  detail::image_batch_shape(input_shapes[0], "RandomCrop");
  Shape out = input_shapes[0];
  out[1] = height_;
  out[2] = width_;
  return out;
}

Tensor RandomCrop::center_crop_and_resize(const Tensor& images) const {
  const Shape& s = images.shape();  // [N, H, W, C]
  const int64_t h = s[1], w = s[2];
  // Keras's crop_to_aspect_ratio, in the same integer arithmetic.
  const int64_t crop_h = std::max<int64_t>(
      std::min(
          h, static_cast<int64_t>(static_cast<double>(w * height_) / static_cast<double>(width_))),
      1);
  const int64_t crop_w = std::max<int64_t>(
      std::min(
          w, static_cast<int64_t>(static_cast<double>(h * width_) / static_cast<double>(height_))),
      1);
  const Tensor window =
      images.narrow(1, (h - crop_h) / 2, crop_h).narrow(2, (w - crop_w) / 2, crop_w);
  if (crop_h == height_ && crop_w == width_) return window.contiguous();
  // Half-pixel centres: output (x, y) reads ((x + 0.5) * sx - 0.5, (y + 0.5) * sy - 0.5) of the
  // window, clamped to its edge (fill mode nearest), as tf.image.resize without antialiasing.
  const double sy = static_cast<double>(crop_h) / static_cast<double>(height_);
  const double sx = static_cast<double>(crop_w) / static_cast<double>(width_);
  const std::vector<detail::AxisAlignedTransform> transforms(
      static_cast<size_t>(s[0]), {.zx = sx, .dx = 0.5 * sx - 0.5, .zy = sy, .dy = 0.5 * sy - 0.5});
  return detail::resample_images(window, transforms,
                                 {.height = height_,
                                  .width = width_,
                                  .fill_mode = detail::FillMode::nearest,
                                  .interpolation = detail::Interpolation::bilinear});
}

Variable RandomCrop::call_single(const Variable& x, bool training) {
  const Shape s = detail::image_batch_shape(x.value(), "RandomCrop");
  Shape out_shape = x.shape();
  out_shape[1] = height_;
  out_shape[2] = width_;
  if (!training && s[1] == height_ && s[2] == width_) return x;
  // Both paths below return a constant, so neither may cut a graph silently.
  detail::check_no_input_gradient(x, "RandomCrop");
  const Tensor images = x.value().reshape(s);
  if (!training || s[1] < height_ || s[2] < width_)
    return Variable(center_crop_and_resize(images).reshape(out_shape));
  const Philox rng(detail::call_seed(options_.seed, calls_));
  const Tensor in = images.contiguous();
  Tensor out =
      Tensor::empty({s[0], height_, width_, s[3]}, {.dtype = in.dtype(), .device = in.device()});
  const auto pixel = static_cast<int64_t>(in.itemsize()) * s[3];
  const auto* src = static_cast<const unsigned char*>(in.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  const int64_t h = s[1], w = s[2];
  detail::for_each_image(
      s[0], height_ * width_ * s[3], detail::kCopyChunk, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const auto u = detail::image_uniforms(rng, i);
          // A uniform start in [0, H - height], as Keras's uniform(0, H - height + 1) cast to int.
          const int64_t top = std::min(
              static_cast<int64_t>(u[0] * static_cast<double>(h - height_ + 1)), h - height_);
          const int64_t left = std::min(
              static_cast<int64_t>(u[1] * static_cast<double>(w - width_ + 1)), w - width_);
          for (int64_t y = 0; y < height_; ++y) {
            std::memcpy(dst + ((i * height_) + y) * width_ * pixel,
                        src + (((i * h) + top + y) * w + left) * pixel,
                        static_cast<size_t>(width_ * pixel));
          }
        }
      });
  return Variable(out.reshape(out_shape));
}

nlohmann::json RandomCrop::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["height"] = height_;
  c["width"] = width_;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json();
  c["data_format"] = "channels_last";
  return c;
}

std::shared_ptr<Layer> RandomCrop::from_config(const nlohmann::json& c) {
  RandomCropOptions o;
  read_base_options(c, o);
  if (c.contains("seed") && !c["seed"].is_null()) o.seed = c["seed"].get<uint64_t>();
  detail::check_channels_last(c, "RandomCrop");
  return std::make_shared<RandomCrop>(c.at("height").get<int64_t>(), c.at("width").get<int64_t>(),
                                      o);
}

}  // namespace osprey::nn
