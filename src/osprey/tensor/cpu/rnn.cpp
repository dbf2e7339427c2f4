// Fast recurrent layers on oneDNN's RNN primitives (lstm, gru, lbr_gru, vanilla_rnn; forward and
// backward, one layer, left to right), created once per shape and cached. Keras's layouts map
// onto oneDNN's almost as they are: kernel [features, G * units] with gate blocks is oneDNN's
// ldigo {1, 1, features, G, units}, and the gate orders agree (lstm i, f, c, o; gru z = oneDNN's
// u, r, h = o). Keras's reset_after GRU is oneDNN's linear-before-reset GRU, whose bias has a
// fourth gate: [b_z, b_r, b_h input, b_h recurrent], with the input and recurrent biases of z and
// r summed. The primitive picks its own weight layouts; cached reorders convert per call.
// bfloat16 and float16 run the float32 kernels on float32 copies; masks and float64 go to the
// reference kernel. Training keeps oneDNN's workspace
// (uint8) for backward; rnn_backward takes this path exactly when it finds one.
#include <cstring>
#include <memory>
#include <vector>

#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

using tag = dnnl::memory::format_tag;
using dnnl::prop_kind;
using dnnl::rnn_direction;

struct Geometry {
  RnnCell cell;
  Activation activation;
  int64_t batch, steps, features, units, gates;
  bool lstm() const { return cell == RnnCell::lstm; }
  int64_t bias_gates() const { return cell == RnnCell::gru_reset_after ? 4 : gates; }
};

Geometry geometry_of(const RnnArgs& in, const RnnParams& p) {
  const int64_t units = in.recurrent_kernel->size(0);
  return {p.cell,
          p.activation,
          in.x->size(0),
          in.x->size(1),
          in.x->size(2),
          units,
          in.recurrent_kernel->size(1) / units};
}

// oneDNN's descriptors of one layer's tensors.
struct Descs {
  dnnl::memory::desc src_layer, src_iter, weights_layer, weights_iter, bias, dst_layer, dst_iter;
  explicit Descs(const Geometry& g) {
    const auto f32 = dnnl_dt::f32;
    src_layer = {{g.steps, g.batch, g.features}, f32, tag::ntc};
    src_iter = {{1, 1, g.batch, g.units}, f32, tag::ldnc};
    weights_layer = {{1, 1, g.features, g.gates, g.units}, f32, tag::ldigo};
    weights_iter = {{1, 1, g.units, g.gates, g.units}, f32, tag::ldigo};
    bias = {{1, 1, g.bias_gates(), g.units}, f32, tag::ldgo};
    dst_layer = {{g.steps, g.batch, g.units}, f32, tag::ntc};
    dst_iter = src_iter;
  }
};

dnnl::memory::desc any_of(const dnnl::memory::desc& md) {
  return {md.dims(), md.data_type(), tag::any};
}

dnnl::algorithm activation_of(const Geometry& g) {
  return g.activation == Activation::relu ? dnnl::algorithm::eltwise_relu
                                          : dnnl::algorithm::eltwise_tanh;
}

constexpr auto kDir = rnn_direction::unidirectional_left2right;

// Forward descriptors per cell (the backward ones take the training forward as their hint).
dnnl::lstm_forward::desc lstm_fwd(prop_kind prop, const Descs& d) {
  return {prop,
          kDir,
          d.src_layer,
          d.src_iter,
          d.src_iter,
          any_of(d.weights_layer),
          any_of(d.weights_iter),
          d.bias,
          d.dst_layer,
          d.dst_iter,
          d.dst_iter};
}
template <class Fwd>
typename Fwd::desc gru_fwd(prop_kind prop, const Descs& d) {
  return {
      prop,   kDir,        d.src_layer, d.src_iter, any_of(d.weights_layer), any_of(d.weights_iter),
      d.bias, d.dst_layer, d.dst_iter};
}
dnnl::vanilla_rnn_forward::desc rnn_fwd(prop_kind prop, const Geometry& g, const Descs& d) {
  return {prop,
          activation_of(g),
          kDir,
          d.src_layer,
          d.src_iter,
          any_of(d.weights_layer),
          any_of(d.weights_iter),
          d.bias,
          d.dst_layer,
          d.dst_iter};
}

dnnl::primitive_desc forward_pd(const Geometry& g, const Descs& d, prop_kind prop) {
  switch (g.cell) {
    case RnnCell::lstm:
      return dnnl::lstm_forward::primitive_desc(lstm_fwd(prop, d), base_attr(), engine());
    case RnnCell::gru:
      return dnnl::gru_forward::primitive_desc(gru_fwd<dnnl::gru_forward>(prop, d), base_attr(),
                                               engine());
    case RnnCell::gru_reset_after:
      return dnnl::lbr_gru_forward::primitive_desc(gru_fwd<dnnl::lbr_gru_forward>(prop, d),
                                                   base_attr(), engine());
    case RnnCell::simple_rnn:
      break;
  }
  return dnnl::vanilla_rnn_forward::primitive_desc(rnn_fwd(prop, g, d), base_attr(), engine());
}

// GRU and linear-before-reset GRU share the backward signature.
template <class Fwd, class Bwd>
dnnl::primitive_desc gru_backward_pd(const Descs& d) {
  const typename Fwd::primitive_desc hint(gru_fwd<Fwd>(prop_kind::forward_training, d), base_attr(),
                                          engine());
  const auto wl = any_of(d.weights_layer), wi = any_of(d.weights_iter);
  return typename Bwd::primitive_desc(
      typename Bwd::desc(prop_kind::backward, kDir, d.src_layer, d.src_iter, wl, wi, d.bias,
                         d.dst_layer, d.dst_iter, d.src_layer, d.src_iter, wl, wi, d.bias,
                         d.dst_layer, d.dst_iter),
      base_attr(), engine(), hint);
}

dnnl::primitive_desc backward_pd(const Geometry& g, const Descs& d) {
  const auto wl = any_of(d.weights_layer), wi = any_of(d.weights_iter);
  const auto train = prop_kind::forward_training, bwd = prop_kind::backward;
  switch (g.cell) {
    case RnnCell::lstm: {
      const dnnl::lstm_forward::primitive_desc hint(lstm_fwd(train, d), base_attr(), engine());
      return dnnl::lstm_backward::primitive_desc(
          dnnl::lstm_backward::desc(bwd, kDir, d.src_layer, d.src_iter, d.src_iter, wl, wi, d.bias,
                                    d.dst_layer, d.dst_iter, d.dst_iter, d.src_layer, d.src_iter,
                                    d.src_iter, wl, wi, d.bias, d.dst_layer, d.dst_iter,
                                    d.dst_iter),
          base_attr(), engine(), hint);
    }
    case RnnCell::gru:
      return gru_backward_pd<dnnl::gru_forward, dnnl::gru_backward>(d);
    case RnnCell::gru_reset_after:
      return gru_backward_pd<dnnl::lbr_gru_forward, dnnl::lbr_gru_backward>(d);
    case RnnCell::simple_rnn:
      break;
  }
  const dnnl::vanilla_rnn_forward::primitive_desc hint(rnn_fwd(train, g, d), base_attr(), engine());
  return dnnl::vanilla_rnn_backward::primitive_desc(
      dnnl::vanilla_rnn_backward::desc(bwd, activation_of(g), kDir, d.src_layer, d.src_iter, wl, wi,
                                       d.bias, d.dst_layer, d.dst_iter, d.src_layer, d.src_iter, wl,
                                       wi, d.bias, d.dst_layer, d.dst_iter),
      base_attr(), engine(), hint);
}

// A weight tensor between our ldigo layout and the primitive's: the reorder (null when the
// layouts agree) and the bytes of the primitive's copy.
struct WeightsPlan {
  std::unique_ptr<DnnlOp> reorder;
  size_t bytes = 0;
};

WeightsPlan plan_weights(const dnnl::memory::desc& user, const dnnl::memory::desc& prim,
                         bool to_primitive) {
  WeightsPlan w;
  if (user == prim) return w;
  const auto& from = to_primitive ? user : prim;
  const auto& to = to_primitive ? prim : user;
  const dnnl::reorder::primitive_desc pd(engine(), from, engine(), to, base_attr());
  w.reorder = std::make_unique<DnnlOp>(
      pd, std::vector<DnnlOp::Arg>{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  w.bytes = prim.get_size();
  return w;
}

struct RnnEntry : CacheEntry {
  std::unique_ptr<DnnlOp> prim;
  WeightsPlan layer, iter;            // the weights (forward and backward)
  WeightsPlan diff_layer, diff_iter;  // the weight gradients (backward)
  size_t workspace_bytes = 0;
};

// Arguments in the order execute() receives their pointers.
std::vector<DnnlOp::Arg> forward_args(const Geometry& g, const Descs& d,
                                      const dnnl::primitive_desc& pd, bool training) {
  std::vector<DnnlOp::Arg> a{{DNNL_ARG_SRC_LAYER, d.src_layer}, {DNNL_ARG_SRC_ITER, d.src_iter}};
  if (g.lstm()) a.push_back({DNNL_ARG_SRC_ITER_C, d.src_iter});
  a.push_back({DNNL_ARG_WEIGHTS_LAYER, pd.weights_desc(0)});
  a.push_back({DNNL_ARG_WEIGHTS_ITER, pd.weights_desc(1)});
  a.push_back({DNNL_ARG_BIAS, d.bias});
  a.push_back({DNNL_ARG_DST_LAYER, d.dst_layer});
  a.push_back({DNNL_ARG_DST_ITER, d.dst_iter});
  if (g.lstm()) a.push_back({DNNL_ARG_DST_ITER_C, d.dst_iter});
  if (training) a.push_back({DNNL_ARG_WORKSPACE, pd.workspace_desc()});
  return a;
}

std::unique_ptr<RnnEntry> make_forward(const Geometry& g, bool training) {
  const Descs d(g);
  const auto pd =
      forward_pd(g, d, training ? prop_kind::forward_training : prop_kind::forward_inference);
  auto e = std::make_unique<RnnEntry>();
  e->prim = std::make_unique<DnnlOp>(pd, forward_args(g, d, pd, training));
  e->layer = plan_weights(d.weights_layer, pd.weights_desc(0), true);
  e->iter = plan_weights(d.weights_iter, pd.weights_desc(1), true);
  if (training) e->workspace_bytes = pd.workspace_desc().get_size();
  return e;
}

std::unique_ptr<RnnEntry> make_backward(const Geometry& g) {
  const Descs d(g);
  const auto pd = backward_pd(g, d);
  std::vector<DnnlOp::Arg> a = forward_args(g, d, pd, true);
  // forward_args queried weights_desc(0/1) of pd: on a backward pd those are its weights too.
  a.push_back({DNNL_ARG_DIFF_DST_LAYER, d.dst_layer});
  a.push_back({DNNL_ARG_DIFF_DST_ITER, d.dst_iter});
  if (g.lstm()) a.push_back({DNNL_ARG_DIFF_DST_ITER_C, d.dst_iter});
  a.push_back({DNNL_ARG_DIFF_SRC_LAYER, d.src_layer});
  a.push_back({DNNL_ARG_DIFF_SRC_ITER, d.src_iter});
  if (g.lstm()) a.push_back({DNNL_ARG_DIFF_SRC_ITER_C, d.src_iter});
  a.push_back({DNNL_ARG_DIFF_WEIGHTS_LAYER, pd.diff_weights_desc(0)});
  a.push_back({DNNL_ARG_DIFF_WEIGHTS_ITER, pd.diff_weights_desc(1)});
  a.push_back({DNNL_ARG_DIFF_BIAS, d.bias});
  auto e = std::make_unique<RnnEntry>();
  e->prim = std::make_unique<DnnlOp>(pd, std::move(a));
  e->layer = plan_weights(d.weights_layer, pd.weights_desc(0), true);
  e->iter = plan_weights(d.weights_iter, pd.weights_desc(1), true);
  e->diff_layer = plan_weights(d.weights_layer, pd.diff_weights_desc(0), false);
  e->diff_iter = plan_weights(d.weights_iter, pd.diff_weights_desc(1), false);
  e->workspace_bytes = pd.workspace_desc().get_size();
  return e;
}

RnnEntry* lookup(OpKind kind, const Geometry& g, bool training) {
  PrimitiveKey key(kind);
  for (int64_t v : {static_cast<int64_t>(g.cell), static_cast<int64_t>(g.activation), g.batch,
                    g.steps, g.features, g.units, static_cast<int64_t>(training)}) {
    key.add(v);
  }
  return primitive_cache().get<RnnEntry>(key, [&]() -> std::unique_ptr<RnnEntry> {
    try {
      return kind == OpKind::rnn_fwd ? make_forward(g, training) : make_backward(g);
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
}

bool is_f32(const Tensor* t) { return t == nullptr || t->dtype() == DType::float32; }

// The cases the primitives take: float32 throughout, no mask, a non-empty batch.
bool fast_case(const RnnArgs& in) {
  return in.mask == nullptr && in.x->size(0) > 0 && is_f32(in.x) && is_f32(in.h0) &&
         is_f32(in.c0) && is_f32(in.kernel) && is_f32(in.recurrent_kernel) && is_f32(in.bias);
}

Tensor bytes(size_t n) {
  return Tensor::empty({static_cast<int64_t>(n)}, {DType::uint8, Device::cpu(0)});
}

// The weights in the primitive's layout: w itself, or a reordered copy held in scratch.
void* weights_for(const WeightsPlan& plan, const Tensor& w, Tensor& scratch) {
  if (!plan.reorder) return w.raw_data();
  scratch = bytes(plan.bytes);
  plan.reorder->execute({w.raw_data(), scratch.raw_data()});
  return scratch.raw_data();
}

// oneDNN's bias: Keras's as it is, or for reset_after GRU [2, 3U] -> [b_z, b_r, b_h, b'_h].
Tensor primitive_bias(const Geometry& g, const Tensor* bias) {
  const int64_t u = g.units;
  Tensor b = zeros({g.bias_gates() * u});
  if (bias == nullptr) return b;
  const Tensor src = bias->contiguous();
  const float* s = src.data<float>();
  float* o = b.data<float>();
  if (g.cell != RnnCell::gru_reset_after) {
    std::memcpy(o, s, sizeof(float) * static_cast<size_t>(g.gates * u));
    return b;
  }
  for (int64_t j = 0; j < 2 * u; ++j) o[j] = s[j] + s[3 * u + j];
  for (int64_t j = 0; j < u; ++j) o[2 * u + j] = s[2 * u + j], o[3 * u + j] = s[5 * u + j];
  return b;
}

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
  if (!fast_case(in)) return reference::rnn_forward(in, p, y, h_n, c_n, workspace);
  const Geometry g = geometry_of(in, p);
  const bool training = workspace != nullptr;
  RnnEntry* e = lookup(OpKind::rnn_fwd, g, training);
  if (e == nullptr) return reference::rnn_forward(in, p, y, h_n, c_n, workspace);
  const Tensor x = in.x->contiguous(), h0 = in.h0->contiguous();
  const Tensor c0 = g.lstm() ? in.c0->contiguous() : Tensor();
  const Tensor k = in.kernel->contiguous(), r = in.recurrent_kernel->contiguous();
  const Tensor b = primitive_bias(g, in.bias);
  Tensor ks, rs;
  void* wl = weights_for(e->layer, k, ks);
  void* wi = weights_for(e->iter, r, rs);
  if (training) *workspace = bytes(e->workspace_bytes);
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
  const bool have_workspace = out.workspace != nullptr && out.workspace->defined() &&
                              out.workspace->dtype() == DType::uint8;
  RnnEntry* e = nullptr;
  const Geometry g = geometry_of(in, p);
  if (have_workspace && fast_case(in) && is_f32(&dy)) e = lookup(OpKind::rnn_bwd, g, true);
  if (e == nullptr || e->workspace_bytes != out.workspace->nbytes()) {
    return reference::rnn_backward(in, p, out, dy, dh_n, dc_n, grads);
  }
  const Tensor x = in.x->contiguous(), h0 = in.h0->contiguous();
  const Tensor c0 = g.lstm() ? in.c0->contiguous() : Tensor();
  const Tensor k = in.kernel->contiguous(), r = in.recurrent_kernel->contiguous();
  const Tensor b = primitive_bias(g, in.bias);
  const Tensor gy = dy.contiguous(), gh = dh_n.contiguous();
  const Tensor gc = g.lstm() ? dc_n->contiguous() : Tensor();
  Tensor ks, rs;
  void* wl = weights_for(e->layer, k, ks);
  void* wi = weights_for(e->iter, r, rs);
  // The primitive adds into the weight and bias gradients: start them at zero.
  Tensor dwl = e->diff_layer.reorder ? bytes(e->diff_layer.bytes) : *grads.dkernel;
  Tensor dwi = e->diff_iter.reorder ? bytes(e->diff_iter.bytes) : *grads.drecurrent_kernel;
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
  if (grads.dbias == nullptr) return;
  if (g.cell != RnnCell::gru_reset_after) {
    grads.dbias->copy_(db.view(grads.dbias->shape()));
    return;
  }
  // oneDNN's [d_z, d_r, d_h, d'_h] -> Keras's [2, 3U]: z and r were summed, so both rows get them.
  const int64_t u = g.units;
  Tensor d = Tensor::empty({2, 3 * u});
  const float* s = db.data<float>();
  float* o = d.data<float>();
  for (int64_t j = 0; j < 2 * u; ++j) o[j] = s[j], o[3 * u + j] = s[j];
  for (int64_t j = 0; j < u; ++j) o[2 * u + j] = s[2 * u + j], o[5 * u + j] = s[3 * u + j];
  grads.dbias->copy_(d);
}

}  // namespace osprey::cpu
