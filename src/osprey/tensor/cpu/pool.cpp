// Fast 2-D max and average pooling: oneDNN pooling primitives on NHWC or NCHW data. Max
// pooling's workspace is oneDNN's own (the argmax position inside each window), kept in a uint8
// tensor of the primitive's workspace size; backward checks that size and otherwise hands the
// work to the reference kernel (which recomputes the argmax from x). Average pooling excludes
// the padding, as Keras and the reference kernel do.
#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

struct PoolEntry : CacheEntry {
  std::unique_ptr<DnnlOp> op;
  size_t workspace_bytes = 0;
};

dnnl::memory::desc data_md(const Tensor& t, bool channels_last) {
  return channels_last ? tensor_md(t, {0, 3, 1, 2}) : tensor_md(t);
}

// y's layout as the forward pass allocated it (contiguous), for backward's forward hint.
dnnl::memory::desc dense_md(const Shape& s, DType d, bool channels_last) {
  const Shape st = contiguous_strides(s);
  if (channels_last)
    return make_md({s[0], s[3], s[1], s[2]}, to_dnnl(d), {st[0], st[3], st[1], st[2]});
  return make_md({s[0], s[1], s[2], s[3]}, to_dnnl(d), {st[0], st[1], st[2], st[3]});
}

struct PoolDims {
  dnnl_dims strides, kernel, pad_l, pad_r;
  explicit PoolDims(const Pool2dParams& p)
      : strides{p.stride_h, p.stride_w},
        kernel{p.kernel_h, p.kernel_w},
        pad_l{p.pad_top, p.pad_left},
        pad_r{p.pad_bottom, p.pad_right} {}
};

void add_params(PrimitiveKey& k, const Pool2dParams& p) {
  for (int64_t v : {p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.pad_top, p.pad_bottom,
                    p.pad_left, p.pad_right}) {
    k.add(v);
  }
  k.add(p.channels_last ? 1 : 0);
}

dnnl::algorithm alg(bool is_max) {
  return is_max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
}

std::unique_ptr<PoolEntry> make_forward(bool is_max, bool training, const Tensor& x,
                                        const Tensor& y, const Pool2dParams& p) {
  auto e = std::make_unique<PoolEntry>();
  const PoolDims d(p);
  const auto xmd = data_md(x, p.channels_last), ymd = data_md(y, p.channels_last);
  const auto prop =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const dnnl::pooling_forward::primitive_desc pd(
      dnnl::pooling_forward::desc(prop, alg(is_max), xmd, ymd, d.strides, d.kernel, d.pad_l,
                                  d.pad_r),
      base_attr(), engine());
  std::vector<DnnlOp::Arg> args{{DNNL_ARG_SRC, xmd}, {DNNL_ARG_DST, ymd}};
  if (training && is_max) {
    const auto ws = pd.workspace_desc();
    e->workspace_bytes = ws.get_size();
    args.push_back({DNNL_ARG_WORKSPACE, ws});
  }
  e->op = std::make_unique<DnnlOp>(pd, std::move(args));
  if (e->op->is_reference_impl()) return nullptr;
  return e;
}

std::unique_ptr<PoolEntry> make_backward(bool is_max, const Tensor& dy, const Tensor& dx,
                                         const Pool2dParams& p) {
  auto e = std::make_unique<PoolEntry>();
  const PoolDims d(p);
  const auto dxmd = data_md(dx, p.channels_last), dymd = data_md(dy, p.channels_last);
  const auto xhint = dense_md(dx.shape(), dx.dtype(), p.channels_last);
  const auto yhint = dense_md(dy.shape(), dy.dtype(), p.channels_last);
  const dnnl::pooling_forward::primitive_desc hint(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, alg(is_max), xhint, yhint,
                                  d.strides, d.kernel, d.pad_l, d.pad_r),
      engine());
  const dnnl::pooling_backward::primitive_desc pd(
      dnnl::pooling_backward::desc(alg(is_max), dxmd, dymd, d.strides, d.kernel, d.pad_l, d.pad_r),
      base_attr(), engine(), hint);
  std::vector<DnnlOp::Arg> args{{DNNL_ARG_DIFF_DST, dymd}, {DNNL_ARG_DIFF_SRC, dxmd}};
  if (is_max) {
    const auto ws = pd.workspace_desc();
    e->workspace_bytes = ws.get_size();
    args.push_back({DNNL_ARG_WORKSPACE, ws});
  }
  e->op = std::make_unique<DnnlOp>(pd, std::move(args));
  if (e->op->is_reference_impl()) return nullptr;
  return e;
}

template <class Make>
PoolEntry* lookup_pool(const PrimitiveKey& key, Make&& make) {
  return primitive_cache().get<PoolEntry>(key, [&]() -> std::unique_ptr<PoolEntry> {
    try {
      return make();
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
}

bool fast(const Tensor& in, const Tensor& out) {
  return dnnl_float_ok(in.dtype()) && out.dtype() == in.dtype() && in.numel() > 0 &&
         out.numel() > 0 && dnnl_layout_ok(out);
}

PoolEntry* forward_entry(bool is_max, bool training, const Tensor& x, const Tensor& y,
                         const Pool2dParams& p) {
  PrimitiveKey key(OpKind::pool_fwd);
  key.add((is_max ? 1 : 0) | (training ? 2 : 0));
  key.add_tensor(x);
  key.add_tensor(y);
  add_params(key, p);
  return lookup_pool(key, [&] { return make_forward(is_max, training, x, y, p); });
}

PoolEntry* backward_entry(bool is_max, const Tensor& dy, const Tensor& dx, const Pool2dParams& p) {
  PrimitiveKey key(OpKind::pool_bwd);
  key.add(is_max ? 1 : 0);
  key.add_tensor(dy);
  key.add_tensor(dx);
  add_params(key, p);
  return lookup_pool(key, [&] { return make_backward(is_max, dy, dx, p); });
}

}  // namespace

void max_pool2d_forward(const Tensor& x_in, Tensor& y, Tensor* workspace, const Pool2dParams& p) {
  if (half_via_float32({&x_in, &y})) {  // the float32 workspace serves the 16-bit backward below
    Tensor y32 = float32_like(y);
    max_pool2d_forward(x_in.to(DType::float32), y32, workspace, p);
    return copy(y32, y);
  }
  if (!fast(x_in, y)) return reference::max_pool2d_forward(x_in, y, workspace, p);
  const Tensor x = dnnl_layout_ok(x_in) ? x_in : x_in.contiguous();
  const bool training = workspace != nullptr && y.is_contiguous();
  PoolEntry* e = forward_entry(true, training, x, y, p);
  if (e == nullptr) return reference::max_pool2d_forward(x, y, workspace, p);
  if (training) {
    *workspace =
        Tensor::empty({static_cast<int64_t>(e->workspace_bytes)}, {DType::uint8, y.device()});
    e->op->execute({x.raw_data(), y.raw_data(), workspace->raw_data()});
  } else {
    e->op->execute({x.raw_data(), y.raw_data()});
    // A workspace asked of a non-contiguous y: the reference's int64 argmax.
    if (workspace != nullptr) reference::max_pool2d_forward(x, y, workspace, p);
  }
}

void max_pool2d_backward(const Tensor& dy_in, const Tensor& x, const Tensor& workspace, Tensor& dx,
                         const Pool2dParams& p) {
  if (half_via_float32({&dy_in, &x, &dx})) {
    // x as it is: the oneDNN backward reads only the workspace, and the reference fallback reads
    // x in any dtype.
    Tensor dx32 = float32_like(dx);
    max_pool2d_backward(dy_in.to(DType::float32), x, workspace, dx32, p);
    return copy(dx32, dx);
  }
  if (!fast(dy_in, dx) || !workspace.defined() || workspace.dtype() != DType::uint8 ||
      !workspace.is_contiguous()) {
    return reference::max_pool2d_backward(dy_in, x, workspace, dx, p);
  }
  // The workspace is laid out like the forward's contiguous y.
  const Tensor dy = dy_in.contiguous();
  PoolEntry* e = backward_entry(true, dy, dx, p);
  if (e == nullptr || static_cast<size_t>(workspace.numel()) != e->workspace_bytes) {
    return reference::max_pool2d_backward(dy, x, workspace, dx, p);
  }
  e->op->execute({dy.raw_data(), dx.raw_data(), workspace.raw_data()});
}

void avg_pool2d_forward(const Tensor& x_in, Tensor& y, const Pool2dParams& p) {
  if (half_via_float32({&x_in, &y})) {
    Tensor y32 = float32_like(y);
    avg_pool2d_forward(x_in.to(DType::float32), y32, p);
    return copy(y32, y);
  }
  if (!fast(x_in, y)) return reference::avg_pool2d_forward(x_in, y, p);
  const Tensor x = dnnl_layout_ok(x_in) ? x_in : x_in.contiguous();
  PoolEntry* e = forward_entry(false, false, x, y, p);
  if (e == nullptr) return reference::avg_pool2d_forward(x, y, p);
  e->op->execute({x.raw_data(), y.raw_data()});
}

void avg_pool2d_backward(const Tensor& dy_in, Tensor& dx, const Pool2dParams& p) {
  if (half_via_float32({&dy_in, &dx})) {
    Tensor dx32 = float32_like(dx);
    avg_pool2d_backward(dy_in.to(DType::float32), dx32, p);
    return copy(dx32, dx);
  }
  if (!fast(dy_in, dx)) return reference::avg_pool2d_backward(dy_in, dx, p);
  const Tensor dy = dnnl_layout_ok(dy_in) ? dy_in : dy_in.contiguous();
  PoolEntry* e = backward_entry(false, dy, dx, p);
  if (e == nullptr) return reference::avg_pool2d_backward(dy, dx, p);
  e->op->execute({dy.raw_data(), dx.raw_data()});
}

}  // namespace osprey::cpu
