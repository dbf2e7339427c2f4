#include "osprey/tensor/align_targets.h"

namespace osprey::detail {

Tensor align_targets(const Tensor& y_true, const Shape& pred, const char* who) {
  const Shape& t = y_true.shape();
  if (t == pred) return y_true;
  const bool squeeze = t.ndim() == pred.ndim() + 1 && t[t.ndim() - 1] == 1;
  const bool expand = pred.ndim() == t.ndim() + 1 && pred[pred.ndim() - 1] == 1;
  if ((squeeze || expand) && t.numel() == pred.numel()) {
    Shape a = t;
    if (squeeze)
      a.erase(a.ndim() - 1);
    else
      a.push_back(1);
    if (a == pred) return y_true.reshape(pred);
  }
  OSPREY_THROW(
      ValueError,
      "{}: y_true and y_pred must have the same shape. Received: y_true.shape={}, y_pred.shape={}",
      who, t.to_string(), pred.to_string());
}

}  // namespace osprey::detail
