// Batch and layer normalization on the backend's fused kernels. The statistics tensors (batch
// mean / inverse std, per-row mean / rstd) are float32, or float64 for float64 inputs.
#include "osprey/autograd/ops/norm.h"

#include <algorithm>

#include "osprey/autograd/ops/common.h"
#include "osprey/autograd/ops/elementwise.h"
#include "osprey/autograd/ops/reduction.h"
#include "osprey/autograd/ops/sync_batch_norm.h"

namespace osprey::autograd {

using Grads = std::vector<Tensor>;

namespace {

using detail::per_channel;
DType stats_dtype(DType x) { return detail::bn_stats_dtype(x); }

void check_channel_param(const Variable& v, int64_t c, const char* name, const Tensor& x) {
  if (!v.defined()) return;
  detail::check_float_input(v, "batch_norm", name);
  check_same_device({&x, &v.value()}, "batch_norm");
  OSPREY_CHECK(
      v.ndim() == 1 && v.size(0) == c,
      "batch_norm: {} must have shape [{}] (one value per channel of input {}). Received: {}", name,
      c, x.shape().to_string(), v.shape().to_string());
}

void check_running(const Tensor& t, int64_t c, const char* name, const Tensor& x) {
  check_floating(t, "batch_norm", name);
  check_same_device({&x, &t}, "batch_norm");
  OSPREY_CHECK(
      t.ndim() == 1 && t.size(0) == c,
      "batch_norm: {} must have shape [{}] (one value per channel of input {}). Received: {}", name,
      c, x.shape().to_string(), t.shape().to_string());
}

std::vector<int> non_channel_axes(int ndim, int axis) {
  std::vector<int> axes;
  for (int i = 0; i < ndim; ++i) {
    if (i != axis) axes.push_back(i);
  }
  return axes;
}

Variable batch_norm_impl(const Variable& x, const Variable& gamma, const Variable& beta,
                         Tensor* running_mean, Tensor* running_var, const BatchNormOptions& o) {
  detail::check_float_input(x, "batch_norm", "input");
  const Tensor& xv = x.value();
  OSPREY_CHECK(xv.ndim() >= 2, "batch_norm: expected an input of rank >= 2. Received: {}",
               xv.shape().to_string());
  const int axis = normalize_axis(o.axis, xv.ndim(), "batch_norm");
  const int64_t c = xv.shape()[axis];
  check_channel_param(gamma, c, "gamma", xv);
  check_channel_param(beta, c, "beta", xv);
  OSPREY_CHECK(o.epsilon > 0, "batch_norm: epsilon must be positive. Received: {}", o.epsilon);
  OSPREY_CHECK(o.momentum >= 0 && o.momentum <= 1,
               "batch_norm: momentum must be in [0, 1]. Received: {}", o.momentum);
  const bool tracking = running_mean != nullptr && running_mean->defined();
  if (tracking || !o.training) {
    OSPREY_CHECK(running_mean != nullptr && running_mean->defined() && running_var != nullptr &&
                     running_var->defined(),
                 "batch_norm: inference needs the running mean and variance; both must be defined");
    check_running(*running_mean, c, "running_mean", xv);
    check_running(*running_var, c, "running_var", xv);
  }
  OSPREY_CHECK(!o.training || xv.numel() / std::max<int64_t>(c, 1) > 0,
               "batch_norm: training needs at least one value per channel. Received: {}",
               xv.shape().to_string());
  if (o.training && o.cross_replica_sum) {
    return detail::sync_batch_norm_train(x, gamma, beta, tracking ? running_mean : nullptr,
                                         tracking ? running_var : nullptr, o, axis);
  }

  const Backend& backend = backend_for(xv.device());
  const TensorOptions so{stats_dtype(xv.dtype()), xv.device()};
  Tensor y = Tensor::empty(xv.shape(), {xv.dtype(), xv.device()});
  Tensor mean, invstd;
  if (o.training) {
    mean = Tensor::empty({c}, so);
    invstd = Tensor::empty({c}, so);
  } else {
    mean = running_mean->to(so.dtype);
    invstd = osprey::rsqrt(osprey::add(running_var->to(so.dtype), o.epsilon));
  }
  backend.batch_norm_forward(xv, detail::value_or_null(gamma), detail::value_or_null(beta), mean,
                             invstd, o.training, o.epsilon, axis, y);
  if (o.training && tracking) {
    // Keras: moving = moving * momentum + batch * (1 - momentum), with the biased batch
    // variance recovered from invstd = 1 / sqrt(var + eps).
    const Tensor var = osprey::add(osprey::reciprocal(osprey::square(invstd)), -o.epsilon);
    running_mean->copy_(
        osprey::add(osprey::mul(*running_mean, o.momentum), osprey::mul(mean, 1.0 - o.momentum)));
    running_var->copy_(
        osprey::add(osprey::mul(*running_var, o.momentum), osprey::mul(var, 1.0 - o.momentum)));
  }
  if (!should_record(x, gamma, beta)) return Variable(std::move(y));

  const Tensor gv = gamma.defined() ? gamma.value() : Tensor();
  const DType gamma_dtype = gamma.defined() ? gamma.dtype() : xv.dtype();
  const DType beta_dtype = beta.defined() ? beta.dtype() : xv.dtype();
  if (o.training) {
    return make_variable(std::move(y), "batch_norm", {x, gamma, beta},
                         [xv, gv, mean, invstd, axis, c, gamma_dtype, beta_dtype](
                             const Tensor& g, const std::vector<bool>& need) {
                           Grads grads(3);
                           Tensor dx = Tensor::empty(xv.shape(), {xv.dtype(), xv.device()});
                           if (need[1]) grads[1] = Tensor::empty({c}, {gamma_dtype, xv.device()});
                           if (need[2]) grads[2] = Tensor::empty({c}, {beta_dtype, xv.device()});
                           const Tensor dy = g.dtype() == xv.dtype() ? g : g.to(xv.dtype());
                           backend_for(xv.device())
                               .batch_norm_backward(dy, xv, gv.defined() ? &gv : nullptr, mean,
                                                    invstd, axis, dx, need[1] ? &grads[1] : nullptr,
                                                    need[2] ? &grads[2] : nullptr);
                           if (need[0]) grads[0] = std::move(dx);
                           return grads;
                         });
  }
  // Inference: y = (x - mean) * invstd * gamma + beta with constant statistics.
  return make_variable(
      std::move(y), "batch_norm", {x, gamma, beta},
      [xv = gamma.requires_grad() ? xv : Tensor(), gv, mean, invstd, axis](
          const Tensor& g, const std::vector<bool>& need) {
        const int nd = g.ndim();
        const std::vector<int> others = non_channel_axes(nd, axis);
        const Tensor is = per_channel(invstd, nd, axis);
        Grads grads(3);
        if (need[0]) {
          const Tensor scale = gv.defined() ? osprey::mul(is, per_channel(gv, nd, axis)) : is;
          grads[0] = osprey::mul(g, scale);
        }
        if (need[1]) {
          const Tensor xhat = osprey::mul(osprey::sub(xv, per_channel(mean, nd, axis)), is);
          grads[1] = osprey::sum(osprey::mul(g, xhat), others);
        }
        if (need[2]) grads[2] = osprey::sum(g, others);
        return grads;
      });
}

}  // namespace

Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    Tensor& running_mean, Tensor& running_var, const BatchNormOptions& options) {
  return batch_norm_impl(x, gamma, beta, &running_mean, &running_var, options);
}

Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    const BatchNormOptions& options) {
  OSPREY_CHECK(options.training, "batch_norm: inference needs the running mean and variance");
  return batch_norm_impl(x, gamma, beta, nullptr, nullptr, options);
}

Variable layer_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    const LayerNormOptions& o) {
  detail::check_float_input(x, "layer_norm", "input");
  const Tensor& xv = x.value();
  OSPREY_CHECK(xv.ndim() >= 1, "layer_norm: expected an input of rank >= 1. Received a scalar");
  const int begin = normalize_axis(o.begin_axis, xv.ndim(), "layer_norm");
  int64_t norm_size = 1;
  for (int i = begin; i < xv.ndim(); ++i) norm_size *= xv.shape()[i];
  OSPREY_CHECK(o.epsilon > 0, "layer_norm: epsilon must be positive. Received: {}", o.epsilon);
  OSPREY_CHECK(norm_size > 0, "layer_norm: the normalized axes of {} are empty",
               xv.shape().to_string());
  auto flat_param = [&](const Variable& v, const char* name) -> Tensor {
    if (!v.defined()) return Tensor();
    detail::check_float_input(v, "layer_norm", name);
    check_same_device({&xv, &v.value()}, "layer_norm");
    OSPREY_CHECK(
        v.numel() == norm_size,
        "layer_norm: {} must hold {} values (the normalized axes of input {} from axis {}). "
        "Received: {}",
        name, norm_size, xv.shape().to_string(), begin, v.shape().to_string());
    return v.value().reshape({norm_size});
  };
  const Tensor gv = flat_param(gamma, "gamma");
  const Tensor bv = flat_param(beta, "beta");
  const int64_t rows = xv.numel() / norm_size;
  const TensorOptions so{stats_dtype(xv.dtype()), xv.device()};
  const Tensor xc = xv.contiguous();  // the kernel views x as [rows, norm_size]
  Tensor y = Tensor::empty(xv.shape(), {xv.dtype(), xv.device()});
  Tensor mean = Tensor::empty({rows}, so), rstd = Tensor::empty({rows}, so);
  backend_for(xv.device())
      .layer_norm_forward(xc, gv.defined() ? &gv : nullptr, bv.defined() ? &bv : nullptr, norm_size,
                          o.epsilon, y, mean, rstd);
  if (!should_record(x, gamma, beta)) return Variable(std::move(y));
  return make_variable(
      std::move(y), "layer_norm", {x, gamma, beta},
      [xc, gv, mean, rstd, norm_size, gs = gamma.defined() ? gamma.shape() : Shape(),
       bs = beta.defined() ? beta.shape() : Shape(),
       gd = gamma.defined() ? gamma.dtype() : xv.dtype(),
       bd = beta.defined() ? beta.dtype() : xv.dtype()](const Tensor& g,
                                                        const std::vector<bool>& need) {
        Grads grads(3);
        Tensor dx = Tensor::empty(xc.shape(), {xc.dtype(), xc.device()});
        Tensor dgamma = need[1] ? Tensor::empty({norm_size}, {gd, xc.device()}) : Tensor();
        Tensor dbeta = need[2] ? Tensor::empty({norm_size}, {bd, xc.device()}) : Tensor();
        const Tensor dy = (g.dtype() == xc.dtype() ? g : g.to(xc.dtype())).contiguous();
        backend_for(xc.device())
            .layer_norm_backward(dy, xc, gv.defined() ? &gv : nullptr, mean, rstd, norm_size, dx,
                                 need[1] ? &dgamma : nullptr, need[2] ? &dbeta : nullptr);
        if (need[0]) grads[0] = std::move(dx);
        if (need[1]) grads[1] = dgamma.reshape(gs);
        if (need[2]) grads[2] = dbeta.reshape(bs);
        return grads;
      });
}

Variable rms_norm(const Variable& x, const Variable& scale, double epsilon) {
  detail::check_float_input(x, "rms_norm", "input");
  OSPREY_CHECK(x.ndim() >= 1, "rms_norm: the input needs an axis to normalize. Received: {}",
               x.shape().to_string());
  OSPREY_CHECK(epsilon > 0, "rms_norm: epsilon must be positive. Received: {}", epsilon);
  const int64_t n = x.shape()[x.ndim() - 1];
  OSPREY_CHECK(!scale.defined() || scale.shape() == Shape{n},
               "rms_norm: scale must have the last axis's size [{}]. Received: {}", n,
               scale.defined() ? scale.shape().to_string() : std::string());
  const Variable y = mul(x, rsqrt(add(mean(square(x), {-1}, true), epsilon)));
  return scale.defined() ? mul(y, scale) : y;
}

}  // namespace osprey::autograd
