// Reference recurrent layers (lstm, gru with reset_after true or false, simple_rnn): Keras's cell
// formulas as plain loops in double, one batch row and one step at a time. They are the oracle
// of the oneDNN kernels and the path for what they do not take (float64, a failed primitive).
// Backward recomputes the forward pass (it keeps no workspace), then runs the steps in reverse.
#include <cmath>
#include <vector>

#include "osprey/tensor/factory.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

namespace {

int64_t gate_count(RnnCell cell) {
  switch (cell) {
    case RnnCell::lstm:
      return 4;
    case RnnCell::gru:
    case RnnCell::gru_reset_after:
      return 3;
    case RnnCell::simple_rnn:
      break;
  }
  return 1;
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

std::vector<double> values_of(const Tensor* t) {
  return t != nullptr ? t->to_vector<double>() : std::vector<double>{};
}

// The inputs as dense row-major doubles.
struct Inputs {
  int64_t batch, steps, features, units, gates;
  std::vector<double> x, h0, c0, kernel, recurrent, bias_in, bias_rec, mask;

  Inputs(const RnnArgs& in, RnnCell cell)
      : batch(in.x->size(0)),
        steps(in.x->size(1)),
        features(in.x->size(2)),
        units(in.recurrent_kernel->size(0)),
        gates(gate_count(cell)),
        x(values_of(in.x)),
        h0(values_of(in.h0)),
        c0(values_of(in.c0)),
        kernel(values_of(in.kernel)),
        recurrent(values_of(in.recurrent_kernel)),
        mask(values_of(in.mask)) {
    const int64_t width = gates * units;
    std::vector<double> b = values_of(in.bias);
    b.resize(static_cast<size_t>(cell == RnnCell::gru_reset_after ? 2 * width : width), 0.0);
    bias_in.assign(b.begin(), b.begin() + width);
    bias_rec.assign(static_cast<size_t>(width), 0.0);
    if (cell == RnnCell::gru_reset_after) bias_rec.assign(b.begin() + width, b.end());
    if (c0.empty()) c0.assign(static_cast<size_t>(batch * units), 0.0);
  }
  bool keep(int64_t b, int64_t t) const {
    return mask.empty() || mask[static_cast<size_t>(b * steps + t)] != 0.0;
  }
  const double* x_at(int64_t b, int64_t t) const { return x.data() + (b * steps + t) * features; }
};

// Everything the forward pass computed, kept for backward.
struct Trace {
  std::vector<double> h, c;   // [T + 1, batch, units]: the (masked) state after each step
  std::vector<double> act;    // [T, batch, G * units]: gate values after their nonlinearity
  std::vector<double> inner;  // gru_reset_after: [T, batch, units], h_prev U_h + b_rec_h
  std::vector<double> y;      // [batch, T, units]
};

// out[0:n] = base[0:n] + sum_k v[k] * m[k * stride + col + (0:n)].
void affine(const double* base, const double* v, int64_t k_count, const double* m, int64_t stride,
            int64_t col, int64_t n, double* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = base != nullptr ? base[j] : 0.0;
  for (int64_t k = 0; k < k_count; ++k) {
    const double vk = v[k];
    const double* row = m + k * stride + col;
    for (int64_t j = 0; j < n; ++j) out[j] += vk * row[j];
  }
}

Trace run_forward(const Inputs& in, const RnnParams& p) {
  const int64_t B = in.batch, T = in.steps, U = in.units, GU = in.gates * U;
  Trace tr;
  tr.h.resize(static_cast<size_t>((T + 1) * B * U));
  tr.c.resize(tr.h.size());
  tr.act.resize(static_cast<size_t>(T * B * GU));
  tr.y.resize(static_cast<size_t>(B * T * U));
  if (p.cell == RnnCell::gru_reset_after) tr.inner.resize(static_cast<size_t>(T * B * U));
  std::copy(in.h0.begin(), in.h0.end(), tr.h.begin());
  std::copy(in.c0.begin(), in.c0.end(), tr.c.begin());
  std::vector<double> ax(static_cast<size_t>(GU)), ah(static_cast<size_t>(GU)), rh;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      const double* hp = &tr.h[static_cast<size_t>((t * B + b) * U)];
      const double* cp = &tr.c[static_cast<size_t>((t * B + b) * U)];
      double* hn = &tr.h[static_cast<size_t>(((t + 1) * B + b) * U)];
      double* cn = &tr.c[static_cast<size_t>(((t + 1) * B + b) * U)];
      double* a = &tr.act[static_cast<size_t>((t * B + b) * GU)];
      affine(in.bias_in.data(), in.x_at(b, t), in.features, in.kernel.data(), GU, 0, GU, ax.data());
      const int64_t rec_cols = p.cell == RnnCell::gru ? 2 * U : GU;
      affine(in.bias_rec.data(), hp, U, in.recurrent.data(), GU, 0, rec_cols, ah.data());
      for (int64_t u = 0; u < U; ++u) {
        switch (p.cell) {
          case RnnCell::lstm: {
            const double i = sigmoid(ax[u] + ah[u]), f = sigmoid(ax[U + u] + ah[U + u]);
            const double g = std::tanh(ax[2 * U + u] + ah[2 * U + u]);
            const double o = sigmoid(ax[3 * U + u] + ah[3 * U + u]);
            a[u] = i, a[U + u] = f, a[2 * U + u] = g, a[3 * U + u] = o;
            cn[u] = f * cp[u] + i * g;
            hn[u] = o * std::tanh(cn[u]);
            break;
          }
          case RnnCell::gru:
          case RnnCell::gru_reset_after:
            a[u] = sigmoid(ax[u] + ah[u]);
            a[U + u] = sigmoid(ax[U + u] + ah[U + u]);
            break;
          case RnnCell::simple_rnn: {
            const double v = ax[u] + ah[u];
            a[u] = p.activation == Activation::relu ? std::max(v, 0.0) : std::tanh(v);
            hn[u] = a[u];
            break;
          }
        }
      }
      if (p.cell == RnnCell::gru) {  // candidate from (r * h_prev) U_h
        rh.resize(static_cast<size_t>(U));
        for (int64_t u = 0; u < U; ++u) rh[u] = a[U + u] * hp[u];
        affine(nullptr, rh.data(), U, in.recurrent.data(), GU, 2 * U, U, &ah[2 * U]);
      }
      if (p.cell == RnnCell::gru || p.cell == RnnCell::gru_reset_after) {
        double* inner = p.cell == RnnCell::gru_reset_after
                            ? &tr.inner[static_cast<size_t>((t * B + b) * U)]
                            : nullptr;
        for (int64_t u = 0; u < U; ++u) {
          const double z = a[u], r = a[U + u];
          const double rec = inner != nullptr ? r * ah[2 * U + u] : ah[2 * U + u];
          if (inner != nullptr) inner[u] = ah[2 * U + u];
          const double hh = std::tanh(ax[2 * U + u] + rec);
          a[2 * U + u] = hh;
          hn[u] = z * hp[u] + (1.0 - z) * hh;
        }
      }
      const bool keep = in.keep(b, t);
      if (!keep) {
        std::copy(hp, hp + U, hn);
        std::copy(cp, cp + U, cn);
      }
      double* y = &tr.y[static_cast<size_t>((b * T + t) * U)];
      for (int64_t u = 0; u < U; ++u) y[u] = !keep && p.zero_output_for_mask ? 0.0 : hn[u];
    }
  }
  return tr;
}

void store_all(const std::vector<double>& v, Tensor& dst) {
  dst.copy_(from_vector<double>(v, dst.shape()));
}

// The state rows of step t (0 = the initial state) as a [batch, units] block.
std::vector<double> state_at(const std::vector<double>& s, int64_t t, int64_t rows) {
  return {s.begin() + t * rows, s.begin() + (t + 1) * rows};
}

}  // namespace

void rnn_forward(const RnnArgs& args, const RnnParams& p, Tensor& y, Tensor& h_n, Tensor* c_n,
                 Tensor* workspace) {
  const Inputs in(args, p.cell);
  const Trace tr = run_forward(in, p);
  const int64_t rows = in.batch * in.units;
  store_all(tr.y, y);
  store_all(state_at(tr.h, in.steps, rows), h_n);
  if (c_n != nullptr) store_all(state_at(tr.c, in.steps, rows), *c_n);
  if (workspace != nullptr) *workspace = Tensor();
}

void rnn_backward(const RnnArgs& args, const RnnParams& p, const RnnResults& /*out*/,
                  const Tensor& dy_t, const Tensor& dh_n, const Tensor* dc_n,
                  const RnnGrads& grads) {
  const Inputs in(args, p.cell);
  const Trace tr = run_forward(in, p);
  const int64_t B = in.batch, T = in.steps, U = in.units, I = in.features, GU = in.gates * U;
  const std::vector<double> dy = dy_t.to_vector<double>();
  std::vector<double> dh = dh_n.to_vector<double>();
  std::vector<double> dc =
      dc_n != nullptr ? dc_n->to_vector<double>() : std::vector<double>(dh.size(), 0.0);
  std::vector<double> dx(in.x.size(), 0.0), dk(in.kernel.size(), 0.0), dr(in.recurrent.size(), 0.0),
      db_in(static_cast<size_t>(GU), 0.0), db_rec(static_cast<size_t>(GU), 0.0);
  std::vector<double> dax(static_cast<size_t>(GU)), dar(static_cast<size_t>(GU));
  std::vector<double> drh(static_cast<size_t>(U));
  for (int64_t t = T - 1; t >= 0; --t) {
    for (int64_t b = 0; b < B; ++b) {
      double* g = &dh[static_cast<size_t>(b * U)];  // in: dL/dh_t; out: dL/dh_{t-1}
      double* gc = &dc[static_cast<size_t>(b * U)];
      const bool keep = in.keep(b, t);
      if (keep || !p.zero_output_for_mask) {
        const double* d = &dy[static_cast<size_t>((b * T + t) * U)];
        for (int64_t u = 0; u < U; ++u) g[u] += d[u];
      }
      if (!keep) continue;  // h_t = h_{t-1}, c_t = c_{t-1}: the gradient passes through
      const double* hp = &tr.h[static_cast<size_t>((t * B + b) * U)];
      const double* cp = &tr.c[static_cast<size_t>((t * B + b) * U)];
      const double* hn = &tr.h[static_cast<size_t>(((t + 1) * B + b) * U)];
      const double* cn = &tr.c[static_cast<size_t>(((t + 1) * B + b) * U)];
      const double* a = &tr.act[static_cast<size_t>((t * B + b) * GU)];
      switch (p.cell) {
        case RnnCell::lstm:
          for (int64_t u = 0; u < U; ++u) {
            const double i = a[u], f = a[U + u], cg = a[2 * U + u], o = a[3 * U + u];
            const double tc = std::tanh(cn[u]);
            const double dcu = gc[u] + g[u] * o * (1.0 - tc * tc);
            dax[u] = dcu * cg * i * (1.0 - i);
            dax[U + u] = dcu * cp[u] * f * (1.0 - f);
            dax[2 * U + u] = dcu * i * (1.0 - cg * cg);
            dax[3 * U + u] = g[u] * tc * o * (1.0 - o);
            gc[u] = dcu * f;
          }
          dar = dax;
          for (int64_t u = 0; u < U; ++u) g[u] = 0.0;
          break;
        case RnnCell::simple_rnn:
          for (int64_t u = 0; u < U; ++u) {
            const double d =
                p.activation == Activation::relu ? (hn[u] > 0.0 ? 1.0 : 0.0) : 1.0 - hn[u] * hn[u];
            dax[u] = g[u] * d;
            g[u] = 0.0;
          }
          dar = dax;
          break;
        case RnnCell::gru:
        case RnnCell::gru_reset_after: {
          const bool after = p.cell == RnnCell::gru_reset_after;
          const double* inner = after ? &tr.inner[static_cast<size_t>((t * B + b) * U)] : nullptr;
          for (int64_t u = 0; u < U; ++u) {
            const double z = a[u], hh = a[2 * U + u];
            dax[u] = g[u] * (hp[u] - hh) * z * (1.0 - z);
            dax[2 * U + u] = g[u] * (1.0 - z) * (1.0 - hh * hh);
            g[u] *= z;  // the direct path h_{t-1} -> h_t
          }
          if (!after) {  // d(r * h_prev) = U_h da_h
            for (int64_t u = 0; u < U; ++u) {
              double s = 0.0;
              for (int64_t j = 0; j < U; ++j)
                s += in.recurrent[u * GU + 2 * U + j] * dax[2 * U + j];
              drh[u] = s;
            }
          }
          for (int64_t u = 0; u < U; ++u) {
            const double r = a[U + u];
            const double dr_u = after ? dax[2 * U + u] * inner[u] : drh[u] * hp[u];
            dax[U + u] = dr_u * r * (1.0 - r);
            if (!after) g[u] += drh[u] * r;
            dar[u] = dax[u];
            dar[U + u] = dax[U + u];
            dar[2 * U + u] = after ? dax[2 * U + u] * r : dax[2 * U + u];
          }
          break;
        }
      }
      // Input side: dW += x_t dA_x, db += dA_x, dx_t = W dA_x.
      const double* xt = in.x_at(b, t);
      double* dxt = &dx[static_cast<size_t>((b * T + t) * I)];
      for (int64_t i = 0; i < I; ++i) {
        const double* w = &in.kernel[static_cast<size_t>(i * GU)];
        double* dw = &dk[static_cast<size_t>(i * GU)];
        double s = 0.0;
        for (int64_t j = 0; j < GU; ++j) {
          dw[j] += xt[i] * dax[j];
          s += w[j] * dax[j];
        }
        dxt[i] = s;
      }
      for (int64_t j = 0; j < GU; ++j) db_in[j] += dax[j], db_rec[j] += dar[j];
      // Recurrent side: dU += h_prev dA_rec (gru without reset_after: (r * h_prev) for the
      // candidate columns, whose path to h_prev went through drh above).
      const int64_t cols = p.cell == RnnCell::gru ? 2 * U : GU;
      for (int64_t u = 0; u < U; ++u) {
        const double* w = &in.recurrent[static_cast<size_t>(u * GU)];
        double* dw = &dr[static_cast<size_t>(u * GU)];
        double s = 0.0;
        for (int64_t j = 0; j < cols; ++j) {
          dw[j] += hp[u] * dar[j];
          s += w[j] * dar[j];
        }
        if (p.cell == RnnCell::gru) {
          const double rh = a[U + u] * hp[u];
          for (int64_t j = 2 * U; j < GU; ++j) dw[j] += rh * dar[j];
        }
        g[u] += s;
      }
    }
  }
  store_all(dx, *grads.dx);
  store_all(dh, *grads.dh0);
  if (grads.dc0 != nullptr) store_all(dc, *grads.dc0);
  store_all(dk, *grads.dkernel);
  store_all(dr, *grads.drecurrent_kernel);
  if (grads.dbias != nullptr) {
    if (p.cell == RnnCell::gru_reset_after) db_in.insert(db_in.end(), db_rec.begin(), db_rec.end());
    store_all(db_in, *grads.dbias);
  }
}

}  // namespace osprey::reference
