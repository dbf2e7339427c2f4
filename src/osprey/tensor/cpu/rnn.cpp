// Fast recurrent layers on oneDNN's RNN primitives (lstm, gru, lbr_gru, vanilla_rnn; forward and
// backward, one layer, left to right), created once per shape and cached. Keras's layouts map
// onto oneDNN's almost as they are: kernel [features, G * units] with gate blocks is oneDNN's
// ldigo {1, 1, features, G, units}, and the gate orders agree (lstm i, f, c, o; gru z = oneDNN's
// u, r, h = o). Keras's reset_after GRU is oneDNN's linear-before-reset GRU, whose bias has a
// fourth gate: [b_z, b_r, b_h input, b_h recurrent], with the input and recurrent biases of z and
// r summed. The primitive picks its own weight layouts; cached reorders convert per call.
// Masked float32 batches run one primitive step at a time (rnn_masked.cpp); bfloat16 and float16
// run the float32 kernels on float32 copies; float64 goes to the reference kernel. Training keeps
// oneDNN's workspace (uint8) for backward; rnn_backward takes a oneDNN path exactly when it finds
// one of that path's size, and otherwise the reference (which recomputes the forward).
#include <cstring>
#include <vector>

#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/cpu/rnn_primitive.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

// The cases the primitives take: float32 throughout and a non-empty batch.
bool f32_case(const RnnArgs& in) {
  return in.x->size(0) > 0 && rnn_detail::is_f32(in.x) && rnn_detail::is_f32(in.h0) &&
         rnn_detail::is_f32(in.c0) && rnn_detail::is_f32(in.kernel) &&
         rnn_detail::is_f32(in.recurrent_kernel) && rnn_detail::is_f32(in.bias);
}
// ... over the whole sequence at once: no mask.
bool fast_case(const RnnArgs& in) { return in.mask == nullptr && f32_case(in); }

// bfloat16 and float16 storage (no mask): the float32 kernels on float32 copies, each result
// rounded back to the 16-bit type (mixed precision's numerics). Unlike the other kernels this is
// done even where the CPU has AVX512_BF16: oneDNN's bf16 RNNs want float32 biases and states
// beside bf16 data, a second set of layouts not written yet; the copies cost O(B T (I + U)).
bool half_case(const RnnArgs& in) {
  if (in.mask != nullptr) return false;
  const DType d = in.x->dtype();
  if (d != DType::bfloat16 && d != DType::float16) return false;
  for (const Tensor* t : {in.h0, in.c0, in.kernel, in.recurrent_kernel, in.bias}) {
    if (t != nullptr && t->dtype() != d) return false;
  }
  return true;
}

// Float32 copies of the inputs, and RnnArgs pointing at them.
struct Float32Args {
  Tensor x, h0, c0, kernel, recurrent, bias;
  explicit Float32Args(const RnnArgs& in)
      : x(float32_copy(in.x)),
        h0(float32_copy(in.h0)),
        c0(float32_copy(in.c0)),
        kernel(float32_copy(in.kernel)),
        recurrent(float32_copy(in.recurrent_kernel)),
        bias(float32_copy(in.bias)) {}
  RnnArgs args() const {
    return {.x = &x,
            .h0 = &h0,
            .c0 = c0.defined() ? &c0 : nullptr,
            .kernel = &kernel,
            .recurrent_kernel = &recurrent,
            .bias = bias.defined() ? &bias : nullptr,
            .mask = nullptr};
  }
};

void half_forward(const RnnArgs& in, const RnnParams& p, Tensor& y, Tensor& h_n, Tensor* c_n,
                  Tensor* workspace) {
  const Float32Args a(in);
  Tensor y32 = float32_like(y), h32 = float32_like(h_n);
  Tensor c32 = c_n != nullptr ? float32_like(*c_n) : Tensor();
  rnn_forward(a.args(), p, y32, h32, c_n != nullptr ? &c32 : nullptr, workspace);
  copy(y32, y);
  copy(h32, h_n);
  if (c_n != nullptr) copy(c32, *c_n);
}

void half_backward(const RnnArgs& in, const RnnParams& p, const RnnResults& out, const Tensor& dy,
                   const Tensor& dh_n, const Tensor* dc_n, const RnnGrads& g) {
  const Float32Args a(in);
  const Tensor y = float32_copy(out.y), h = float32_copy(out.h_n), c = float32_copy(out.c_n);
  const Tensor gy = float32_copy(&dy), gh = float32_copy(&dh_n), gc = float32_copy(dc_n);
  const RnnResults o{
      .y = &y, .h_n = &h, .c_n = c.defined() ? &c : nullptr, .workspace = out.workspace};
  Tensor dx = float32_like(*g.dx), dh0 = float32_like(*g.dh0), dk = float32_like(*g.dkernel);
  Tensor dr = float32_like(*g.drecurrent_kernel);
  Tensor dc0 = g.dc0 != nullptr ? float32_like(*g.dc0) : Tensor();
  Tensor db = g.dbias != nullptr ? float32_like(*g.dbias) : Tensor();
  rnn_backward(a.args(), p, o, gy, gh, gc.defined() ? &gc : nullptr,
               {.dx = &dx,
                .dh0 = &dh0,
                .dc0 = g.dc0 != nullptr ? &dc0 : nullptr,
                .dkernel = &dk,
                .drecurrent_kernel = &dr,
                .dbias = g.dbias != nullptr ? &db : nullptr});
  copy(dx, *g.dx);
  copy(dh0, *g.dh0);
  if (g.dc0 != nullptr) copy(dc0, *g.dc0);
  copy(dk, *g.dkernel);
  copy(dr, *g.drecurrent_kernel);
  if (g.dbias != nullptr) copy(db, *g.dbias);
}

}  // namespace

void rnn_forward(const RnnArgs& in, const RnnParams& p, Tensor& y, Tensor& h_n, Tensor* c_n,
                 Tensor* workspace) {
  if (half_case(in)) return half_forward(in, p, y, h_n, c_n, workspace);
  if (in.mask != nullptr && f32_case(in) &&
      rnn_detail::masked_forward(in, p, y, h_n, c_n, workspace))
    return;
  if (!fast_case(in)) return reference::rnn_forward(in, p, y, h_n, c_n, workspace);
  const rnn_detail::Geometry g = rnn_detail::geometry_of(in, p);
  const bool training = workspace != nullptr;
  rnn_detail::RnnEntry* e = rnn_detail::lookup(OpKind::rnn_fwd, g, training);
  if (e == nullptr) return reference::rnn_forward(in, p, y, h_n, c_n, workspace);
  const Tensor x = in.x->contiguous(), h0 = in.h0->contiguous();
  const Tensor c0 = g.lstm() ? in.c0->contiguous() : Tensor();
  const Tensor k = in.kernel->contiguous(), r = in.recurrent_kernel->contiguous();
  const Tensor b = rnn_detail::primitive_bias(g, in.bias);
  Tensor ks, rs;
  void* wl = rnn_detail::weights_for(e->layer, k, ks);
  void* wi = rnn_detail::weights_for(e->iter, r, rs);
  if (training) *workspace = rnn_detail::bytes(e->workspace_bytes);
  void* ws = training ? workspace->raw_data() : nullptr;
  if (g.lstm() && training) {
    e->prim->execute({x.raw_data(), h0.raw_data(), c0.raw_data(), wl, wi, b.raw_data(),
                      y.raw_data(), h_n.raw_data(), c_n->raw_data(), ws});
  } else if (g.lstm()) {
    e->prim->execute({x.raw_data(), h0.raw_data(), c0.raw_data(), wl, wi, b.raw_data(),
                      y.raw_data(), h_n.raw_data(), c_n->raw_data()});
  } else if (training) {
    e->prim->execute(
        {x.raw_data(), h0.raw_data(), wl, wi, b.raw_data(), y.raw_data(), h_n.raw_data(), ws});
  } else {
    e->prim->execute(
        {x.raw_data(), h0.raw_data(), wl, wi, b.raw_data(), y.raw_data(), h_n.raw_data()});
  }
}

void rnn_backward(const RnnArgs& in, const RnnParams& p, const RnnResults& out, const Tensor& dy,
                  const Tensor& dh_n, const Tensor* dc_n, const RnnGrads& grads) {
  if (half_case(in)) return half_backward(in, p, out, dy, dh_n, dc_n, grads);
  if (in.mask != nullptr && f32_case(in) && rnn_detail::is_f32(&dy) &&
      rnn_detail::masked_backward(in, p, out, dy, dh_n, dc_n, grads)) {
    return;
  }
  const bool have_workspace = out.workspace != nullptr && out.workspace->defined() &&
                              out.workspace->dtype() == DType::uint8;
  rnn_detail::RnnEntry* e = nullptr;
  const rnn_detail::Geometry g = rnn_detail::geometry_of(in, p);
  if (have_workspace && fast_case(in) && rnn_detail::is_f32(&dy))
    e = rnn_detail::lookup(OpKind::rnn_bwd, g, true);
  if (e == nullptr || e->workspace_bytes != out.workspace->nbytes()) {
    return reference::rnn_backward(in, p, out, dy, dh_n, dc_n, grads);
  }
  const Tensor x = in.x->contiguous(), h0 = in.h0->contiguous();
  const Tensor c0 = g.lstm() ? in.c0->contiguous() : Tensor();
  const Tensor k = in.kernel->contiguous(), r = in.recurrent_kernel->contiguous();
  const Tensor b = rnn_detail::primitive_bias(g, in.bias);
  const Tensor gy = dy.contiguous(), gh = dh_n.contiguous();
  const Tensor gc = g.lstm() ? dc_n->contiguous() : Tensor();
  Tensor ks, rs;
  void* wl = rnn_detail::weights_for(e->layer, k, ks);
  void* wi = rnn_detail::weights_for(e->iter, r, rs);
  // The primitive adds into the weight and bias gradients: start them at zero.
  Tensor dwl = e->diff_layer.reorder ? rnn_detail::bytes(e->diff_layer.bytes) : *grads.dkernel;
  Tensor dwi =
      e->diff_iter.reorder ? rnn_detail::bytes(e->diff_iter.bytes) : *grads.drecurrent_kernel;
  std::memset(dwl.raw_data(), 0, dwl.nbytes());
  std::memset(dwi.raw_data(), 0, dwi.nbytes());
  Tensor db = zeros({g.bias_gates() * g.units});
  if (g.lstm()) {
    e->prim->execute({x.raw_data(), h0.raw_data(), c0.raw_data(), wl, wi, b.raw_data(),
                      out.y->raw_data(), out.h_n->raw_data(), out.c_n->raw_data(),
                      out.workspace->raw_data(), gy.raw_data(), gh.raw_data(), gc.raw_data(),
                      grads.dx->raw_data(), grads.dh0->raw_data(), grads.dc0->raw_data(),
                      dwl.raw_data(), dwi.raw_data(), db.raw_data()});
  } else {
    e->prim->execute({x.raw_data(), h0.raw_data(), wl, wi, b.raw_data(), out.y->raw_data(),
                      out.h_n->raw_data(), out.workspace->raw_data(), gy.raw_data(), gh.raw_data(),
                      grads.dx->raw_data(), grads.dh0->raw_data(), dwl.raw_data(), dwi.raw_data(),
                      db.raw_data()});
  }
  if (e->diff_layer.reorder)
    e->diff_layer.reorder->execute({dwl.raw_data(), grads.dkernel->raw_data()});
  if (e->diff_iter.reorder)
    e->diff_iter.reorder->execute({dwi.raw_data(), grads.drecurrent_kernel->raw_data()});
  if (grads.dbias != nullptr) rnn_detail::store_bias_grad(g, db, *grads.dbias);
}

}  // namespace osprey::cpu
