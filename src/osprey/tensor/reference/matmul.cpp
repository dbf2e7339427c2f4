// Reference batched matmul: out[..., M, N] = act(a[..., M, K] @ b[..., K, N] + bias[N] (+ out)).
// Every product is summed in double and rounded once into out's dtype, so it is the most
// accurate answer any fast kernel can be compared with.

#include <cmath>
#include <numbers>

#include "osprey/tensor/reference/indexing.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

namespace {

double activate(Activation act, double v) {
  switch (act) {
    case Activation::none:
      return v;
    case Activation::relu:
      return v > 0.0 ? v : 0.0;
    case Activation::gelu_tanh: {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
    }
    case Activation::gelu_erf:
      return 0.5 * v * (1.0 + std::erf(v / std::numbers::sqrt2));
    case Activation::sigmoid:
      return 1.0 / (1.0 + std::exp(-v));
    case Activation::tanh:
      return std::tanh(v);
  }
  OSPREY_ASSERT(false, "matmul: unknown activation {}", static_cast<int>(act));
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& out,
            const MatmulParams& p) {
  const int nd = out.ndim();
  OSPREY_ASSERT(nd >= 2 && a.ndim() == nd && b.ndim() == nd,
                "reference::matmul: ranks differ: a {}, b {}, out {}", a.describe(), b.describe(),
                out.describe());
  const int64_t m = out.shape()[nd - 2], n = out.shape()[nd - 1], k = a.shape()[nd - 1];
  const int64_t batch = detail::prod(out.shape(), 0, nd - 2);
  OSPREY_ASSERT(a.shape()[nd - 2] == m && b.shape()[nd - 2] == k && b.shape()[nd - 1] == n,
                "reference::matmul: shapes {} x {} -> {}", a.shape().to_string(),
                b.shape().to_string(), out.shape().to_string());

  const std::vector<double> av = detail::to_doubles(a), bv = detail::to_doubles(b);
  const std::vector<double> biasv = bias ? detail::to_doubles(*bias) : std::vector<double>{};
  // With accumulate the old out joins the sum before the activation, as oneDNN's sum post-op.
  std::vector<double> ov = p.accumulate ? detail::to_doubles(out)
                                        : std::vector<double>(static_cast<size_t>(out.numel()));

  for (int64_t bi = 0; bi < batch; ++bi) {
    const double* ab = av.data() + bi * m * k;
    const double* bb = bv.data() + bi * k * n;
    double* ob = ov.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = p.accumulate ? ob[i * n + j] : 0.0;
        for (int64_t l = 0; l < k; ++l) acc += ab[i * k + l] * bb[l * n + j];
        if (bias) acc += biasv[static_cast<size_t>(j)];
        ob[i * n + j] = activate(p.activation, acc);
      }
    }
  }
  detail::from_doubles(ov, out);
}

}  // namespace osprey::reference
