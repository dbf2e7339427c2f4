// Fast softmax and log-softmax along any axis: oneDNN's softmax / logsoftmax primitives (the v1
// API of oneDNN 2.6) on x viewed as dense {outer, len, inner} (or {outer, len} for the last
// axis), forward and backward (both from y, as oneDNN and our contract define them).
#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

struct SoftmaxEntry : CacheEntry {
  std::unique_ptr<DnnlOp> op;
};

dnnl::memory::desc axis_md(const Shape& s, DType d, int axis) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  for (int i = axis + 1; i < s.ndim(); ++i) inner *= s[i];
  const int64_t len = s[axis];
  if (inner == 1) return make_md({outer, len}, to_dnnl(d), {len, 1});
  return make_md({outer, len, inner}, to_dnnl(d), {len * inner, inner, 1});
}

std::unique_ptr<DnnlOp> make_forward(const dnnl::memory::desc& md, bool log) {
  const auto prop = dnnl::prop_kind::forward_training;
  std::vector<DnnlOp::Arg> args{{DNNL_ARG_SRC, md}, {DNNL_ARG_DST, md}};
  if (log) {
    const dnnl::logsoftmax_forward::primitive_desc pd(dnnl::logsoftmax_forward::desc(prop, md, 1),
                                                      base_attr(), engine());
    return std::make_unique<DnnlOp>(pd, std::move(args));
  }
  const dnnl::softmax_forward::primitive_desc pd(dnnl::softmax_forward::desc(prop, md, 1),
                                                 base_attr(), engine());
  return std::make_unique<DnnlOp>(pd, std::move(args));
}

std::unique_ptr<DnnlOp> make_backward(const dnnl::memory::desc& md, bool log) {
  const auto prop = dnnl::prop_kind::forward_training;
  std::vector<DnnlOp::Arg> args{
      {DNNL_ARG_DST, md}, {DNNL_ARG_DIFF_DST, md}, {DNNL_ARG_DIFF_SRC, md}};
  if (log) {
    const dnnl::logsoftmax_forward::primitive_desc hint(dnnl::logsoftmax_forward::desc(prop, md, 1),
                                                        engine());
    const dnnl::logsoftmax_backward::primitive_desc pd(dnnl::logsoftmax_backward::desc(md, md, 1),
                                                       base_attr(), engine(), hint);
    return std::make_unique<DnnlOp>(pd, std::move(args));
  }
  const dnnl::softmax_forward::primitive_desc hint(dnnl::softmax_forward::desc(prop, md, 1),
                                                   engine());
  const dnnl::softmax_backward::primitive_desc pd(dnnl::softmax_backward::desc(md, md, 1),
                                                  base_attr(), engine(), hint);
  return std::make_unique<DnnlOp>(pd, std::move(args));
}

SoftmaxEntry* lookup_softmax(OpKind kind, const Shape& s, DType d, int axis, bool log) {
  PrimitiveKey key(kind);
  key.add(static_cast<int64_t>(d) | (static_cast<int64_t>(log) << 8) |
          (static_cast<int64_t>(axis) << 16));
  for (int64_t v : s) key.add(v);
  return primitive_cache().get<SoftmaxEntry>(key, [&]() -> std::unique_ptr<SoftmaxEntry> {
    try {
      auto e = std::make_unique<SoftmaxEntry>();
      const auto md = axis_md(s, d, axis);
      e->op = kind == OpKind::softmax_fwd ? make_forward(md, log) : make_backward(md, log);
      if (e->op->is_reference_impl()) return nullptr;
      return e;
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
}

}  // namespace

void softmax_forward(const Tensor& x_in, int axis, bool log, Tensor& y) {
  if (half_via_float32({&x_in, &y})) {
    Tensor y32 = float32_like(y);
    softmax_forward(x_in.to(DType::float32), axis, log, y32);
    return copy(y32, y);
  }
  const int a = axis < 0 ? axis + x_in.ndim() : axis;
  if (!dnnl_float_ok(x_in.dtype()) || y.dtype() != x_in.dtype() || !y.is_contiguous() ||
      x_in.numel() == 0 || a < 0 || a >= x_in.ndim()) {
    return reference::softmax_forward(x_in, axis, log, y);
  }
  const Tensor x = x_in.contiguous();
  SoftmaxEntry* e = lookup_softmax(OpKind::softmax_fwd, x.shape(), x.dtype(), a, log);
  if (e == nullptr) return reference::softmax_forward(x, axis, log, y);
  e->op->execute({x.raw_data(), y.raw_data()});
}

void softmax_backward(const Tensor& dy_in, const Tensor& y_in, int axis, bool log, Tensor& dx) {
  if (half_via_float32({&dy_in, &y_in, &dx})) {
    Tensor dx32 = float32_like(dx);
    softmax_backward(dy_in.to(DType::float32), y_in.to(DType::float32), axis, log, dx32);
    return copy(dx32, dx);
  }
  const int a = axis < 0 ? axis + y_in.ndim() : axis;
  const DType d = y_in.dtype();
  if (!dnnl_float_ok(d) || dy_in.dtype() != d || dx.dtype() != d || !dx.is_contiguous() ||
      y_in.numel() == 0 || a < 0 || a >= y_in.ndim() || dy_in.shape() != y_in.shape()) {
    return reference::softmax_backward(dy_in, y_in, axis, log, dx);
  }
  const Tensor dy = dy_in.contiguous(), y = y_in.contiguous();
  SoftmaxEntry* e = lookup_softmax(OpKind::softmax_bwd, y.shape(), d, a, log);
  if (e == nullptr) return reference::softmax_backward(dy, y, axis, log, dx);
  e->op->execute({y.raw_data(), dy.raw_data(), dx.raw_data()});
}

}  // namespace osprey::cpu
