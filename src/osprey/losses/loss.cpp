#include "osprey/losses/loss.h"

#include "osprey/autograd/ops/elementwise.h"
#include "osprey/autograd/ops/reduction.h"
#include "osprey/losses/loss_op.h"
#include "osprey/tensor/ops.h"

namespace osprey::losses {

namespace {

// The sample weights as a tensor that broadcasts against `losses`: a scalar, losses' shape (or it
// with a trailing size-1 axis), or a leading part of it, right-padded with size-1 axes.
Tensor broadcast_weight(const Tensor& sw, const Tensor& losses, const char* loss) {
  const Shape& ls = losses.shape();
  const Tensor w = detail::as_compute(sw, losses.dtype());
  if (w.numel() == 1) return w.reshape(Shape{});
  Shape s = w.shape();
  if (s.ndim() == ls.ndim() + 1 && s[s.ndim() - 1] == 1) s.erase(s.ndim() - 1);
  bool ok = s.ndim() <= ls.ndim();
  while (ok && s.ndim() < ls.ndim()) s.push_back(1);
  for (int i = 0; ok && i < ls.ndim(); ++i) ok = s[i] == ls[i] || s[i] == 1;
  OSPREY_CHECK(
      ok,
      "{}: sample_weight of shape {} does not broadcast to the per-sample losses of shape {}. "
      "Expected: a scalar, shape {}, or a leading part of it",
      loss, sw.shape().to_string(), ls.to_string(), ls.to_string());
  return w.reshape(s);
}

// The loss's own mask (ignore_class) and the mask y_pred carries (Variable::mask(), left by
// Embedding(mask_zero) or Masking through the model: the padded steps of a sequence), combined
// into one 0/1 tensor of the per-sample losses' shape; undefined when neither is there.
Tensor combined_mask(Tensor own, const Variable& y_pred, const Tensor& losses, const char* loss) {
  const Tensor& carried = y_pred.mask();
  if (!carried.defined()) return own;
  const Shape& ls = losses.shape();
  bool ok = carried.ndim() <= ls.ndim();
  for (int i = 0; ok && i < carried.ndim(); ++i) ok = carried.size(i) == ls[i];
  OSPREY_CHECK(ok,
               "{}: y_pred's mask of shape {} does not match the per-sample losses of shape {} "
               "(it must be their leading axes, as [batch, steps] for losses [batch, steps])",
               loss, carried.shape().to_string(), ls.to_string());
  Shape padded = carried.shape();
  while (padded.ndim() < ls.ndim()) padded.push_back(1);
  Tensor m = detail::as_compute(carried, losses.dtype()).reshape(padded).expand(ls).contiguous();
  if (own.defined()) m = osprey::mul(m, detail::as_compute(own, losses.dtype()).reshape(ls));
  return m;
}

}  // namespace

Reduction parse_reduction(const std::string& name, const char* loss) {
  if (name == "sum_over_batch_size" || name == "mean") return Reduction::sum_over_batch_size;
  if (name == "sum") return Reduction::sum;
  if (name == "none") return Reduction::none;
  if (name == "mean_with_sample_weight") return Reduction::mean_with_sample_weight;
  OSPREY_THROW(ValueError,
               "{}: invalid value for argument `reduction`. Expected one of: sum_over_batch_size, "
               "mean, sum, "
               "none, mean_with_sample_weight. Received: reduction='{}'",
               loss, name);
}

const char* reduction_name(Reduction r) noexcept {
  switch (r) {
    case Reduction::sum_over_batch_size:
      return "sum_over_batch_size";
    case Reduction::sum:
      return "sum";
    case Reduction::none:
      return "none";
    case Reduction::mean_with_sample_weight:
      return "mean_with_sample_weight";
  }
  return "?";
}

Loss::Loss(const char* class_name, std::string name, const std::string& reduction)
    : class_name_(class_name),
      name_(std::move(name)),
      reduction_(parse_reduction(reduction, class_name)) {}

Variable Loss::operator()(const Tensor& y_true, const Variable& y_pred,
                          const Tensor* sample_weight) const {
  Computed c = compute(y_true, y_pred);
  const Tensor& lv = c.losses.value();
  c.mask = combined_mask(c.mask, y_pred, lv, class_name());
  Tensor w;  // undefined: every weight is 1
  if (sample_weight != nullptr) {
    OSPREY_CHECK(sample_weight->defined(), "{}: sample_weight is an undefined Tensor",
                 class_name());
    w = broadcast_weight(*sample_weight, lv, class_name());
  }
  if (c.mask.defined()) {
    const Tensor m = detail::as_compute(c.mask, lv.dtype()).reshape(lv.shape());
    w = w.defined() ? osprey::mul(w, m) : m;
  }
  if (w.defined() && w.device() != lv.device()) w = w.to(lv.device());
  Variable weighted = w.defined() ? autograd::mul(c.losses, Variable(w)) : c.losses;
  if (reduction_ == Reduction::none) return weighted;
  if (!w.defined() && weighted.numel() > 0 &&
      (reduction_ == Reduction::sum_over_batch_size ||
       reduction_ == Reduction::mean_with_sample_weight)) {
    return autograd::mean(weighted);  // the common case: one node
  }
  Variable total = autograd::sum(weighted);
  if (reduction_ == Reduction::sum) return total;
  double denom = static_cast<double>(weighted.numel());
  if (reduction_ == Reduction::sum_over_batch_size && c.mask.defined()) {
    denom = osprey::sum(c.mask.to(DType::float64)).item();
  } else if (reduction_ == Reduction::mean_with_sample_weight && w.defined()) {
    denom = osprey::sum(w.to(DType::float64).expand(weighted.shape())).item();
  }
  return autograd::mul(total, denom != 0.0 ? 1.0 / denom : 0.0);
}

Variable Loss::call(const Tensor& y_true, const Variable& y_pred) const {
  Computed c = compute(y_true, y_pred);
  const Tensor& lv = c.losses.value();
  c.mask = combined_mask(c.mask, y_pred, lv, class_name());
  if (!c.mask.defined()) return c.losses;
  return autograd::mul(c.losses,
                       Variable(detail::as_compute(c.mask, lv.dtype()).reshape(lv.shape())));
}

nlohmann::json Loss::get_config() const {
  return {{"name", name_}, {"reduction", reduction_name(reduction_)}};
}

}  // namespace osprey::losses
