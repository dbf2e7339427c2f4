// Reference scaled dot-product attention: the textbook formula on the materialized scores, in
// double, head by head: s = scale * q k^T (+ additive mask; -inf where masked), w = softmax(s),
// out = dropout(w) v. Backward differentiates the same matrices directly (no log-sum-exp trick,
// no rowsum(dout * out) shortcut), so it checks the tiled kernels' algebra, not only their
// arithmetic. Memory is Tq * Tk per head: for tests and float64 gradient checks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "osprey/tensor/attention_dropout.h"
#include "osprey/tensor/reference/indexing.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The inputs as doubles, and the geometry, shared by forward, backward and weights.
struct AttentionProblem {
  int64_t batch, heads, kv_heads, tq, tk, d, dv;
  std::vector<double> q, k, v, mask, key_padding;
  bool bool_mask = false;
  AttentionParams p;

  AttentionProblem(const Tensor& qt, const Tensor& kt, const Tensor* vt, const Tensor* m,
                   const Tensor* kp, const AttentionParams& params)
      : batch(qt.size(0)),
        heads(qt.size(1)),
        kv_heads(kt.size(1)),
        tq(qt.size(2)),
        tk(kt.size(2)),
        d(qt.size(3)),
        dv(vt != nullptr ? vt->size(3) : 0),
        q(detail::to_doubles(qt)),
        k(detail::to_doubles(kt)),
        p(params) {
    if (vt != nullptr) v = detail::to_doubles(*vt);
    if (m != nullptr) {
      mask = detail::to_doubles(*m);
      bool_mask = m->dtype() == DType::boolean;
    }
    if (kp != nullptr) key_padding = detail::to_doubles(*kp);
  }

  int64_t kv_head(int64_t h) const { return h / (heads / kv_heads); }
  const double* q_row(int64_t b, int64_t h, int64_t i) const {
    return q.data() + ((b * heads + h) * tq + i) * d;
  }
  const double* k_row(int64_t b, int64_t g, int64_t j) const {
    return k.data() + ((b * kv_heads + g) * tk + j) * d;
  }
  const double* v_row(int64_t b, int64_t g, int64_t j) const {
    return v.data() + ((b * kv_heads + g) * tk + j) * dv;
  }

  // The scaled, masked scores of head (b, h): [tq, tk], -inf where a key is masked out.
  std::vector<double> scores(int64_t b, int64_t h) const {
    std::vector<double> s(static_cast<size_t>(tq * tk));
    const int64_t g = kv_head(h);
    for (int64_t i = 0; i < tq; ++i) {
      for (int64_t j = 0; j < tk; ++j) {
        const double* qi = q_row(b, h, i);
        const double* kj = k_row(b, g, j);
        double dot = 0.0;
        for (int64_t c = 0; c < d; ++c) dot += qi[c] * kj[c];
        double x = p.scale * dot;
        const int64_t e = ((b * heads + h) * tq + i) * tk + j;
        if (!mask.empty()) x = bool_mask ? (mask[e] != 0.0 ? x : -kInf) : x + mask[e];
        if (!key_padding.empty() && key_padding[b * tk + j] == 0.0) x = -kInf;
        if (p.causal && j > i) x = -kInf;
        s[i * tk + j] = x;
      }
    }
    return s;
  }

  // softmax over each row of s, in place; a row with no finite score becomes all zeros.
  void softmax_rows(std::vector<double>& s) const {
    for (int64_t i = 0; i < tq; ++i) {
      double* row = s.data() + i * tk;
      const double mx = *std::max_element(row, row + tk);
      if (mx == -kInf) {
        std::fill(row, row + tk, 0.0);
        continue;
      }
      double sum = 0.0;
      for (int64_t j = 0; j < tk; ++j) sum += std::exp(row[j] - mx);
      for (int64_t j = 0; j < tk; ++j) row[j] = std::exp(row[j] - mx) / sum;
    }
  }

  // The dropout factors of head (b, h): 1 / (1 - rate) or 0 per weight (all 1 without dropout).
  std::vector<double> dropout_factors(int64_t b, int64_t h) const {
    std::vector<double> z(static_cast<size_t>(tq * tk), 1.0);
    if (p.dropout_rate > 0.0) {
      const osprey::detail::AttentionDropout drop(p.dropout_seed, p.dropout_rate);
      drop.apply((b * heads + h) * tq * tk, z.data(), tq * tk);
    }
    return z;
  }
};

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                       const Tensor* key_padding, const AttentionParams& p, Tensor& out,
                       Tensor& lse) {
  const AttentionProblem a(q, k, &v, mask, key_padding, p);
  std::vector<double> o(static_cast<size_t>(a.batch * a.heads * a.tq * a.dv), 0.0);
  std::vector<double> l(static_cast<size_t>(a.batch * a.heads * a.tq));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      std::vector<double> s = a.scores(b, h);
      for (int64_t i = 0; i < a.tq; ++i) {
        const double* row = s.data() + i * a.tk;
        const double mx = *std::max_element(row, row + a.tk);
        double sum = 0.0;
        if (mx != -kInf) {
          for (int64_t j = 0; j < a.tk; ++j) sum += std::exp(row[j] - mx);
        }
        l[(b * a.heads + h) * a.tq + i] = mx == -kInf ? kInf : mx + std::log(sum);
      }
      a.softmax_rows(s);
      const std::vector<double> z = a.dropout_factors(b, h);
      const int64_t g = a.kv_head(h);
      for (int64_t i = 0; i < a.tq; ++i) {
        double* oi = o.data() + ((b * a.heads + h) * a.tq + i) * a.dv;
        for (int64_t j = 0; j < a.tk; ++j) {
          const double w = s[i * a.tk + j] * z[i * a.tk + j];
          const double* vj = a.v_row(b, g, j);
          for (int64_t c = 0; c < a.dv; ++c) oi[c] += w * vj[c];
        }
      }
    }
  }
  detail::from_doubles(o, out);
  detail::from_doubles(l, lse);
}

// With w = softmax(s), u = w * z (dropout), out = u v:
//   dv = u^T dout, du = dout v^T, dw = du * z, ds = w * (dw - rowsum(dw * w)),
//   dq = scale * ds k, dk = scale * ds^T q; kv heads sum over the query heads that share them.
void attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor* mask, const Tensor* key_padding, const Tensor& /*out*/,
                        const Tensor& /*lse*/, const AttentionParams& p, Tensor& dq, Tensor& dk,
                        Tensor& dv) {
  const AttentionProblem a(q, k, &v, mask, key_padding, p);
  const std::vector<double> go = detail::to_doubles(dout);
  std::vector<double> gq(a.q.size(), 0.0), gk(a.k.size(), 0.0), gv(a.v.size(), 0.0);
  std::vector<double> dw(static_cast<size_t>(a.tq * a.tk));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      std::vector<double> w = a.scores(b, h);
      a.softmax_rows(w);
      const std::vector<double> z = a.dropout_factors(b, h);
      const int64_t g = a.kv_head(h);
      for (int64_t i = 0; i < a.tq; ++i) {
        const double* goi = go.data() + ((b * a.heads + h) * a.tq + i) * a.dv;
        double row_dot = 0.0;
        for (int64_t j = 0; j < a.tk; ++j) {
          const double* vj = a.v_row(b, g, j);
          double du = 0.0;
          for (int64_t c = 0; c < a.dv; ++c) du += goi[c] * vj[c];
          const double u = w[i * a.tk + j] * z[i * a.tk + j];
          double* gvj = gv.data() + ((b * a.kv_heads + g) * a.tk + j) * a.dv;
          for (int64_t c = 0; c < a.dv; ++c) gvj[c] += u * goi[c];
          dw[i * a.tk + j] = du * z[i * a.tk + j];
          row_dot += dw[i * a.tk + j] * w[i * a.tk + j];
        }
        const double* qi = a.q_row(b, h, i);
        double* gqi = gq.data() + ((b * a.heads + h) * a.tq + i) * a.d;
        for (int64_t j = 0; j < a.tk; ++j) {
          const double ds = p.scale * w[i * a.tk + j] * (dw[i * a.tk + j] - row_dot);
          if (ds == 0.0) continue;
          const double* kj = a.k_row(b, g, j);
          double* gkj = gk.data() + ((b * a.kv_heads + g) * a.tk + j) * a.d;
          for (int64_t c = 0; c < a.d; ++c) {
            gqi[c] += ds * kj[c];
            gkj[c] += ds * qi[c];
          }
        }
      }
    }
  }
  detail::from_doubles(gq, dq);
  detail::from_doubles(gk, dk);
  detail::from_doubles(gv, dv);
}

void attention_weights(const Tensor& q, const Tensor& k, const Tensor* mask,
                       const Tensor* key_padding, const AttentionParams& p, Tensor& weights) {
  const AttentionProblem a(q, k, nullptr, mask, key_padding, p);
  std::vector<double> all;
  all.reserve(static_cast<size_t>(a.batch * a.heads * a.tq * a.tk));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      std::vector<double> s = a.scores(b, h);
      a.softmax_rows(s);
      all.insert(all.end(), s.begin(), s.end());
    }
  }
  detail::from_doubles(all, weights);
}

}  // namespace osprey::reference
