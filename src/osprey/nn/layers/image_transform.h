// What the image augmentation layers (RandomFlip, RandomTranslation, RandomZoom, RandomCrop)
// share: their input check ([N, H, W, C] or [N, H, W], floating), the rule that they pass no
// gradient, per-call seeds and per-image uniform draws, factor ranges, and the resampling kernel:
// an axis-aligned affine transform of a batch of images with per-image parameters, filled and
// interpolated as keras.ops.image.affine_transform (tf.raw_ops.ImageProjectiveTransformV3).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/core/rng.h"
#include "osprey/tensor/tensor.h"

namespace osprey::nn::detail {

// Where a sample outside the input reads from (Keras's fill_mode):
//   reflect  (d c b a | a b c d | d c b a)   about the edge of the last pixel
//   wrap     (a b c d | a b c d | a b c d)
//   constant (k k k k | a b c d | k k k k)   k = fill_value
//   nearest  (a a a a | a b c d | d d d d)
enum class FillMode { reflect, wrap, constant, nearest };
enum class Interpolation { bilinear, nearest };

// ValueError "<layer>: fill_mode must be one of reflect, wrap, constant, nearest. Received: ...".
FillMode parse_fill_mode(const std::string& fill_mode, const std::string& layer);
Interpolation parse_interpolation(const std::string& interpolation, const std::string& layer);

// Output pixel (x, y) samples the input at (zx * x + dx, zy * y + dy): the transform
// [zx, 0, dx, 0, zy, dy, 0, 0] of ImageProjectiveTransformV3, which maps output points to input
// points. Translations and zooms need no rotation or shear, and a separable transform lets the
// kernel resolve fill and interpolation once per row and column instead of once per pixel.
struct AxisAlignedTransform {
  double zx = 1.0, dx = 0.0, zy = 1.0, dy = 0.0;
};

struct ResampleOptions {
  int64_t height = 0;  // of the output
  int64_t width = 0;
  FillMode fill_mode = FillMode::constant;
  Interpolation interpolation = Interpolation::bilinear;
  double fill_value = 0.0;
};

// images: [N, H, W, C] floating -> [N, height, width, C] in the same dtype, transforms[i] applied
// to image i. Bilinear reads the four neighbours of a sample, each placed by the fill mode
// (constant: fill_value outside); nearest rounds half away from zero. bfloat16 and float16 are
// computed in float32. A whole-pixel translation copies values exactly.
Tensor resample_images(const Tensor& images, const std::vector<AxisAlignedTransform>& transforms,
                       const ResampleOptions& options);

// The [N, H, W, C] shape an augmentation layer works on: the input's shape, or [N, H, W, 1] for
// [N, H, W]. ValueError naming the layer and what it received for any other rank (batch may be
// -1 in symbolic shapes).
Shape image_batch_shape(const Shape& shape, const std::string& layer);
// The same for a call's input, which must also be floating.
Shape image_batch_shape(const Tensor& images, const std::string& layer);

// Augmentation layers sit on model inputs and return constants: NotImplementedError when a
// training call (with gradients recorded) gets an input that requires grad.
void check_no_input_gradient(const autograd::Variable& x, const std::string& layer);

// The seed of a training call, as Dropout: seed + calls (and calls advances) when the layer has
// its own seed, else osprey::next_seed(), so runs repeat under osprey::set_global_seed.
uint64_t call_seed(const std::optional<uint64_t>& seed, uint64_t& calls);

// Two independent uniform numbers in [0, 1) for image i of a call: the i-th Philox block, so
// every image's parameters depend only on (seed, i), whatever the thread count.
std::array<double, 2> image_uniforms(const Philox& rng, int64_t i);

// A factor range [lower, upper] as the layers keep it; a single number f means [-|f|, |f|].
using FactorRange = std::pair<double, double>;
inline FactorRange symmetric_factor(double f) { return {-std::abs(f), std::abs(f)}; }
// ValueError "<layer>: <name> must be a number or a pair [lower, upper] with -1 <= lower <= upper
// <= 1. Received: <name>=[lower, upper]".
void check_factor(const FactorRange& factor, const std::string& name, const std::string& layer);
// c[key] as a number or a [lower, upper] pair (ValueError otherwise); the range is not checked.
FactorRange read_factor(const nlohmann::json& c, const std::string& key, const std::string& layer);
inline nlohmann::json factor_json(const FactorRange& f) {
  return nlohmann::json::array({f.first, f.second});
}
// Keras saves data_format with these layers; osprey's images are channels_last only, so a config
// asking for channels_first is NotImplementedError rather than silently misread.
void check_channels_last(const nlohmann::json& c, const std::string& layer);

// Runs fn(begin, end) over images [0, n), in parallel chunks of at least chunk_elements output
// elements: resampling pays for a thread from 32k elements on; copies (flips, crops) are memory
// bound and split only far larger batches.
inline constexpr int64_t kResampleChunk = 32768;
inline constexpr int64_t kCopyChunk = 1 << 20;
void for_each_image(int64_t n, int64_t elements_per_image, int64_t chunk_elements,
                    const std::function<void(int64_t, int64_t)>& fn);

}  // namespace osprey::nn::detail
