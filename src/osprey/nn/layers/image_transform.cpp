#include "osprey/nn/layers/image_transform.h"

#include <algorithm>

#include "osprey/autograd/grad_mode.h"
#include "osprey/core/error.h"
#include "osprey/core/parallel.h"

namespace osprey::nn::detail {

namespace {

// The input index that integer coordinate i reads under the fill mode; -1: the fill value.
int64_t place_index(int64_t i, int64_t n, FillMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case FillMode::constant:
      return -1;
    case FillMode::nearest:
      return i < 0 ? 0 : n - 1;
    case FillMode::wrap: {
      const int64_t m = i % n;
      return m < 0 ? m + n : m;
    }
    case FillMode::reflect: {
      const int64_t period = 2 * n;
      int64_t m = i % period;
      if (m < 0) m += period;
      return m < n ? m : period - 1 - m;
    }
  }
  return -1;
}

// How one output row (or column) samples the input: the two neighbours (-1: the fill value) and
// the weight of the second. Nearest interpolation has one neighbour and weight 0.
template <class T>
struct Tap {
  int64_t first = 0, second = 0;
  T weight = 0;
};

template <class T>
void make_taps(std::vector<Tap<T>>& taps, int64_t out_size, int64_t in_size, double scale,
               double shift, const ResampleOptions& o) {
  // Far beyond any factor in [-1, 1], and small enough that the casts below are defined.
  constexpr double kLimit = 0x1.0p40;
  taps.resize(static_cast<size_t>(out_size));
  for (int64_t i = 0; i < out_size; ++i) {
    double at = scale * static_cast<double>(i) + shift;
    at = std::isnan(at) ? 0.0 : std::clamp(at, -kLimit, kLimit);
    Tap<T>& t = taps[static_cast<size_t>(i)];
    if (o.interpolation == Interpolation::nearest) {
      t.first = t.second = place_index(static_cast<int64_t>(std::round(at)), in_size, o.fill_mode);
      t.weight = 0;
    } else {
      const double floor = std::floor(at);
      const auto below = static_cast<int64_t>(floor);
      t.first = place_index(below, in_size, o.fill_mode);
      t.second = place_index(below + 1, in_size, o.fill_mode);
      t.weight = static_cast<T>(at - floor);
    }
  }
}

// One image: in [H, W, C] -> out [height, width, C].
template <class T>
void resample_one(const T* in, T* out, const Shape& s, const std::vector<Tap<T>>& rows,
                  const std::vector<Tap<T>>& cols, const ResampleOptions& o) {
  const int64_t w = s[2], c = s[3];
  const auto fill = static_cast<T>(o.fill_value);
  const auto read = [&](const T* row, int64_t col, int64_t ch) {
    return row != nullptr && col >= 0 ? row[col * c + ch] : fill;
  };
  for (const Tap<T>& ty : rows) {
    const T* r0 = ty.first >= 0 ? in + ty.first * w * c : nullptr;
    const T* r1 = ty.second >= 0 ? in + ty.second * w * c : nullptr;
    for (const Tap<T>& tx : cols) {
      for (int64_t ch = 0; ch < c; ++ch) {
        // A zero weight skips its neighbour, so whole-pixel shifts copy values exactly.
        T top = read(r0, tx.first, ch);
        if (tx.weight != 0) top = (1 - tx.weight) * top + tx.weight * read(r0, tx.second, ch);
        if (ty.weight != 0) {
          T bottom = read(r1, tx.first, ch);
          if (tx.weight != 0)
            bottom = (1 - tx.weight) * bottom + tx.weight * read(r1, tx.second, ch);
          top = (1 - ty.weight) * top + ty.weight * bottom;
        }
        *out++ = top;
      }
    }
  }
}

template <class T>
void resample_typed(const Tensor& in, Tensor& out,
                    const std::vector<AxisAlignedTransform>& transforms, const ResampleOptions& o) {
  const Shape& s = in.shape();
  const int64_t image_in = s[1] * s[2] * s[3], image_out = o.height * o.width * s[3];
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  for_each_image(s[0], image_out, kResampleChunk, [&](int64_t begin, int64_t end) {
    std::vector<Tap<T>> rows, cols;  // per chunk, reused by its images
    for (int64_t i = begin; i < end; ++i) {
      const AxisAlignedTransform& t = transforms[static_cast<size_t>(i)];
      make_taps(rows, o.height, s[1], t.zy, t.dy, o);
      make_taps(cols, o.width, s[2], t.zx, t.dx, o);
      resample_one(src + i * image_in, dst + i * image_out, s, rows, cols, o);
    }
  });
}

}  // namespace

FillMode parse_fill_mode(const std::string& fill_mode, const std::string& layer) {
  if (fill_mode == "reflect") return FillMode::reflect;
  if (fill_mode == "wrap") return FillMode::wrap;
  if (fill_mode == "constant") return FillMode::constant;
  if (fill_mode == "nearest") return FillMode::nearest;
  OSPREY_THROW(ValueError,
               "{}: fill_mode must be one of reflect, wrap, constant, nearest. Received: "
               "fill_mode={}",
               layer, fill_mode);
}

Interpolation parse_interpolation(const std::string& interpolation, const std::string& layer) {
  if (interpolation == "bilinear") return Interpolation::bilinear;
  if (interpolation == "nearest") return Interpolation::nearest;
  OSPREY_THROW(ValueError,
               "{}: interpolation must be one of bilinear, nearest. Received: interpolation={}",
               layer, interpolation);
}

Tensor resample_images(const Tensor& images, const std::vector<AxisAlignedTransform>& transforms,
                       const ResampleOptions& options) {
  const Shape& s = images.shape();
  OSPREY_ASSERT(s.ndim() == 4 && static_cast<int64_t>(transforms.size()) == s[0],
                "resample_images: {} transforms for images {}", transforms.size(), s.to_string());
  OSPREY_ASSERT(options.height > 0 && options.width > 0, "resample_images: output size {}x{}",
                options.height, options.width);
  const DType dtype = images.dtype();
  const DType compute = dtype == DType::float64 ? DType::float64 : DType::float32;
  const Tensor in = images.to(compute).contiguous();
  Tensor out = Tensor::empty({s[0], options.height, options.width, s[3]},
                             {.dtype = compute, .device = images.device()});
  if (s[1] == 0 || s[2] == 0) {
    out.fill_(options.fill_value);  // nothing to sample from: every point is outside
  } else if (compute == DType::float64) {
    resample_typed<double>(in, out, transforms, options);
  } else {
    resample_typed<float>(in, out, transforms, options);
  }
  return out.to(dtype);
}

Shape image_batch_shape(const Shape& shape, const std::string& layer) {
  OSPREY_CHECK(shape.ndim() == 3 || shape.ndim() == 4,
               "{}: expected images of shape [batch, height, width, channels] or [batch, height, "
               "width]. Received: {}",
               layer, shape.to_string());
  return shape.ndim() == 4 ? shape : Shape{shape[0], shape[1], shape[2], 1};
}

Shape image_batch_shape(const Tensor& images, const std::string& layer) {
  const Shape s = image_batch_shape(images.shape(), layer);
  OSPREY_CHECK(is_floating(images.dtype()), "{}: expected floating-point images. Received: {}{}",
               layer, dtype_name(images.dtype()), images.shape().to_string());
  return s;
}

void check_no_input_gradient(const autograd::Variable& x, const std::string& layer) {
  OSPREY_CHECK_T(NotImplementedError, !(autograd::is_grad_enabled() && x.requires_grad()),
                 "{}: augmentation layers pass no gradient to their input; place them before any "
                 "layer with weights",
                 layer);
}

uint64_t call_seed(const std::optional<uint64_t>& seed, uint64_t& calls) {
  return seed ? *seed + calls++ : next_seed();
}

std::array<double, 2> image_uniforms(const Philox& rng, int64_t i) {
  const auto w = rng(static_cast<uint64_t>(i));
  return {Philox::to_unit_double(w[0], w[1]), Philox::to_unit_double(w[2], w[3])};
}

void check_factor(const FactorRange& factor, const std::string& name, const std::string& layer) {
  const auto [lower, upper] = factor;
  OSPREY_CHECK(lower >= -1.0 && lower <= upper && upper <= 1.0,
               "{}: {} must be a number or a pair [lower, upper] with -1 <= lower <= upper <= 1. "
               "Received: {}=[{}, {}]",
               layer, name, name, lower, upper);
}

FactorRange read_factor(const nlohmann::json& c, const std::string& key, const std::string& layer) {
  const nlohmann::json& v = c.at(key);
  if (v.is_number()) return symmetric_factor(v.get<double>());
  OSPREY_CHECK(v.is_array() && v.size() == 2 && v[0].is_number() && v[1].is_number(),
               "{}: config field '{}' must be a number or a pair [lower, upper]. Received: {}",
               layer, key, v.dump());
  return {v[0].get<double>(), v[1].get<double>()};
}

void check_channels_last(const nlohmann::json& c, const std::string& layer) {
  const std::string format = c.value("data_format", std::string("channels_last"));
  OSPREY_CHECK_T(NotImplementedError, format == "channels_last",
                 "{}: only data_format='channels_last' is supported. Received: data_format='{}'",
                 layer, format);
}

void for_each_image(int64_t n, int64_t elements_per_image, int64_t chunk_elements,
                    const std::function<void(int64_t, int64_t)>& fn) {
  parallel_for(0, n,
               std::max<int64_t>(1, chunk_elements / std::max<int64_t>(1, elements_per_image)), fn);
}

}  // namespace osprey::nn::detail
