#include "osprey/losses/crossentropy.h"

#include <cmath>

#include "osprey/autograd/ops/loss.h"
#include "osprey/losses/loss_op.h"

namespace osprey::losses {

namespace {

constexpr const char* kSparse = "SparseCategoricalCrossentropy";
constexpr const char* kCategorical = "CategoricalCrossentropy";

// y_pred [..., C] -> lead [...] and C.
std::pair<Shape, int64_t> class_shape(const Shape& pred, const char* loss) {
  OSPREY_CHECK(
      pred.ndim() >= 1 && pred[pred.ndim() - 1] > 0,
      "{}: y_pred must be [..., classes] with at least one class. Received: y_pred.shape={}", loss,
      pred.to_string());
  Shape lead = pred;
  lead.erase(lead.ndim() - 1);
  return {lead, pred[pred.ndim() - 1]};
}

// Class indices as a contiguous int32/int64 tensor [R] (int32/int64 input without ignore_class
// is used as it is; anything else is converted to int64), range-checked; ignored labels become 0
// with mask 0.
Tensor sparse_labels(const Tensor& y_true, const Shape& pred, const Shape& lead, int64_t classes,
                     const std::optional<int64_t>& ignore, DType mask_dtype, Tensor* mask) {
  Shape lead1 = lead;
  lead1.push_back(1);
  OSPREY_CHECK(
      y_true.shape() == lead || y_true.shape() == lead1,
      "{}: y_true must hold one class index per sample, of shape {} or {} to match y_pred {}. "
      "Received: y_true.shape={}",
      kSparse, lead.to_string(), lead1.to_string(), pred.to_string(), y_true.shape().to_string());
  const int64_t n = lead.numel();
  const Tensor src = detail::as_compute(y_true, y_true.dtype()).reshape({n});
  Tensor out;
  if (!ignore && (src.dtype() == DType::int32 || src.dtype() == DType::int64)) {
    out = src;
  } else {
    out = Tensor::empty({n}, {DType::int64, Device::cpu(0)});
    int64_t* lp = out.data<int64_t>();
    visit_dtype(src.dtype(), [&](auto tag) {
      using S = decltype(tag);
      const S* p = src.data<S>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<S>) {
          // int8 labels are signed class ids: -1 must stay -1 (an ignore_class), so sign-extend.
          lp[i] = static_cast<int64_t>(p[i]);  // NOLINT(bugprone-signed-char-misuse)
        } else {
          const double v = to_double(p[i]);
          OSPREY_CHECK(
              std::isfinite(v) && v == std::floor(v),
              "{}: float labels must hold integer class indices. Received: {} at sample {}",
              kSparse, v, i);
          lp[i] = static_cast<int64_t>(v);
        }
      }
    });
    if (ignore) {
      *mask = Tensor::empty({n}, {mask_dtype, Device::cpu(0)});
      detail::visit_compute(mask_dtype, [&](auto tag) {
        auto* mp = mask->data<decltype(tag)>();
        for (int64_t i = 0; i < n; ++i) {
          mp[i] = lp[i] != *ignore ? 1 : 0;
          if (lp[i] == *ignore) lp[i] = 0;
        }
      });
    }
  }
  const int32_t* l32 = out.dtype() == DType::int32 ? out.data<int32_t>() : nullptr;
  const int64_t* l64 = l32 ? nullptr : out.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = l32 ? l32[i] : l64[i];
    OSPREY_CHECK(label >= 0 && label < classes,
                 "{}: label {} of sample {} is out of range for {} classes", kSparse, label, i,
                 classes);
  }
  return out;
}

// Whether every row of t [R, C] (compute dtype, contiguous) sums to 1 within tol.
bool rows_sum_to_one(const Tensor& t, int64_t classes, double tol) {
  return detail::visit_compute(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); i += classes) {
      double s = 0.0;
      for (int64_t c = 0; c < classes; ++c) s += static_cast<double>(p[i + c]);
      if (!(std::fabs(s - 1.0) <= tol)) return false;
    }
    return true;
  });
}

// The logits under y_pred when it is a recorded softmax over the last axis, else undefined.
Variable softmax_logits(const Variable& y_pred, const Tensor& probs, int64_t classes) {
  Variable x = detail::producer_input(y_pred, "softmax");
  return x.defined() && rows_sum_to_one(probs, classes, 1e-3) ? x : Variable();
}

// Keras's cross-entropy from probabilities, row by row: q = p / sum(p), clipped; loss =
// -sum_c t_c log(q_c) where t is one-hot (labels) or the smoothed distribution dist. The
// derivative goes through the clip (zero outside it) and the normalization.
Variable probs_crossentropy(const char* op, const Variable& y_pred, const Tensor& p,
                            const Shape& lead, int64_t classes, const Tensor& labels,
                            const Tensor& dist, double smoothing) {
  const DType d = p.dtype();
  const int64_t rows = lead.numel();
  const bool grad = autograd::should_record(y_pred);
  Tensor losses = Tensor::empty(lead, {d, y_pred.device()});
  Tensor dpred = grad ? Tensor::empty(p.shape(), {d, y_pred.device()}) : Tensor();
  // Plain variables, not a structured binding: the lambda below captures them, which clang 14
  // (the fuzz build's compiler) does not allow for bindings.
  const auto bounds = detail::clip_bounds(d);
  const double lo = bounds.first, hi = bounds.second;
  detail::visit_compute(d, [&](auto tag) {
    using T = decltype(tag);
    const T* pp = p.data<T>();
    const T* tp = dist.defined() ? dist.data<T>() : nullptr;
    const int32_t* l32 =
        labels.defined() && labels.dtype() == DType::int32 ? labels.data<int32_t>() : nullptr;
    const int64_t* l64 =
        labels.defined() && labels.dtype() == DType::int64 ? labels.data<int64_t>() : nullptr;
    T* lp = losses.data<T>();
    T* dp = grad ? dpred.data<T>() : nullptr;
    const double keep = 1.0 - smoothing, uniform = smoothing / static_cast<double>(classes);
    parallel_for(0, rows, detail::row_grain(classes), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* row = pp + i * classes;
        const int64_t label = l32 ? l32[i] : l64 ? l64[i] : -1;
        double sum = 0.0;
        for (int64_t c = 0; c < classes; ++c) sum += static_cast<double>(row[c]);
        double loss = 0.0, aq = 0.0;
        for (int64_t c = 0; c < classes; ++c) {
          const double t = tp ? static_cast<double>(tp[i * classes + c]) * keep + uniform
                              : (c == label ? 1.0 : 0.0);
          const double q = static_cast<double>(row[c]) / sum;
          if (t == 0.0) continue;
          loss -= t * std::log(std::clamp(q, lo, hi));
          if (q >= lo && q <= hi) aq -= t;  // a_c * q_c with a_c = d loss / d q_c = -t / q
        }
        lp[i] = static_cast<T>(loss);
        if (!dp) continue;
        for (int64_t c = 0; c < classes; ++c) {
          const double t = tp ? static_cast<double>(tp[i * classes + c]) * keep + uniform
                              : (c == label ? 1.0 : 0.0);
          const double q = static_cast<double>(row[c]) / sum;
          const double a = t != 0.0 && q >= lo && q <= hi ? -t / q : 0.0;
          dp[i * classes + c] = static_cast<T>((a - aq) / sum);
        }
      }
    });
  });
  return detail::record_loss(std::move(losses), std::move(dpred), y_pred, op);
}

// Cross-entropy from logits for targets whose rows need not sum to 1 (the fused kernel assumes
// they do): loss = sum_c t_c (lse - x_c); d x_c = softmax_c * sum(t) - t_c.
Variable unnormalized_logits_crossentropy(const Variable& logits, const Tensor& dist,
                                          const Shape& lead, int64_t classes, double smoothing) {
  const DType d = dist.dtype();
  const Tensor x = detail::as_compute(logits.value(), d);
  const int64_t rows = lead.numel();
  const bool grad = autograd::should_record(logits);
  Tensor losses = Tensor::empty(lead, {d, logits.device()});
  Tensor dpred = grad ? Tensor::empty(x.shape(), {d, logits.device()}) : Tensor();
  detail::visit_compute(d, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const T* tp = dist.data<T>();
    T* lp = losses.data<T>();
    T* dp = grad ? dpred.data<T>() : nullptr;
    const double keep = 1.0 - smoothing, uniform = smoothing / static_cast<double>(classes);
    parallel_for(0, rows, detail::row_grain(classes), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* row = xp + i * classes;
        double mx = -INFINITY, s = 0.0, st = 0.0, loss = 0.0;
        for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, static_cast<double>(row[c]));
        for (int64_t c = 0; c < classes; ++c) s += std::exp(static_cast<double>(row[c]) - mx);
        const double lse = mx + std::log(s);
        for (int64_t c = 0; c < classes; ++c) {
          const double t = static_cast<double>(tp[i * classes + c]) * keep + uniform;
          st += t;
          if (t != 0.0) loss += t * (lse - static_cast<double>(row[c]));
        }
        lp[i] = static_cast<T>(loss);
        if (!dp) continue;
        for (int64_t c = 0; c < classes; ++c) {
          const double t = static_cast<double>(tp[i * classes + c]) * keep + uniform;
          dp[i * classes + c] =
              static_cast<T>(std::exp(static_cast<double>(row[c]) - lse) * st - t);
        }
      }
    });
  });
  return detail::record_loss(std::move(losses), std::move(dpred), logits,
                             "categorical_crossentropy");
}

}  // namespace

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(
    SparseCategoricalCrossentropyOptions options)
    : Loss(kSparse, options.name.empty() ? "sparse_categorical_crossentropy" : options.name,
           options.reduction),
      options_(std::move(options)) {}

nlohmann::json SparseCategoricalCrossentropy::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["ignore_class"] =
      options_.ignore_class ? nlohmann::json(*options_.ignore_class) : nlohmann::json(nullptr);
  return c;
}

Loss::Computed SparseCategoricalCrossentropy::compute(const Tensor& y_true,
                                                      const Variable& y_pred) const {
  detail::check_inputs(y_true, y_pred, kSparse);
  const auto [lead, classes] = class_shape(y_pred.shape(), kSparse);
  const DType d = detail::compute_dtype(y_pred.dtype());
  Computed out;
  const Tensor labels =
      sparse_labels(y_true, y_pred.shape(), lead, classes, options_.ignore_class, d, &out.mask);
  Tensor p;
  Variable logits = y_pred;
  if (!options_.from_logits) {
    p = detail::as_compute(y_pred.value(), d);
    logits = softmax_logits(y_pred, p, classes);
  }
  if (logits.defined()) {
    out.losses = autograd::cross_entropy(logits, labels.reshape(lead), {.reduction = "none"});
  } else {
    out.losses = probs_crossentropy("sparse_categorical_crossentropy", y_pred, p, lead, classes,
                                    labels, Tensor(), 0.0);
  }
  return out;
}

CategoricalCrossentropy::CategoricalCrossentropy(CategoricalCrossentropyOptions options)
    : Loss(kCategorical, options.name.empty() ? "categorical_crossentropy" : options.name,
           options.reduction),
      options_(std::move(options)) {
  OSPREY_CHECK(options_.label_smoothing >= 0.0 && options_.label_smoothing <= 1.0,
               "{}: label_smoothing must be in [0, 1]. Received: label_smoothing={}", kCategorical,
               options_.label_smoothing);
}

nlohmann::json CategoricalCrossentropy::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  c["axis"] = -1;
  return c;
}

Loss::Computed CategoricalCrossentropy::compute(const Tensor& y_true,
                                                const Variable& y_pred) const {
  detail::check_inputs(y_true, y_pred, kCategorical);
  const auto [lead, classes] = class_shape(y_pred.shape(), kCategorical);
  const DType d = detail::compute_dtype(y_pred.dtype());
  const Tensor t =
      detail::as_compute(detail::align_targets(y_true, y_pred.shape(), kCategorical), d);
  const double s = options_.label_smoothing;
  Tensor p;
  Variable logits = y_pred;
  if (!options_.from_logits) {
    p = detail::as_compute(y_pred.value(), d);
    logits = softmax_logits(y_pred, p, classes);
  }
  if (!logits.defined()) {
    return {
        probs_crossentropy("categorical_crossentropy", y_pred, p, lead, classes, Tensor(), t, s),
        {}};
  }
  if (rows_sum_to_one(t, classes, 1e-5)) {
    return {autograd::cross_entropy(logits, t, {.reduction = "none", .label_smoothing = s}), {}};
  }
  return {unnormalized_logits_crossentropy(logits, t, lead, classes, s), {}};
}

}  // namespace osprey::losses
