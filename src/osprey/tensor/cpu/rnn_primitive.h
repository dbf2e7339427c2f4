// The oneDNN RNN primitives behind cpu::rnn_forward/rnn_backward (rnn.cpp: whole sequences;
// rnn_masked.cpp: masked batches one step at a time): the geometry of a call, cached entries
// (primitive, weight reorders, workspace size) and the helpers both paths share. Internal to
// tensor/cpu/.
#pragma once

#include <cstdint>
#include <memory>

#include "osprey/tensor/backend.h"
#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/primitive_cache.h"

namespace osprey::cpu::rnn_detail {

struct Geometry {
  RnnCell cell;
  Activation activation;
  int64_t batch, steps, features, units, gates;
  bool lstm() const { return cell == RnnCell::lstm; }
  int64_t bias_gates() const { return cell == RnnCell::gru_reset_after ? 4 : gates; }
};

Geometry geometry_of(const RnnArgs& in, const RnnParams& p);

// A weight tensor between our ldigo layout and the primitive's: the reorder (null when the
// layouts agree) and the bytes of the primitive's copy.
struct WeightsPlan {
  std::unique_ptr<DnnlOp> reorder;
  size_t bytes = 0;
};

struct RnnEntry : CacheEntry {
  std::unique_ptr<DnnlOp> prim;
  WeightsPlan layer, iter;            // the weights (forward and backward)
  WeightsPlan diff_layer, diff_iter;  // the weight gradients (backward)
  size_t workspace_bytes = 0;
};

// The cached forward (OpKind::rnn_fwd; training keeps a workspace) or backward (rnn_bwd) entry
// for g; null when oneDNN cannot do it.
RnnEntry* lookup(OpKind kind, const Geometry& g, bool training);

bool is_f32(const Tensor* t);
// n bytes from the caching allocator.
Tensor bytes(size_t n);
// The weights in the primitive's layout: w itself, or a reordered copy held in scratch.
void* weights_for(const WeightsPlan& plan, const Tensor& w, Tensor& scratch);
// oneDNN's bias: Keras's as it is, or for reset_after GRU [2, 3U] -> [b_z, b_r, b_h, b'_h].
Tensor primitive_bias(const Geometry& g, const Tensor* bias);
// The primitive's bias gradient db (oneDNN's layout) as Keras's, into dbias.
void store_bias_grad(const Geometry& g, const Tensor& db, Tensor& dbias);

// Masked float32 batches, one T = 1 primitive per step (rnn_masked.cpp). false: oneDNN cannot
// run this case (the caller runs the reference kernel); backward also when the workspace is not
// masked_forward's.
bool masked_forward(const RnnArgs& in, const RnnParams& p, Tensor& y, Tensor& h_n, Tensor* c_n,
                    Tensor* workspace);
bool masked_backward(const RnnArgs& in, const RnnParams& p, const RnnResults& out, const Tensor& dy,
                     const Tensor& dh_n, const Tensor* dc_n, const RnnGrads& grads);

}  // namespace osprey::cpu::rnn_detail
