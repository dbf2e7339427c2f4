#include "osprey/precision/float8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/core/float_convert.h"
#include "osprey/core/parallel.h"
#include "osprey/tensor/ops.h"

namespace osprey::precision {

namespace {

constexpr int64_t kBlock = 1024;  // floats per on-stack round trip through float8 codes
constexpr int64_t kGrain = 32 * kBlock;

void check_format(DType format, const char* op) {
  OSPREY_CHECK(format == DType::float8_e4m3fn || format == DType::float8_e5m2,
               "{}: format must be float8_e4m3fn or float8_e5m2. Received: {}", op,
               dtype_name(format));
}

// One block: y = float8(clamp(x * scale)) / scale, and the block's max|x| (NaN ignored: a NaN
// compares false). The clamp is written so that NaN passes through it. y holds the scaled values
// on their way to the codes and back, so x may not alias y.
template <class F8>
float qdq_block(const float* x, float* y, int64_t n, float scale, float max) {
  F8 codes[kBlock];
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    amax = a > amax ? a : amax;
    const float v = x[i] * scale;
    y[i] = v > max ? max : (v < -max ? -max : v);
  }
  convert(y, codes, n);
  convert(codes, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] /= scale;
  return amax;
}

template <class F8>
float qdq_range(const float* x, float* y, int64_t n, float scale) {
  float amax = 0.0f;
  for (int64_t b = 0; b < n; b += kBlock) {
    amax = std::max(amax, qdq_block<F8>(x + b, y + b, std::min(kBlock, n - b), scale, F8::kMax));
  }
  return amax;
}

}  // namespace

void check_delayed_scaling(const DelayedScaling& o, const char* where) {
  OSPREY_CHECK(o.amax_history_length >= 1,
               "{}: amax_history_length must be at least 1. Received: amax_history_length={}",
               where, o.amax_history_length);
  OSPREY_CHECK(o.margin >= 0, "{}: margin must be non-negative. Received: margin={}", where,
               o.margin);
}

float float8_max(DType format) {
  check_format(format, "float8_max");
  return format == DType::float8_e4m3fn ? float8_e4m3fn::kMax : float8_e5m2::kMax;
}

Tensor quantize_dequantize(const Tensor& x, DType format, float scale, float* amax) {
  check_floating(x, "quantize_dequantize", "x");
  check_format(format, "quantize_dequantize");
  OSPREY_CHECK(x.device().is_cpu(), "quantize_dequantize: x must be on a cpu device. Received: {}",
               x.describe());
  OSPREY_CHECK(std::isfinite(scale) && scale > 0.0f,
               "quantize_dequantize: scale must be positive and finite. Received: scale={}", scale);
  const Tensor xc = x.to(DType::float32).contiguous();
  Tensor y = Tensor::empty(x.shape(), {DType::float32, x.device()});
  const float* src = xc.data<float>();
  float* dst = y.data<float>();
  const int64_t n = x.numel();
  // Chunks fixed by size, not by thread count, so amax never depends on the thread count.
  const int64_t chunks = std::max<int64_t>(num_chunks(n, kGrain), 1);
  std::vector<float> partial(static_cast<size_t>(chunks), 0.0f);
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t b = chunk_begin(n, chunks, c), e = chunk_begin(n, chunks, c + 1);
      partial[c] = format == DType::float8_e4m3fn
                       ? qdq_range<float8_e4m3fn>(src + b, dst + b, e - b, scale)
                       : qdq_range<float8_e5m2>(src + b, dst + b, e - b, scale);
    }
  });
  if (amax != nullptr) *amax = *std::max_element(partial.begin(), partial.end());
  return y;
}

float compute_scale(float amax, float previous, DType format, int margin) {
  if (!(amax > 0.0f) || !std::isfinite(amax)) return previous;
  const float s = (float8_max(format) / amax) / std::ldexp(1.0f, margin);
  return std::isfinite(s) && s > 0.0f ? s : previous;
}

Float8State Float8State::create(DType format, const DelayedScaling& options) {
  check_format(format, "Float8State");
  check_delayed_scaling(options, "Float8State");
  Float8State s{format, options.margin, Tensor::empty({}, {DType::float32}),
                Tensor::empty({options.amax_history_length}, {DType::float32})};
  s.scale.fill_(1.0);
  s.amax_history.fill_(0.0);
  return s;
}

namespace {

void check_state(const Float8State& s) {
  check_format(s.format, "float8 scaling");
  OSPREY_CHECK(s.scale.defined() && s.scale.dtype() == DType::float32 && s.scale.numel() == 1 &&
                   s.scale.device().is_cpu(),
               "float8 scaling: the scale must be one float32 on a cpu device. Received: {}",
               s.scale.defined() ? s.scale.describe() : "an undefined tensor");
  OSPREY_CHECK(s.amax_history.defined() && s.amax_history.dtype() == DType::float32 &&
                   s.amax_history.ndim() == 1 && s.amax_history.numel() >= 1 &&
                   s.amax_history.is_contiguous() && s.amax_history.device().is_cpu(),
               "float8 scaling: the amax history must be a contiguous 1-D float32 on a cpu device. "
               "Received: {}",
               s.amax_history.defined() ? s.amax_history.describe() : "an undefined tensor");
}

}  // namespace

float record_amax(const Float8State& state, float amax) {
  check_state(state);
  float* h = state.amax_history.data<float>();
  const int64_t n = state.amax_history.numel();
  std::memmove(h + 1, h, static_cast<size_t>(n - 1) * sizeof(float));
  h[0] = amax;
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = h[i] > m ? h[i] : m;
  float* s = state.scale.data<float>();
  *s = compute_scale(m, *s, state.format, state.margin);
  return *s;
}

Tensor delayed_quantize_dequantize(const Tensor& x, const Float8State& state, bool update,
                                   float (*global_amax)(float)) {
  check_state(state);
  float amax = 0.0f;
  Tensor y =
      quantize_dequantize(x, state.format, *state.scale.data<float>(), update ? &amax : nullptr);
  if (update) record_amax(state, global_amax != nullptr ? global_amax(amax) : amax);
  return y;
}

}  // namespace osprey::precision
