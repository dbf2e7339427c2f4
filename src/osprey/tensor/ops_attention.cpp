#include "osprey/tensor/ops_attention.h"

#include <cmath>

#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey {

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

void check_operand(const Tensor& t, const char* name) {
  check_defined(t, kOp, name);
  check_floating(t, kOp, name);
  OSPREY_CHECK(t.ndim() == 4,
               "{}: {} must be 4-D [batch, heads, time, depth]. Received: {} of shape {}", kOp,
               name, name, t.shape().to_string());
}

// The mask as the kernels read it: float masks in the compute dtype, expanded to `full`.
Tensor resolve_mask(const Tensor& mask, const Shape& full, DType q_dtype) {
  const DType d = mask.dtype();
  OSPREY_CHECK(d == DType::boolean || is_floating(d),
               "{}: mask must be bool (true = attend) or floating point (added to the scores). "
               "Received: mask of dtype {}",
               kOp, dtype_name(d));
  bool fits = mask.ndim() <= 4;
  for (int i = 0; fits && i < mask.ndim(); ++i) {
    const int64_t m = mask.size(mask.ndim() - 1 - i);
    fits = m == 1 || m == full[3 - i];
  }
  OSPREY_CHECK(fits,
               "{}: mask must broadcast to [batch, heads, Tq, Tk] = {}. Received: mask of shape {}",
               kOp, full.to_string(), mask.shape().to_string());
  Tensor m = mask;
  if (is_floating(d)) m = m.to(q_dtype == DType::float64 ? DType::float64 : DType::float32);
  Shape s4;
  for (int i = mask.ndim(); i < 4; ++i) s4.push_back(1);
  for (int64_t v : mask.shape()) s4.push_back(v);
  return m.reshape(s4).expand(full);
}

}  // namespace

AttentionInputs resolve_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOptions& o) {
  check_operand(q, "query");
  check_operand(k, "key");
  check_operand(v, "value");
  check_same_device({&q, &k, &v}, kOp);
  OSPREY_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(),
               "{}: query, key and value must have one dtype. Received: query {}, key {}, "
               "value {}",
               kOp, dtype_name(q.dtype()), dtype_name(k.dtype()), dtype_name(v.dtype()));
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  OSPREY_CHECK(qs[0] == ks[0] && qs[0] == vs[0],
               "{}: query, key and value must have one batch size. Received: query {}, key {}, "
               "value {}",
               kOp, qs.to_string(), ks.to_string(), vs.to_string());
  OSPREY_CHECK(ks[1] == vs[1] && ks[2] == vs[2],
               "{}: key and value must have the same heads and time steps. Received: key {}, "
               "value {}",
               kOp, ks.to_string(), vs.to_string());
  OSPREY_CHECK(ks[1] > 0 && qs[1] % ks[1] == 0,
               "{}: the query heads must be a multiple of the key/value heads. Received: query "
               "{} with {} heads, key {} with {} heads",
               kOp, qs.to_string(), qs[1], ks.to_string(), ks[1]);
  OSPREY_CHECK(qs[3] == ks[3],
               "{}: query and key must have the same depth (last axis). Received: query {}, key "
               "{}",
               kOp, qs.to_string(), ks.to_string());
  OSPREY_CHECK(o.dropout >= 0.0 && o.dropout < 1.0,
               "{}: dropout must be in [0, 1). Received: dropout={}", kOp, o.dropout);
  const double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(qs[3])));
  OSPREY_CHECK(std::isfinite(scale), "{}: scale must be finite. Received: scale={}", kOp, scale);

  AttentionInputs in;
  in.q = q.contiguous();
  in.k = k.contiguous();
  in.v = v.contiguous();
  in.params = {
      .scale = scale, .causal = o.causal, .dropout_rate = o.dropout, .dropout_seed = o.seed};
  const Shape full{qs[0], qs[1], qs[2], ks[2]};
  if (o.mask.defined()) in.mask = resolve_mask(o.mask, full, q.dtype());
  if (o.key_padding_mask.defined()) {
    const Tensor& kp = o.key_padding_mask;
    OSPREY_CHECK(kp.dtype() == DType::boolean && kp.ndim() == 2 && kp.size(0) == qs[0] &&
                     kp.size(1) == ks[2],
                 "{}: key_padding_mask must be bool [batch, Tk] = [{}, {}] (true = a real "
                 "key). Received: {}",
                 kOp, qs[0], ks[2], kp.describe());
    in.key_padding = kp.contiguous();
  }
  return in;
}

AttentionOutputs attention_forward(const AttentionInputs& in) {
  const Shape& qs = in.q.shape();
  AttentionOutputs r;
  r.out = Tensor::empty({qs[0], qs[1], qs[2], in.v.size(3)}, {in.q.dtype(), in.q.device()});
  const DType lse_dtype = in.q.dtype() == DType::float64 ? DType::float64 : DType::float32;
  r.lse = Tensor::empty({qs[0], qs[1], qs[2]}, {lse_dtype, in.q.device()});
  if (r.out.numel() == 0 || in.k.size(2) == 0) {  // no query, or no key: output 0
    r.out.fill_(0.0);
    r.lse.fill_(INFINITY);
    return r;
  }
  backend_for(in.q.device())
      .attention_forward(in.q, in.k, in.v, in.mask.defined() ? &in.mask : nullptr,
                         in.key_padding.defined() ? &in.key_padding : nullptr, in.params, r.out,
                         r.lse);
  return r;
}

AttentionGrads attention_backward(const AttentionInputs& in, const AttentionOutputs& forward,
                                  const Tensor& dout_in) {
  OSPREY_CHECK(dout_in.shape() == forward.out.shape(),
               "{}: the output gradient must have the output's shape {}. Received: {}", kOp,
               forward.out.shape().to_string(), dout_in.shape().to_string());
  const Tensor dout = dout_in.to(in.q.dtype()).contiguous();
  const TensorOptions opts{in.q.dtype(), in.q.device()};
  if (forward.out.numel() == 0 || in.k.size(2) == 0) {
    return {zeros(in.q.shape(), opts), zeros(in.k.shape(), opts), zeros(in.v.shape(), opts)};
  }
  AttentionGrads g{Tensor::empty(in.q.shape(), opts), Tensor::empty(in.k.shape(), opts),
                   Tensor::empty(in.v.shape(), opts)};
  backend_for(in.q.device())
      .attention_backward(dout, in.q, in.k, in.v, in.mask.defined() ? &in.mask : nullptr,
                          in.key_padding.defined() ? &in.key_padding : nullptr, forward.out,
                          forward.lse, in.params, g.dq, g.dk, g.dv);
  return g;
}

Tensor attention_weights(const AttentionInputs& in) {
  const Shape& qs = in.q.shape();
  Tensor w = Tensor::empty({qs[0], qs[1], qs[2], in.k.size(2)}, {in.q.dtype(), in.q.device()});
  if (w.numel() == 0) return w;
  backend_for(in.q.device())
      .attention_weights(in.q, in.k, in.mask.defined() ? &in.mask : nullptr,
                         in.key_padding.defined() ? &in.key_padding : nullptr, in.params, w);
  return w;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options) {
  return attention_forward(resolve_attention(q, k, v, options)).out;
}

}  // namespace osprey
