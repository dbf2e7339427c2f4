#include "osprey/autograd/ops/loss.h"

#include "osprey/autograd/ops/cast.h"
#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

namespace {

enum class Reduction { none, sum, mean };

Reduction parse_reduction(const std::string& r) {
  if (r == "mean" || r == "sum_over_batch_size") return Reduction::mean;
  if (r == "sum") return Reduction::sum;
  if (r == "none") return Reduction::none;
  OSPREY_THROW(ValueError,
               "cross_entropy: reduction must be 'mean', 'sum' or 'none'. Received: '{}'", r);
}

}  // namespace

Variable cross_entropy(const Variable& logits_in, const Tensor& labels,
                       const CrossEntropyOptions& o) {
  detail::check_float_input(logits_in, "cross_entropy", "logits");
  // 16-bit logits go through float32 (mixed precision keeps the loss in float32); the cast's
  // backward returns the gradient to the logits' dtype.
  const Variable logits =
      is_low_precision(logits_in.dtype()) ? cast(logits_in, DType::float32) : logits_in;
  check_defined(labels, "cross_entropy", "labels");
  const Tensor& lv = logits.value();
  check_same_device({&lv, &labels}, "cross_entropy");
  const Reduction reduction = parse_reduction(o.reduction);
  OSPREY_CHECK(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0,
               "cross_entropy: label_smoothing must be in [0, 1]. Received: {}", o.label_smoothing);
  OSPREY_CHECK(lv.ndim() >= 1 && lv.size(-1) > 0,
               "cross_entropy: logits must be [..., classes] with at least one class. Received: {}",
               lv.shape().to_string());
  const int64_t c = lv.size(-1);
  const int64_t n = lv.numel() / c;
  Shape lead = lv.shape();
  lead.erase(lead.ndim() - 1);
  const bool sparse = labels.dtype() == DType::int32 || labels.dtype() == DType::int64;
  Tensor lab;
  if (sparse) {
    Shape lead1 = lead;
    lead1.push_back(1);
    OSPREY_CHECK(
        labels.shape() == lead || labels.shape() == lead1,
        "cross_entropy: integer labels must have shape {} to match logits {}. Received: {}",
        lead.to_string(), lv.shape().to_string(), labels.shape().to_string());
    lab = labels.reshape({n});
  } else {
    OSPREY_CHECK(is_floating(labels.dtype()),
                 "cross_entropy: labels must be int32/int64 class indices or a float distribution. "
                 "Received: {}",
                 labels.describe());
    OSPREY_CHECK(labels.shape() == lv.shape(),
                 "cross_entropy: float labels must have the logits' shape {}. Received: {}",
                 lv.shape().to_string(), labels.shape().to_string());
    lab = labels.reshape({n, c});
  }
  const Tensor l2 = lv.reshape({n, c});
  const DType loss_dtype = lv.dtype() == DType::float64 ? DType::float64 : DType::float32;
  Tensor losses = Tensor::empty({n}, {loss_dtype, lv.device()});
  Tensor probs = Tensor::empty({n, c}, {lv.dtype(), lv.device()});
  const Backend& backend = backend_for(lv.device());
  if (n > 0) backend.cross_entropy_forward(l2, lab, o.label_smoothing, losses, probs);
  Tensor y;
  switch (reduction) {
    case Reduction::none:
      y = losses.view(lead);
      break;
    case Reduction::sum:
      y = osprey::sum(losses);
      break;
    case Reduction::mean:
      OSPREY_CHECK(n > 0, "cross_entropy: reduction 'mean' over an empty batch (logits {})",
                   lv.shape().to_string());
      y = osprey::mean(losses);
      break;
  }
  if (!should_record(logits)) return Variable(std::move(y));
  return make_variable(
      std::move(y), "cross_entropy", {logits},
      [probs, lab, ls = o.label_smoothing, reduction, n, loss_dtype, ls_shape = lv.shape()](
          const Tensor& g, const std::vector<bool>&) {
        Tensor dloss;  // [n], the gradient of each sample's loss
        const Tensor gl = g.to(loss_dtype);
        if (reduction == Reduction::none) {
          dloss = gl.reshape({n});
        } else {
          const double scale = reduction == Reduction::mean ? 1.0 / static_cast<double>(n) : 1.0;
          dloss = osprey::mul(gl.reshape({1}).expand({n}), scale);
        }
        Tensor dlogits = Tensor::empty(probs.shape(), {probs.dtype(), probs.device()});
        if (n > 0)
          backend_for(probs.device()).cross_entropy_backward(probs, lab, ls, dloss, dlogits);
        return std::vector<Tensor>{dlogits.view(ls_shape)};
      });
}

}  // namespace osprey::autograd
