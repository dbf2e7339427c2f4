// Masked batches on oneDNN: the primitives have no per-sample mask, so a masked sequence runs as
// T calls of a one-step primitive (cached like the whole-sequence one), with Keras's rule applied
// between steps: a masked row keeps its state (h, c) and outputs the carried h (or 0). Backward
// runs the one-step backward primitive in reverse; the gradient of a masked row's state skips
// the step (it is fed to the primitive as 0, so the primitive adds nothing for that row) and the
// weight gradients accumulate across the calls, as oneDNN's RNN backward adds into them.
// Slower than one whole-sequence call (no GEMM over all steps of the input), far faster than the
// reference loops. The workspace holds every step's oneDNN workspace, the masked states and the
// primitive's own outputs (Layout below).
#include <cstring>
#include <vector>

#include "osprey/tensor/cpu/rnn_primitive.h"

namespace osprey::cpu::rnn_detail {

namespace {

// Byte offsets in the workspace: T oneDNN workspaces, then float32 [T + 1, B, U] masked states
// h (and c for lstm), then the primitive's [T, B, U] outputs hn (and cn) of each step.
struct Layout {
  size_t ws_step = 0, h = 0, c = 0, hn = 0, cn = 0, total = 0;
  Layout(const Geometry& g, size_t ws_bytes) {
    const auto steps = static_cast<size_t>(g.steps);
    const size_t state = static_cast<size_t>(g.batch * g.units) * sizeof(float);
    const size_t cells = g.lstm() ? 1 : 0;
    ws_step = (ws_bytes + 63) / 64 * 64;
    h = steps * ws_step;
    c = h + (steps + 1) * state;
    hn = c + cells * (steps + 1) * state;
    cn = hn + steps * state;
    total = cn + cells * steps * state;
  }
};

Geometry one_step(Geometry g) {
  g.steps = 1;
  return g;
}

float* at(void* base, size_t offset) {
  return reinterpret_cast<float*>(static_cast<char*>(base) + offset);
}

}  // namespace

bool masked_forward(const RnnArgs& in, const RnnParams& p, Tensor& y, Tensor& h_n, Tensor* c_n,
                    Tensor* workspace) {
  const Geometry g = geometry_of(in, p);
  const bool training = workspace != nullptr;
  RnnEntry* e = lookup(OpKind::rnn_fwd, one_step(g), training);
  if (e == nullptr) return false;
  const int64_t B = g.batch, T = g.steps, U = g.units;
  const auto state = static_cast<size_t>(B * U);
  const Layout L(g, e->workspace_bytes);
  Tensor buf = bytes(L.total);
  void* base = buf.raw_data();
  float *H = at(base, L.h), *C = at(base, L.c), *HN = at(base, L.hn), *CN = at(base, L.cn);
  std::memcpy(H, in.h0->contiguous().raw_data(), state * sizeof(float));
  if (g.lstm()) std::memcpy(C, in.c0->contiguous().raw_data(), state * sizeof(float));
  const std::vector<float> mask = in.mask->to_vector<float>();
  const Tensor k = in.kernel->contiguous(), r = in.recurrent_kernel->contiguous();
  const Tensor b = primitive_bias(g, in.bias);
  Tensor ks, rs;
  void* wl = weights_for(e->layer, k, ks);
  void* wi = weights_for(e->iter, r, rs);
  Tensor xt = Tensor::empty({B, g.features}), h_iter = Tensor::empty({B, U});
  float* yp = y.data<float>();
  for (int64_t t = 0; t < T; ++t) {
    xt.copy_(in.x->select(1, t));
    float *hp = H + t * state, *cp = C + t * state, *hn = HN + t * state, *cn = CN + t * state;
    void* ws = static_cast<char*>(base) + static_cast<size_t>(t) * L.ws_step;
    void* const x_ = xt.raw_data();
    void* const hi = h_iter.raw_data();
    if (g.lstm() && training) {
      e->prim->execute({x_, hp, cp, wl, wi, b.raw_data(), hn, hi, cn, ws});
    } else if (g.lstm()) {
      e->prim->execute({x_, hp, cp, wl, wi, b.raw_data(), hn, hi, cn});
    } else if (training) {
      e->prim->execute({x_, hp, wl, wi, b.raw_data(), hn, hi, ws});
    } else {
      e->prim->execute({x_, hp, wl, wi, b.raw_data(), hn, hi});
    }
    for (int64_t row = 0; row < B; ++row) {
      const bool keep = mask[static_cast<size_t>(row * T + t)] != 0.0f;
      const int64_t o = row * U;
      float* h_next = hp + state + o;
      float* out = yp + (row * T + t) * U;
      for (int64_t u = 0; u < U; ++u) {
        h_next[u] = keep ? hn[o + u] : hp[o + u];
        out[u] = !keep && p.zero_output_for_mask ? 0.0f : h_next[u];
      }
      if (g.lstm()) {
        for (int64_t u = 0; u < U; ++u) cp[state + o + u] = keep ? cn[o + u] : cp[o + u];
      }
    }
  }
  std::memcpy(h_n.raw_data(), H + T * state, state * sizeof(float));
  if (g.lstm()) std::memcpy(c_n->raw_data(), C + T * state, state * sizeof(float));
  if (training) *workspace = buf;
  return true;
}

bool masked_backward(const RnnArgs& in, const RnnParams& p, const RnnResults& out, const Tensor& dy,
                     const Tensor& dh_n, const Tensor* dc_n, const RnnGrads& grads) {
  if (out.workspace == nullptr || !out.workspace->defined() ||
      out.workspace->dtype() != DType::uint8) {
    return false;
  }
  const Geometry g = geometry_of(in, p);
  RnnEntry* f = lookup(OpKind::rnn_fwd, one_step(g), true);
  RnnEntry* e = f != nullptr ? lookup(OpKind::rnn_bwd, one_step(g), true) : nullptr;
  if (e == nullptr) return false;
  const Layout L(g, f->workspace_bytes);
  if (out.workspace->nbytes() != L.total || e->workspace_bytes > L.ws_step) return false;
  const int64_t B = g.batch, T = g.steps, I = g.features, U = g.units;
  const auto state = static_cast<size_t>(B * U);
  void* base = out.workspace->raw_data();
  float *H = at(base, L.h), *C = at(base, L.c), *HN = at(base, L.hn), *CN = at(base, L.cn);
  const std::vector<float> mask = in.mask->to_vector<float>();
  const Tensor k = in.kernel->contiguous(), r = in.recurrent_kernel->contiguous();
  const Tensor b = primitive_bias(g, in.bias);
  Tensor ks, rs;
  void* wl = weights_for(e->layer, k, ks);
  void* wi = weights_for(e->iter, r, rs);
  // The primitive adds into the weight and bias gradients: zero once, accumulate over the steps.
  Tensor dwl = e->diff_layer.reorder ? bytes(e->diff_layer.bytes) : *grads.dkernel;
  Tensor dwi = e->diff_iter.reorder ? bytes(e->diff_iter.bytes) : *grads.drecurrent_kernel;
  std::memset(dwl.raw_data(), 0, dwl.nbytes());
  std::memset(dwi.raw_data(), 0, dwi.nbytes());
  Tensor db = Tensor::empty({g.bias_gates() * U});
  std::memset(db.raw_data(), 0, db.nbytes());
  std::vector<float> gh = dh_n.to_vector<float>();
  std::vector<float> gc = dc_n != nullptr ? dc_n->to_vector<float>() : std::vector<float>(state);
  const Tensor dyc = dy.contiguous();
  const float* dyp = dyc.data<float>();
  Tensor xt = Tensor::empty({B, I}), layer0 = Tensor::empty({B, U});
  std::memset(layer0.raw_data(), 0, layer0.nbytes());
  Tensor gi = Tensor::empty({B, U}), gic = Tensor::empty({B, U}), dxt = Tensor::empty({B, I});
  Tensor dhp = Tensor::empty({B, U}), dcp = Tensor::empty({B, U});
  float *gip = gi.data<float>(), *gicp = gic.data<float>(), *dhpp = dhp.data<float>();
  float* dcpp = dcp.data<float>();
  float* dx = grads.dx->data<float>();
  for (int64_t t = T - 1; t >= 0; --t) {
    for (int64_t row = 0; row < B; ++row) {
      const bool keep = mask[static_cast<size_t>(row * T + t)] != 0.0f;
      const bool out_counts = keep || !p.zero_output_for_mask;
      for (int64_t u = 0; u < U; ++u) {
        const auto j = static_cast<size_t>(row * U + u);
        if (out_counts) gh[j] += dyp[(row * T + t) * U + u];
        gip[j] = keep ? gh[j] : 0.0f;
        gicp[j] = keep ? gc[j] : 0.0f;
      }
    }
    xt.copy_(in.x->select(1, t));
    float *hp = H + t * state, *cp = C + t * state, *hn = HN + t * state, *cn = CN + t * state;
    void* ws = static_cast<char*>(base) + static_cast<size_t>(t) * L.ws_step;
    if (g.lstm()) {
      e->prim->execute({xt.raw_data(), hp, cp, wl, wi, b.raw_data(), hn, hn, cn, ws,
                        layer0.raw_data(), gip, gicp, dxt.raw_data(), dhpp, dcpp, dwl.raw_data(),
                        dwi.raw_data(), db.raw_data()});
    } else {
      e->prim->execute({xt.raw_data(), hp, wl, wi, b.raw_data(), hn, hn, ws, layer0.raw_data(), gip,
                        dxt.raw_data(), dhpp, dwl.raw_data(), dwi.raw_data(), db.raw_data()});
    }
    const float* dxs = dxt.data<float>();
    for (int64_t row = 0; row < B; ++row) {
      std::memcpy(dx + (row * T + t) * I, dxs + row * I, sizeof(float) * static_cast<size_t>(I));
      const bool keep = mask[static_cast<size_t>(row * T + t)] != 0.0f;
      for (int64_t u = 0; u < U; ++u) {
        const auto j = static_cast<size_t>(row * U + u);
        // A masked row got 0 from the primitive; its gradient passes to the previous step.
        gh[j] = keep ? dhpp[j] : gh[j];
        if (g.lstm()) gc[j] = keep ? dcpp[j] : gc[j];
      }
    }
  }
  std::memcpy(grads.dh0->raw_data(), gh.data(), state * sizeof(float));
  if (g.lstm()) std::memcpy(grads.dc0->raw_data(), gc.data(), state * sizeof(float));
  if (e->diff_layer.reorder)
    e->diff_layer.reorder->execute({dwl.raw_data(), grads.dkernel->raw_data()});
  if (e->diff_iter.reorder)
    e->diff_iter.reorder->execute({dwi.raw_data(), grads.drecurrent_kernel->raw_data()});
  if (grads.dbias != nullptr) store_bias_grad(g, db, *grads.dbias);
  return true;
}

}  // namespace osprey::cpu::rnn_detail
