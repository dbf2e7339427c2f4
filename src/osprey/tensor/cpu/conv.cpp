// Fast 2-D convolution: oneDNN convolution forward, backward-data and backward-weights
// primitives on NHWC or NCHW data, created once per geometry. Our kernel layout is HWIO
// [kh, kw, in/groups, out]; it is described to oneDNN with strides (oihw, or goihw for groups),
// and by default the primitive picks its own (blocked) weight layout, into which a cached
// reorder primitive converts the kernel on each call: the blocked JIT kernels are faster than
// any kernel reading plain HWIO, and a 3x3x32x64 kernel reorders in microseconds.
// OSPREY_CONV_PLAIN_WEIGHTS=1 makes the primitive read HWIO directly (for measuring both).
#include <cstdlib>
#include <string_view>

#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

bool plain_weights_mode() {
  static const bool v = [] {
    const char* e = std::getenv("OSPREY_CONV_PLAIN_WEIGHTS");
    return e != nullptr && std::string_view(e) == "1";
  }();
  return v;
}

struct ConvEntry : CacheEntry {
  std::unique_ptr<DnnlOp> conv;
  // Between our HWIO kernel and the primitive's layout (to it for forward and backward-data,
  // from it for backward-weights); null when the primitive reads HWIO itself.
  std::unique_ptr<DnnlOp> reorder;
  size_t weights_bytes = 0;
  bool has_bias = false;
};

// Activation x (or y, dx, dy) as oneDNN's logical {N, C, H, W}.
dnnl::memory::desc data_md(const Tensor& t, bool channels_last) {
  return channels_last ? tensor_md(t, {0, 3, 1, 2}) : tensor_md(t);
}

// HWIO [kh, kw, I/g, O] as oneDNN's {O, I, kh, kw}, or {G, O/g, I/g, kh, kw} for groups.
dnnl::memory::desc user_weights_md(const Tensor& w, int64_t groups) {
  const Shape& s = w.shape();
  const Shape& st = w.strides();
  const dnnl_dt dt = to_dnnl(w.dtype());
  if (groups == 1) return make_md({s[3], s[2], s[0], s[1]}, dt, {st[3], st[2], st[0], st[1]});
  const int64_t og = s[3] / groups;
  return make_md({groups, og, s[2], s[0], s[1]}, dt, {st[3] * og, st[3], st[2], st[0], st[1]});
}

dnnl::memory::desc any_md(const dnnl::memory::desc& like) {
  return dnnl::memory::desc(like.dims(), like.data_type(), dnnl::memory::format_tag::any);
}

struct ConvDims {
  dnnl_dims strides, dilates, pad_l, pad_r;
  explicit ConvDims(const Conv2dParams& p)
      : strides{p.stride_h, p.stride_w},
        dilates{p.dilation_h - 1, p.dilation_w - 1},
        pad_l{p.pad_top, p.pad_left},
        pad_r{p.pad_bottom, p.pad_right} {}
};

void add_params(PrimitiveKey& k, const Conv2dParams& p) {
  for (int64_t v : {p.stride_h, p.stride_w, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right,
                    p.dilation_h, p.dilation_w, p.groups}) {
    k.add(v);
  }
  k.add((p.channels_last ? 1 : 0) | (plain_weights_mode() ? 2 : 0) |
        (static_cast<int64_t>(p.activation) << 2));
}

std::unique_ptr<DnnlOp> make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  dnnl::reorder::primitive_desc pd(engine(), from, engine(), to, base_attr());
  return std::make_unique<DnnlOp>(
      pd, std::vector<DnnlOp::Arg>{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

dnnl::convolution_forward::desc fwd_desc(const dnnl::memory::desc& x, const dnnl::memory::desc& w,
                                         const dnnl::memory::desc* b, const dnnl::memory::desc& y,
                                         const ConvDims& d) {
  using dnnl::algorithm;
  using dnnl::prop_kind;
  if (b != nullptr) {
    return {prop_kind::forward_training,
            algorithm::convolution_direct,
            x,
            w,
            *b,
            y,
            d.strides,
            d.dilates,
            d.pad_l,
            d.pad_r};
  }
  return {prop_kind::forward_training,
          algorithm::convolution_direct,
          x,
          w,
          y,
          d.strides,
          d.dilates,
          d.pad_l,
          d.pad_r};
}

bool usable(const DnnlOp& op) { return !op.is_reference_impl(); }

std::unique_ptr<ConvEntry> make_forward(const Tensor& x, const Tensor& w, const Tensor* bias,
                                        const Tensor& y, const Conv2dParams& p) {
  auto e = std::make_unique<ConvEntry>();
  const ConvDims d(p);
  const auto xmd = data_md(x, p.channels_last), ymd = data_md(y, p.channels_last);
  const auto wuser = user_weights_md(w, p.groups);
  const auto wmd = plain_weights_mode() ? wuser : any_md(wuser);
  dnnl::memory::desc bmd;
  if (bias != nullptr)
    bmd = make_md({bias->shape()[0]}, to_dnnl(bias->dtype()), {bias->strides()[0]});
  e->has_bias = bias != nullptr;
  dnnl::primitive_attr attr = base_attr();
  if (p.activation != Activation::none) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, eltwise_algorithm(p.activation), 0.f, 0.f);
    attr.set_post_ops(po);
  }
  const dnnl::convolution_forward::primitive_desc pd(
      fwd_desc(xmd, wmd, bias ? &bmd : nullptr, ymd, d), attr, engine());
  const auto wprim = pd.weights_desc();
  std::vector<DnnlOp::Arg> args{{DNNL_ARG_SRC, xmd}, {DNNL_ARG_WEIGHTS, wprim}};
  if (bias != nullptr) args.push_back({DNNL_ARG_BIAS, bmd});
  args.push_back({DNNL_ARG_DST, ymd});
  e->conv = std::make_unique<DnnlOp>(pd, std::move(args));
  if (!usable(*e->conv)) return nullptr;
  if (wprim != wuser) {
    e->reorder = make_reorder(wuser, wprim);
    e->weights_bytes = wprim.get_size();
  }
  return e;
}

std::unique_ptr<ConvEntry> make_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                                              const Conv2dParams& p) {
  auto e = std::make_unique<ConvEntry>();
  const ConvDims d(p);
  const auto dxmd = data_md(dx, p.channels_last), dymd = data_md(dy, p.channels_last);
  const auto wuser = user_weights_md(w, p.groups);
  const auto wmd = plain_weights_mode() ? wuser : any_md(wuser);
  const dnnl::convolution_forward::primitive_desc hint(fwd_desc(dxmd, wmd, nullptr, dymd, d),
                                                       engine());
  const dnnl::convolution_backward_data::desc bd(dnnl::algorithm::convolution_direct, dxmd, wmd,
                                                 dymd, d.strides, d.dilates, d.pad_l, d.pad_r);
  const dnnl::convolution_backward_data::primitive_desc pd(bd, base_attr(), engine(), hint);
  const auto wprim = pd.weights_desc();
  e->conv = std::make_unique<DnnlOp>(
      pd, std::vector<DnnlOp::Arg>{
              {DNNL_ARG_DIFF_DST, dymd}, {DNNL_ARG_WEIGHTS, wprim}, {DNNL_ARG_DIFF_SRC, dxmd}});
  if (!usable(*e->conv)) return nullptr;
  if (wprim != wuser) {
    e->reorder = make_reorder(wuser, wprim);
    e->weights_bytes = wprim.get_size();
  }
  return e;
}

std::unique_ptr<ConvEntry> make_backward_weights(const Tensor& dy, const Tensor& x,
                                                 const Tensor& dw, const Tensor* dbias,
                                                 const Conv2dParams& p) {
  auto e = std::make_unique<ConvEntry>();
  const ConvDims d(p);
  const auto xmd = data_md(x, p.channels_last), dymd = data_md(dy, p.channels_last);
  const auto wuser = user_weights_md(dw, p.groups);
  const auto wmd = plain_weights_mode() ? wuser : any_md(wuser);
  dnnl::memory::desc bmd;
  if (dbias != nullptr)
    bmd = make_md({dbias->shape()[0]}, to_dnnl(dbias->dtype()), {dbias->strides()[0]});
  e->has_bias = dbias != nullptr;
  const dnnl::convolution_forward::primitive_desc hint(
      fwd_desc(xmd, wmd, dbias ? &bmd : nullptr, dymd, d), engine());
  using bwd = dnnl::convolution_backward_weights;
  const bwd::desc bd = dbias != nullptr
                           ? bwd::desc(dnnl::algorithm::convolution_direct, xmd, wmd, bmd, dymd,
                                       d.strides, d.dilates, d.pad_l, d.pad_r)
                           : bwd::desc(dnnl::algorithm::convolution_direct, xmd, wmd, dymd,
                                       d.strides, d.dilates, d.pad_l, d.pad_r);
  const bwd::primitive_desc pd(bd, base_attr(), engine(), hint);
  const auto wprim = pd.diff_weights_desc();
  std::vector<DnnlOp::Arg> args{
      {DNNL_ARG_SRC, xmd}, {DNNL_ARG_DIFF_DST, dymd}, {DNNL_ARG_DIFF_WEIGHTS, wprim}};
  if (dbias != nullptr) args.push_back({DNNL_ARG_DIFF_BIAS, bmd});
  e->conv = std::make_unique<DnnlOp>(pd, std::move(args));
  if (!usable(*e->conv)) return nullptr;
  if (wprim != wuser) {
    e->reorder = make_reorder(wprim, wuser);
    e->weights_bytes = wprim.get_size();
  }
  return e;
}

template <class Make>
ConvEntry* lookup_conv(PrimitiveKey& key, Make&& make) {
  return primitive_cache().get<ConvEntry>(key, [&]() -> std::unique_ptr<ConvEntry> {
    try {
      return make();
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
}

bool fast_dtypes(std::initializer_list<const Tensor*> ts) {
  const DType d = (*ts.begin())->dtype();
  if (!dnnl_float_ok(d)) return false;
  for (const Tensor* t : ts) {
    if (t != nullptr && (t->dtype() != d || t->numel() == 0)) return false;
  }
  return true;
}

// t itself when oneDNN can read its strides, else a dense copy.
Tensor readable(const Tensor& t) { return dnnl_layout_ok(t) ? t : t.contiguous(); }

// A scratch tensor for the kernel in the primitive's layout (from the caching allocator).
Tensor weights_scratch(size_t bytes) {
  return Tensor::empty({static_cast<int64_t>(bytes)}, {DType::uint8, Device::cpu(0)});
}

}  // namespace

void conv2d_forward(const Tensor& x_in, const Tensor& w_in, const Tensor* bias_in, Tensor& y,
                    const Conv2dParams& p) {
  if (half_via_float32({&x_in, &w_in, bias_in, &y})) {
    const Tensor b32 = float32_copy(bias_in);
    Tensor y32 = float32_like(y);
    conv2d_forward(x_in.to(DType::float32), w_in.to(DType::float32),
                   bias_in != nullptr ? &b32 : nullptr, y32, p);
    return copy(y32, y);
  }
  if (!fast_dtypes({&x_in, &w_in, bias_in, &y}) || !dnnl_layout_ok(y)) {
    return reference::conv2d_forward(x_in, w_in, bias_in, y, p);
  }
  const Tensor x = x_in.contiguous(), w = readable(w_in);
  Tensor bias_t;
  if (bias_in != nullptr) bias_t = readable(*bias_in);
  const Tensor* bias = bias_in != nullptr ? &bias_t : nullptr;
  PrimitiveKey key(OpKind::conv_fwd);
  key.add_tensor(x);
  key.add_tensor(w);
  key.add_tensor(y);
  key.add(bias == nullptr ? -1 : bias->strides()[0]);
  add_params(key, p);
  ConvEntry* e = lookup_conv(key, [&] { return make_forward(x, w, bias, y, p); });
  if (e == nullptr) return reference::conv2d_forward(x, w, bias, y, p);
  void* wp = w.raw_data();
  Tensor wtmp;
  if (e->reorder) {
    wtmp = weights_scratch(e->weights_bytes);
    e->reorder->execute({w.raw_data(), wtmp.raw_data()});
    wp = wtmp.raw_data();
  }
  if (e->has_bias) {
    e->conv->execute({x.raw_data(), wp, bias->raw_data(), y.raw_data()});
  } else {
    e->conv->execute({x.raw_data(), wp, y.raw_data()});
  }
}

void conv2d_backward_data(const Tensor& dy_in, const Tensor& w_in, Tensor& dx,
                          const Conv2dParams& p) {
  if (half_via_float32({&dy_in, &w_in, &dx})) {
    Tensor dx32 = float32_like(dx);
    conv2d_backward_data(dy_in.to(DType::float32), w_in.to(DType::float32), dx32, p);
    return copy(dx32, dx);
  }
  if (!fast_dtypes({&dy_in, &w_in, &dx}) || !dnnl_layout_ok(dx)) {
    return reference::conv2d_backward_data(dy_in, w_in, dx, p);
  }
  const Tensor dy = dy_in.contiguous(), w = readable(w_in);
  PrimitiveKey key(OpKind::conv_bwd_data);
  key.add_tensor(dy);
  key.add_tensor(w);
  key.add_tensor(dx);
  add_params(key, p);
  ConvEntry* e = lookup_conv(key, [&] { return make_backward_data(dy, w, dx, p); });
  if (e == nullptr) return reference::conv2d_backward_data(dy, w, dx, p);
  void* wp = w.raw_data();
  Tensor wtmp;
  if (e->reorder) {
    wtmp = weights_scratch(e->weights_bytes);
    e->reorder->execute({w.raw_data(), wtmp.raw_data()});
    wp = wtmp.raw_data();
  }
  e->conv->execute({dy.raw_data(), wp, dx.raw_data()});
}

void conv2d_backward_weights(const Tensor& dy_in, const Tensor& x_in, Tensor& dw, Tensor* dbias,
                             const Conv2dParams& p) {
  if (half_via_float32({&dy_in, &x_in, &dw, dbias})) {
    Tensor dw32 = float32_like(dw), db32 = dbias != nullptr ? float32_like(*dbias) : Tensor();
    conv2d_backward_weights(dy_in.to(DType::float32), x_in.to(DType::float32), dw32,
                            dbias != nullptr ? &db32 : nullptr, p);
    copy(dw32, dw);
    if (dbias != nullptr) copy(db32, *dbias);
    return;
  }
  if (!fast_dtypes({&dy_in, &x_in, &dw, dbias}) || !dnnl_layout_ok(dw) ||
      (dbias != nullptr && !dnnl_layout_ok(*dbias))) {
    return reference::conv2d_backward_weights(dy_in, x_in, dw, dbias, p);
  }
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous();
  PrimitiveKey key(OpKind::conv_bwd_weights);
  key.add_tensor(dy);
  key.add_tensor(x);
  key.add_tensor(dw);
  key.add(dbias == nullptr ? -1 : dbias->strides()[0]);
  add_params(key, p);
  ConvEntry* e = lookup_conv(key, [&] { return make_backward_weights(dy, x, dw, dbias, p); });
  if (e == nullptr) return reference::conv2d_backward_weights(dy, x, dw, dbias, p);
  void* bp = dbias != nullptr ? dbias->raw_data() : nullptr;
  if (e->reorder) {
    Tensor wtmp = weights_scratch(e->weights_bytes);
    if (e->has_bias) {
      e->conv->execute({x.raw_data(), dy.raw_data(), wtmp.raw_data(), bp});
    } else {
      e->conv->execute({x.raw_data(), dy.raw_data(), wtmp.raw_data()});
    }
    e->reorder->execute({wtmp.raw_data(), dw.raw_data()});
  } else if (e->has_bias) {
    e->conv->execute({x.raw_data(), dy.raw_data(), dw.raw_data(), bp});
  } else {
    e->conv->execute({x.raw_data(), dy.raw_data(), dw.raw_data()});
  }
}

}  // namespace osprey::cpu
