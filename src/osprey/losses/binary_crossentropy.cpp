#include "osprey/losses/binary_crossentropy.h"

#include <cmath>

#include "osprey/losses/loss_op.h"

namespace osprey::losses {

namespace {
constexpr const char* kBinary = "BinaryCrossentropy";

struct BceTerm {
  double value, derivative;
};

// Stable in x either way: exp only ever sees -|x|.
BceTerm from_logits(double z, double x) {
  const double e = std::exp(-std::fabs(x));
  const double sig = x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
  return {std::max(x, 0.0) - x * z + std::log1p(e), sig - z};
}
}  // namespace

BinaryCrossentropy::BinaryCrossentropy(BinaryCrossentropyOptions options)
    : Loss(kBinary, options.name.empty() ? "binary_crossentropy" : options.name, options.reduction),
      options_(std::move(options)) {
  OSPREY_CHECK(options_.label_smoothing >= 0.0 && options_.label_smoothing <= 1.0,
               "{}: label_smoothing must be in [0, 1]. Received: label_smoothing={}", kBinary,
               options_.label_smoothing);
}

nlohmann::json BinaryCrossentropy::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  c["axis"] = -1;
  return c;
}

Loss::Computed BinaryCrossentropy::compute(const Tensor& y_true, const Variable& y_pred) const {
  detail::check_inputs(y_true, y_pred, kBinary);
  const Tensor t = detail::align_targets(y_true, y_pred.shape(), kBinary);
  const double keep = 1.0 - options_.label_smoothing, half = 0.5 * options_.label_smoothing;
  Variable logits = options_.from_logits ? y_pred : detail::producer_input(y_pred, "sigmoid");
  if (logits.defined()) {
    return {detail::mean_over_last_axis(
                "binary_crossentropy", t, logits,
                [=](double y, double x) { return from_logits(y * keep + half, x); }),
            {}};
  }
  // Plain variables, not a structured binding: the lambda below captures them, which clang 14
  // (the fuzz build's compiler) does not allow for bindings.
  const auto bounds = detail::clip_bounds(detail::compute_dtype(y_pred.dtype()));
  const double lo = bounds.first, hi = bounds.second;
  return {detail::mean_over_last_axis(
              "binary_crossentropy", t, y_pred,
              [=](double y, double p) {
                const double z = y * keep + half;
                const double pc = std::clamp(p, lo, hi);
                const double value = -(z * std::log(pc) + (1.0 - z) * std::log(1.0 - pc));
                const bool inside = p >= lo && p <= hi;
                return BceTerm{value, inside ? (1.0 - z) / (1.0 - pc) - z / pc : 0.0};
              }),
          {}};
}

}  // namespace osprey::losses
