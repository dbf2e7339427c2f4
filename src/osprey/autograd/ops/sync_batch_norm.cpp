// Synchronized batch norm: the per-replica kernels of the backend plus two small float64
// all-reduces per layer and step (forward: count, sum, sum of squares; backward: sum dy and
// sum dy * xhat), so the heavy passes stay on oneDNN and only [2C + 1] values cross replicas.
// Local variances come from the kernel's invstd (var = 1 / invstd^2 - eps), exact to float32
// rounding relative to var + eps; they are combined in float64 (Chan et al.: each replica's
// n * (var + mean^2) summed, the global mean squared subtracted).
#include "osprey/autograd/ops/sync_batch_norm.h"

#include <algorithm>
#include <cmath>

#include "osprey/autograd/ops/common.h"

namespace osprey::autograd::detail {

Tensor per_channel(const Tensor& v, int ndim, int axis) {
  Shape s = Shape::filled(ndim, 1);
  s[axis] = v.numel();
  return v.reshape(s);
}

namespace {

Tensor f64_vector(int64_t n, const Device& device) {
  return Tensor::empty({n}, {DType::float64, device});
}

// t [C] as contiguous float64 (t itself when it already is).
Tensor as_f64(const Tensor& t) { return t.to(DType::float64).contiguous(); }

}  // namespace

Variable sync_batch_norm_train(const Variable& x, const Variable& gamma, const Variable& beta,
                               Tensor* running_mean, Tensor* running_var, const BatchNormOptions& o,
                               int axis) {
  const Tensor& xv = x.value();
  const int64_t c = xv.shape()[axis];
  const Device dev = xv.device();
  const Backend& backend = backend_for(dev);
  const TensorOptions so{bn_stats_dtype(xv.dtype()), dev};
  Tensor y = Tensor::empty(xv.shape(), {xv.dtype(), dev});
  // This replica's statistics; y is rewritten below with the global ones.
  Tensor mean = Tensor::empty({c}, so), invstd = Tensor::empty({c}, so);
  backend.batch_norm_forward(xv, nullptr, nullptr, mean, invstd, true, o.epsilon, axis, y);

  const double n = static_cast<double>(xv.numel() / c);
  Tensor packed = f64_vector(2 * c + 1, dev);  // [n * mean | n * (var + mean^2) | n]
  {
    const Tensor lm = as_f64(mean), li = as_f64(invstd);
    const double* m = lm.data<double>();
    const double* is = li.data<double>();
    double* p = packed.data<double>();
    for (int64_t i = 0; i < c; ++i) {
      const double var = std::max(1.0 / (is[i] * is[i]) - o.epsilon, 0.0);
      p[i] = n * m[i];
      p[c + i] = n * (var + m[i] * m[i]);
    }
    p[2 * c] = n;
  }
  o.cross_replica_sum(packed);
  const double* p = packed.data<double>();
  const double total = p[2 * c];
  Tensor gmean = f64_vector(c, dev), gvar = f64_vector(c, dev), ginv = f64_vector(c, dev);
  for (int64_t i = 0; i < c; ++i) {
    const double m = p[i] / total;
    const double v = std::max(p[c + i] / total - m * m, 0.0);
    gmean.data<double>()[i] = m;
    gvar.data<double>()[i] = v;
    ginv.data<double>()[i] = 1.0 / std::sqrt(v + o.epsilon);
  }
  mean = gmean.to(so.dtype);
  invstd = ginv.to(so.dtype);
  // Inference mode of the kernel: normalize with the given (global) statistics.
  backend.batch_norm_forward(xv, value_or_null(gamma), value_or_null(beta), mean, invstd, false,
                             o.epsilon, axis, y);
  if (running_mean != nullptr) {
    // Keras: moving = moving * momentum + batch * (1 - momentum), from the global statistics.
    running_mean->copy_(
        osprey::add(osprey::mul(*running_mean, o.momentum),
                    osprey::mul(gmean.to(running_mean->dtype()), 1.0 - o.momentum)));
    running_var->copy_(osprey::add(osprey::mul(*running_var, o.momentum),
                                   osprey::mul(gvar.to(running_var->dtype()), 1.0 - o.momentum)));
  }
  if (!should_record(x, gamma, beta)) return Variable(std::move(y));

  const Tensor gv = gamma.defined() ? gamma.value() : Tensor();
  const DType gamma_dtype = gamma.defined() ? gamma.dtype() : xv.dtype();
  const DType beta_dtype = beta.defined() ? beta.dtype() : xv.dtype();
  return make_variable(
      std::move(y), "batch_norm", {x, gamma, beta},
      [xv, gv, mean, invstd, axis, c, total, so, gamma_dtype, beta_dtype,
       sum = o.cross_replica_sum](const Tensor& g, const std::vector<bool>& need) {
        std::vector<Tensor> grads(3);
        const Tensor dy = g.dtype() == xv.dtype() ? g : g.to(xv.dtype());
        // Local sums: dbeta = sum dy, dgamma = sum dy * xhat (the kernel's dx is discarded).
        Tensor dx_local = Tensor::empty(xv.shape(), {xv.dtype(), xv.device()});
        Tensor dgamma = Tensor::empty({c}, so), dbeta = Tensor::empty({c}, so);
        backend_for(xv.device())
            .batch_norm_backward(dy, xv, nullptr, mean, invstd, axis, dx_local, &dgamma, &dbeta);
        if (need[0]) {
          // dx = gamma * invstd * (dy - S(dy) / N - xhat * S(dy * xhat) / N) with S over every
          // replica and N the global count, written per channel as a * dy + k * x + d.
          Tensor packed = f64_vector(2 * c, xv.device());
          const Tensor db = as_f64(dbeta), dg = as_f64(dgamma);
          std::copy(db.data<double>(), db.data<double>() + c, packed.data<double>());
          std::copy(dg.data<double>(), dg.data<double>() + c, packed.data<double>() + c);
          sum(packed);
          const double* s = packed.data<double>();
          const Tensor m = as_f64(mean), is = as_f64(invstd);
          const Tensor gam = gv.defined() ? as_f64(gv) : Tensor();
          Tensor a = f64_vector(c, xv.device()), k = f64_vector(c, xv.device()),
                 d = f64_vector(c, xv.device());
          for (int64_t i = 0; i < c; ++i) {
            const double inv = is.data<double>()[i];
            const double ai = (gam.defined() ? gam.data<double>()[i] : 1.0) * inv;
            const double sdy = s[i] / total, sdyx = s[c + i] / total;
            a.data<double>()[i] = ai;
            k.data<double>()[i] = -ai * inv * sdyx;
            d.data<double>()[i] = -ai * sdy + ai * inv * m.data<double>()[i] * sdyx;
          }
          const int nd = xv.ndim();
          auto pc = [&](const Tensor& v) { return per_channel(v.to(so.dtype), nd, axis); };
          const Tensor dx = osprey::add(
              osprey::add(osprey::mul(dy.to(so.dtype), pc(a)), osprey::mul(xv.to(so.dtype), pc(k))),
              pc(d));
          grads[0] = dx.to(xv.dtype());
        }
        if (need[1]) grads[1] = dgamma.to(gamma_dtype);
        if (need[2]) grads[2] = dbeta.to(beta_dtype);
        return grads;
      });
}

}  // namespace osprey::autograd::detail
