// Fast matmul: one oneDNN matmul primitive per (shapes, strides, dtypes, bias, activation,
// accumulate). Transposed operands are described to oneDNN with their strides (no copy); batch
// dims are collapsed where the strides allow, and a weight broadcast over the batch ([B, M, K] x
// [K, N], the Dense layer on 3-D input) becomes one 2-D product of [B*M, K] x [K, N]. Bias and
// activation are post-ops; accumulate is a sum post-op applied before the activation, as the
// reference kernel does: out = act(out + a @ b + bias).
#include <vector>

#include "osprey/tensor/cpu/dnnl_util.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

struct MatmulEntry : CacheEntry {
  std::unique_ptr<DnnlOp> op;
  bool contig_a = false, contig_b = false;  // oneDNN wants a dense copy of that operand
  bool has_bias = false;
};

// Sizes and strides of the three operands after collapsing the batch dims.
struct Geometry {
  dnnl_dims ad, as, bd, bs, od, os;
};

Geometry collapse(const Tensor& a, const Tensor& b, const Tensor& out, bool contig_a,
                  bool contig_b) {
  const int nd = out.ndim();
  const int64_t m = out.shape()[nd - 2], n = out.shape()[nd - 1], k = a.shape()[nd - 1];
  auto strides_of = [](const Tensor& t, bool contig) {
    return contig ? contiguous_strides(t.shape()) : t.strides();
  };
  const Shape sa = strides_of(a, contig_a), sb = strides_of(b, contig_b), so = out.strides();
  // Batch dims of size > 1, outermost first, merged where every operand allows.
  struct Dim {
    int64_t size, a, b, o;
  };
  std::vector<Dim> dims;
  for (int i = 0; i < nd - 2; ++i) {
    if (out.shape()[i] == 1) continue;
    const Dim d{out.shape()[i], sa[i], sb[i], so[i]};
    if (!dims.empty()) {
      Dim& p = dims.back();
      if (p.a == d.a * d.size && p.b == d.b * d.size && p.o == d.o * d.size) {
        p = {p.size * d.size, d.a, d.b, d.o};
        continue;
      }
    }
    dims.push_back(d);
  }
  Geometry g;
  const int64_t sam = sa[nd - 2], sak = sa[nd - 1], sbk = sb[nd - 2], sbn = sb[nd - 1];
  const int64_t som = so[nd - 2], son = so[nd - 1];
  // [B, M, K] x broadcast [K, N]: fold B into M when a and out run over (B, M) with one stride.
  if (dims.size() == 1 && dims[0].b == 0 && dims[0].a == m * sam && dims[0].o == m * som) {
    const int64_t bm = dims[0].size * m;
    g.ad = {bm, k};
    g.as = {sam, sak};
    g.bd = {k, n};
    g.bs = {sbk, sbn};
    g.od = {bm, n};
    g.os = {som, son};
    return g;
  }
  for (const Dim& d : dims) {
    g.ad.push_back(d.a == 0 ? 1 : d.size);
    g.as.push_back(d.a == 0 ? m * k : d.a);
    g.bd.push_back(d.b == 0 ? 1 : d.size);
    g.bs.push_back(d.b == 0 ? k * n : d.b);
    g.od.push_back(d.size);
    g.os.push_back(d.o);
  }
  g.ad.insert(g.ad.end(), {m, k});
  g.as.insert(g.as.end(), {sam, sak});
  g.bd.insert(g.bd.end(), {k, n});
  g.bs.insert(g.bs.end(), {sbk, sbn});
  g.od.insert(g.od.end(), {m, n});
  g.os.insert(g.os.end(), {som, son});
  return g;
}

std::unique_ptr<DnnlOp> make_op(const Tensor& a, const Tensor& b, const Tensor* bias,
                                const Tensor& out, const MatmulParams& p, bool contig_a,
                                bool contig_b) {
  const Geometry g = collapse(a, b, out, contig_a, contig_b);
  const dnnl_dt dt = to_dnnl(a.dtype());
  const auto amd = make_md(g.ad, dt, g.as);
  const auto bmd = make_md(g.bd, dt, g.bs);
  const auto omd = make_md(g.od, to_dnnl(out.dtype()), g.os);
  dnnl::post_ops po;
  if (p.accumulate) po.append_sum(1.0f);
  if (p.activation != Activation::none)
    po.append_eltwise(1.0f, eltwise_algorithm(p.activation), 0.f, 0.f);
  dnnl::primitive_attr attr = base_attr();
  attr.set_post_ops(po);
  std::vector<DnnlOp::Arg> args{{DNNL_ARG_SRC, amd}, {DNNL_ARG_WEIGHTS, bmd}, {DNNL_ARG_DST, omd}};
  dnnl::matmul::primitive_desc pd;
  if (bias != nullptr) {
    dnnl_dims bd(g.od.size(), 1), bs(g.od.size(), 1);
    bd.back() = g.od.back();
    bs.back() = bias->strides()[0];
    for (size_t i = 0; i + 1 < bs.size(); ++i) bs[i] = bd.back() * bs.back();
    const auto biasmd = make_md(bd, to_dnnl(bias->dtype()), bs);
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(amd, bmd, biasmd, omd), attr, engine());
    args.push_back({DNNL_ARG_BIAS, biasmd});
  } else {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(amd, bmd, omd), attr, engine());
  }
  return std::make_unique<DnnlOp>(pd, std::move(args));
}

bool a_layout_plain(const Tensor& t) {
  const int nd = t.ndim();
  const int64_t s1 = t.strides()[nd - 2], s2 = t.strides()[nd - 1];
  const bool inner_ok = (s2 == 1 || t.shape()[nd - 1] == 1) || (s1 == 1 || t.shape()[nd - 2] == 1);
  if (!inner_ok || s1 < 0 || s2 < 0) return false;
  if ((s1 == 0 && t.shape()[nd - 2] > 1) || (s2 == 0 && t.shape()[nd - 1] > 1)) return false;
  for (int i = 0; i < nd - 2; ++i)
    if (t.strides()[i] < 0) return false;
  return true;
}

std::unique_ptr<MatmulEntry> make_entry(const Tensor& a, const Tensor& b, const Tensor* bias,
                                        const Tensor& out, const MatmulParams& p) {
  auto e = std::make_unique<MatmulEntry>();
  e->has_bias = bias != nullptr;
  e->contig_a = !a_layout_plain(a);
  e->contig_b = !a_layout_plain(b);
  try {
    e->op = make_op(a, b, bias, out, p, e->contig_a, e->contig_b);
    if (e->op->is_reference_impl() && !(e->contig_a && e->contig_b)) {
      // oneDNN only has its naive kernel for these strides: dense copies are much faster.
      e->contig_a = e->contig_b = true;
      e->op = make_op(a, b, bias, out, p, true, true);
    }
    if (e->op->is_reference_impl()) return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return e;
}

// A float32 copy of a 16-bit operand. A transposed view (the backward's x^T and w^T) converts
// as the dense tensor it views, then is transposed back: a linear, vectorized conversion, where
// converting the view itself is a transposing copy (oneDNN's generic reorder, which took most of
// an emulated bfloat16 training step).
Tensor float32_keeping_transpose(const Tensor& t) {
  const int nd = t.ndim();
  if (nd < 2 || t.is_contiguous()) return t.to(DType::float32);
  const Tensor back = t.transpose(nd - 2, nd - 1);
  if (!back.is_contiguous()) return t.to(DType::float32);
  return back.to(DType::float32).transpose(nd - 2, nd - 1);
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor* bias_in, Tensor& out,
            const MatmulParams& p) {
  // A broadcast bias (stride 0) is not a layout oneDNN reads: give it a dense copy.
  Tensor bias_t;
  if (bias_in != nullptr) bias_t = dnnl_layout_ok(*bias_in) ? *bias_in : bias_in->contiguous();
  const Tensor* bias = bias_in != nullptr ? &bias_t : nullptr;
  const int nd = out.ndim();
  const DType d = a.dtype();
  const bool fast = nd >= 2 && nd <= 10 && dnnl_float_ok(d) && b.dtype() == d && out.dtype() == d &&
                    (bias == nullptr || (bias->dtype() == d && bias->ndim() == 1)) &&
                    a.shape()[nd - 1] > 0 && dnnl_layout_ok(out);
  if (out.numel() == 0) return;
  if (half_via_float32({&a, &b, bias, &out})) {
    // float16, or bfloat16 without AVX-512 (dnnl_util.h): compute in float32 with vectorized
    // conversions either side; the result is stored in the 16-bit type.
    const Tensor bias32 = float32_copy(bias);
    Tensor o32 = p.accumulate ? out.to(DType::float32) : float32_like(out);
    matmul(float32_keeping_transpose(a), float32_keeping_transpose(b),
           bias != nullptr ? &bias32 : nullptr, o32, p);
    copy(o32, out);
    return;
  }
  if (!fast) return reference::matmul(a, b, bias, out, p);
  PrimitiveKey key(OpKind::matmul);
  key.add_tensor(a);
  key.add_tensor(b);
  key.add_tensor(out);
  key.add(bias == nullptr ? -1 : bias->strides()[0]);
  key.add((p.accumulate ? 1 : 0) | (static_cast<int64_t>(p.activation) << 1));
  auto* e = primitive_cache().get<MatmulEntry>(key, [&] { return make_entry(a, b, bias, out, p); });
  if (e == nullptr) return reference::matmul(a, b, bias, out, p);
  const Tensor ac = e->contig_a ? a.contiguous() : a;
  const Tensor bc = e->contig_b ? b.contiguous() : b;
  if (e->has_bias) {
    e->op->execute({ac.raw_data(), bc.raw_data(), out.raw_data(), bias->raw_data()});
  } else {
    e->op->execute({ac.raw_data(), bc.raw_data(), out.raw_data()});
  }
}

}  // namespace osprey::cpu
