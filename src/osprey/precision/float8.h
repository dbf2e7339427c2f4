// The float8 training recipe: fake quantization to float8_e4m3fn (forward operands) or
// float8_e5m2 (gradients) with a per-tensor scale found by delayed scaling, as NVIDIA's
// Transformer Engine and Keras's quantize("float8") do. quant::Float8Dense and Float8Conv2D
// call it on their inputs, kernels and output gradients; the state (scale, amax history) lives in
// plain float32 tensors that those layers own as non-trainable weights, so it saves with them.
//
// On CPU the float8 arithmetic is emulated: a value is quantized and dequantized exactly (the
// result is the float8 number, as float32), and the matmul or convolution then runs in float32.
// Training therefore converges as it would with float8 hardware, but it is not faster than
// float32 (it is a little slower); the speed of float8 comes with a CUDA backend.
//
//   precision::Float8State s = precision::Float8State::create(DType::float8_e4m3fn, {});
//   Tensor xq = precision::delayed_quantize_dequantize(x, s, /*update=*/true);
#pragma once

#include <cstdint>

#include "osprey/tensor/tensor.h"

namespace osprey::precision {

// The delayed-scaling settings (Transformer Engine's DelayedScaling, Keras's defaults).
struct DelayedScaling {
  int64_t amax_history_length = 1024;  // steps of amax remembered; the scale uses their max
  int margin = 0;                      // scale divided by 2^margin: headroom against growth
};

// ValueError unless history length >= 1 and margin >= 0, naming `where` (the layer).
void check_delayed_scaling(const DelayedScaling& options, const char* where);

// The largest finite magnitude of a float8 format: 448 (e4m3fn), 57344 (e5m2); ValueError for
// any other dtype.
float float8_max(DType format);

// y = dequantize(quantize(x * scale)) / scale, in float32, of x's shape: x * scale is rounded
// (in float32) to the nearest `format` value, ties to even, saturating at +-float8_max (Inf
// too); NaN stays NaN. So y is exactly a float8 number divided by scale. When amax is not null
// it receives max|x| over x's non-NaN elements (0 for an empty x), found in the same pass.
// x: any floating dtype (computed through float32); scale must be positive and finite.
Tensor quantize_dequantize(const Tensor& x, DType format, float scale, float* amax = nullptr);

// The delayed-scaling formula: (float8_max(format) / amax) / 2^margin, in float32, or
// `previous` when amax is 0, Inf or NaN, or the result is not finite (nothing to scale by yet).
float compute_scale(float amax, float previous, DType format, int margin = 0);

// A tensor's delayed-scaling state; the tensors are handles (updates write their storage).
struct Float8State {
  DType format = DType::float8_e4m3fn;
  int margin = 0;
  Tensor scale;         // float32 [] (quantize multiplies by it), initially 1
  Tensor amax_history;  // float32 [amax_history_length], newest first, initially 0

  static Float8State create(DType format, const DelayedScaling& options);
};

// Pushes amax at the front of state.amax_history (the oldest entry drops off), then sets
// state.scale = compute_scale(max(history), scale, format, margin). Returns the new scale.
float record_amax(const Float8State& state, float amax);

// quantize_dequantize(x, state.format, scale) with the scale the state holds now: the scale
// comes from earlier steps (delayed), which is what lets real float8 hardware quantize in one
// pass. With update (training) it then records max|x| with record_amax, for the next step;
// global_amax, when given, first turns that into the amax every data-parallel replica records
// (the largest over replicas), so the scales follow the global batch as on one device.
Tensor delayed_quantize_dequantize(const Tensor& x, const Float8State& state, bool update,
                                   float (*global_amax)(float) = nullptr);

}  // namespace osprey::precision
