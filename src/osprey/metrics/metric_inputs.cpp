#include "osprey/metrics/metric_inputs.h"

namespace osprey::metrics::detail {

Tensor host_floats(const Tensor& t) {
  const Tensor h = t.device().is_cpu() ? t : t.to(Device::cpu(0));
  const DType d = h.dtype();
  if (d == DType::float32 || d == DType::float64) return h.contiguous();
  return h.to(is_low_precision(d) ? DType::float32 : DType::float64).contiguous();
}

Tensor host_numbers(const Tensor& t) {
  const Tensor h = t.device().is_cpu() ? t : t.to(Device::cpu(0));
  const DType d = h.dtype();
  if (d == DType::float32 || d == DType::float64 || d == DType::int32 || d == DType::int64)
    return h.contiguous();
  return h.to(is_low_precision(d) ? DType::float32 : DType::int32).contiguous();
}

std::pair<Shape, int64_t> class_shape(const Shape& pred, const char* metric) {
  OSPREY_CHECK(
      pred.ndim() >= 1 && pred[pred.ndim() - 1] > 0,
      "{}: y_pred must be [..., classes] with at least one class. Received: y_pred.shape={}",
      metric, pred.to_string());
  Shape lead = pred;
  lead.erase(lead.ndim() - 1);
  return {lead, pred[pred.ndim() - 1]};
}

void check_sparse_labels(const Shape& labels, const Shape& lead, const Shape& pred,
                         const char* metric) {
  Shape lead1 = lead;
  lead1.push_back(1);
  OSPREY_CHECK(
      labels == lead || labels == lead1,
      "{}: y_true must hold one class index per sample, of shape {} or {} to match y_pred {}. "
      "Received: y_true.shape={}",
      metric, lead.to_string(), lead1.to_string(), pred.to_string(), labels.to_string());
}

Weights::Weights(const Tensor* sw, const Shape& values, const char* metric) {
  samples_ = values.ndim() == 0 ? 1 : values[0];
  per_sample_ = samples_ > 0 ? values.numel() / samples_ : 0;
  if (sw == nullptr) return;
  OSPREY_CHECK(sw->defined(), "{}: sample_weight is an undefined Tensor", metric);
  const Shape& s = sw->shape();
  bool leading_only = s.ndim() >= 1 && s[0] == samples_;
  for (int i = 1; leading_only && i < s.ndim(); ++i) leading_only = s[i] == 1;
  if (sw->numel() == 1) {
    mode_ = Mode::scalar;
  } else if (leading_only || (s.ndim() == 0 && samples_ == 1)) {
    mode_ = Mode::per_sample;
  } else if (sw->numel() == values.numel() && s.ndim() >= 1 && s[0] == samples_) {
    mode_ = Mode::per_value;
  } else {
    OSPREY_THROW(ValueError,
                 "{}: sample_weight of shape {} does not broadcast to the values of shape {}. "
                 "Expected: a scalar, "
                 "one weight per sample [{}], or one per value {}",
                 metric, s.to_string(), values.to_string(), samples_, values.to_string());
  }
  host_ = (sw->device().is_cpu() ? *sw : sw->to(Device::cpu(0))).to(DType::float64).contiguous();
  w_ = host_.data<double>();
}

}  // namespace osprey::metrics::detail
