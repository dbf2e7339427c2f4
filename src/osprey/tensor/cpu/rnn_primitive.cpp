// The oneDNN RNN primitives (rnn_primitive.h): descriptors in Keras's layouts, creation of the
// forward and backward primitives with their weight reorders, and the cache lookup.
#include "osprey/tensor/cpu/rnn_primitive.h"

#include <cstring>
#include <memory>
#include <vector>

#include "osprey/tensor/factory.h"

namespace osprey::cpu::rnn_detail {

namespace {

using tag = dnnl::memory::format_tag;
using dnnl::prop_kind;
using dnnl::rnn_direction;

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

}  // namespace

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

Tensor bytes(size_t n) {
  return Tensor::empty({static_cast<int64_t>(n)}, {DType::uint8, Device::cpu(0)});
}

void* weights_for(const WeightsPlan& plan, const Tensor& w, Tensor& scratch) {
  if (!plan.reorder) return w.raw_data();
  scratch = bytes(plan.bytes);
  plan.reorder->execute({w.raw_data(), scratch.raw_data()});
  return scratch.raw_data();
}

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

void store_bias_grad(const Geometry& g, const Tensor& db, Tensor& dbias) {
  if (g.cell != RnnCell::gru_reset_after) {
    dbias.copy_(db.view(dbias.shape()));
    return;
  }
  // oneDNN's [d_z, d_r, d_h, d'_h] -> Keras's [2, 3U]: z and r were summed, so both rows get them.
  const int64_t u = g.units;
  Tensor d = Tensor::empty({2, 3 * u});
  const float* s = db.data<float>();
  float* o = d.data<float>();
  for (int64_t j = 0; j < 2 * u; ++j) o[j] = s[j], o[3 * u + j] = s[j];
  for (int64_t j = 0; j < u; ++j) o[2 * u + j] = s[2 * u + j], o[5 * u + j] = s[3 * u + j];
  dbias.copy_(d);
}

}  // namespace osprey::cpu::rnn_detail
