#include "osprey/losses/loss_op.h"

#include <cmath>

#include "osprey/tensor/ops.h"

namespace osprey::losses::detail {

DType compute_dtype(DType pred) noexcept {
  return pred == DType::float64 ? DType::float64 : DType::float32;
}

Tensor as_compute(const Tensor& t, DType d) {
  const Tensor c = t.device().is_cpu() ? t : t.to(Device::cpu(0));
  return c.to(d).contiguous();
}

std::pair<double, double> clip_bounds(DType d) noexcept {
  if (d == DType::float64) return {1e-7, 1.0 - 1e-7};
  const float eps = 1e-7f;
  return {static_cast<double>(eps), static_cast<double>(1.0f - eps)};
}

std::pair<Shape, int64_t> split_samples(const Shape& s) {
  if (s.ndim() <= 1) return {s, 1};
  Shape lead = s;
  lead.erase(s.ndim() - 1);
  return {lead, s[s.ndim() - 1]};
}

void check_inputs(const Tensor& y_true, const Variable& y_pred, const char* loss) {
  OSPREY_CHECK(y_pred.defined(), "{}: y_pred is an undefined Variable", loss);
  OSPREY_CHECK(y_true.defined(), "{}: y_true is an undefined Tensor", loss);
  OSPREY_CHECK(is_floating(y_pred.dtype()),
               "{}: y_pred must be a floating-point tensor. Received: {}", loss,
               y_pred.value().describe());
}

Variable producer_input(const Variable& y, const char* op) {
  const auto& fn = y.grad_fn();
  if (!fn || fn->released() || std::string_view(fn->op()) != op || fn->num_inputs() != 1) return {};
  Variable x = fn->input(0);
  if (!x.defined() || x.shape() != y.shape()) return {};
  return x;
}

Variable record_loss(Tensor losses, Tensor dpred, const Variable& y_pred, const char* op) {
  if (!dpred.defined() || !autograd::should_record(y_pred)) return Variable(std::move(losses));
  const int64_t rows = losses.numel();
  const int64_t cols = rows > 0 ? dpred.numel() / rows : 0;
  return autograd::make_variable(
      std::move(losses), op, {y_pred},
      [dpred = std::move(dpred), rows, cols](const Tensor& g, const std::vector<bool>&) {
        const Tensor gc = as_compute(g, dpred.dtype());
        Tensor dx = Tensor::empty(dpred.shape(), {dpred.dtype(), dpred.device()});
        visit_compute(dpred.dtype(), [&](auto tag) {
          using T = decltype(tag);
          const T* gp = gc.data<T>();
          const T* dp = dpred.data<T>();
          T* out = dx.data<T>();
          parallel_for(0, rows, row_grain(cols), [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
              const T gi = gp[i];
              for (int64_t j = i * cols; j < (i + 1) * cols; ++j) out[j] = gi * dp[j];
            }
          });
        });
        return std::vector<Tensor>{std::move(dx)};
      });
}

}  // namespace osprey::losses::detail
