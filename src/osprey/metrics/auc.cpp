#include "osprey/metrics/auc.h"

#include <algorithm>
#include <cmath>

#include "osprey/metrics/metric_inputs.h"

namespace osprey::metrics {

namespace {
constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()
constexpr size_t kLanes = 4;

std::vector<double> suffix_sums(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  double s = 0.0;
  for (size_t i = v.size(); i-- > 0;) out[i] = (s += v[i]);
  return out;
}
double divide_no_nan(double a, double b) { return b != 0.0 ? a / b : 0.0; }
}  // namespace

AUC::AUC(AUCOptions options) : Metric("AUC", options.name), options_(std::move(options)) {
  OSPREY_CHECK(options_.num_thresholds > 1,
               "AUC: num_thresholds must be > 1. Received: num_thresholds={}",
               options_.num_thresholds);
  OSPREY_CHECK_T(NotImplementedError, options_.curve == "ROC",
                 "AUC: curve '{}' is not implemented. Expected: 'ROC'", options_.curve);
  const std::string& s = options_.summation_method;
  OSPREY_CHECK(s == "interpolation" || s == "minoring" || s == "majoring",
               "AUC: invalid summation_method. Expected one of: interpolation, minoring, majoring. "
               "Received: "
               "summation_method='{}'",
               s);
  summation_ = s == "interpolation" ? Summation::interpolation
               : s == "minoring"    ? Summation::minoring
                                    : Summation::majoring;
  const int t = options_.num_thresholds;
  thresholds_.push_back(0.0 - kEpsilon);
  for (int i = 0; i < t - 2; ++i)
    thresholds_.push_back(static_cast<double>(i + 1) / static_cast<double>(t - 1));
  thresholds_.push_back(1.0 + kEpsilon);
  reset_state();
}

void AUC::reset_state() {
  positives_.assign(thresholds_.size(), 0.0);
  negatives_.assign(thresholds_.size(), 0.0);
}

std::vector<double> AUC::state_values() const {
  std::vector<double> v = positives_;
  v.insert(v.end(), negatives_.begin(), negatives_.end());
  return v;
}

void AUC::load_state_values(const std::vector<double>& values) {
  const size_t n = thresholds_.size();
  OSPREY_CHECK(values.size() == 2 * n,
               "{}: the saved state holds {} values; this AUC ({} thresholds) keeps {}", name(),
               values.size(), n, 2 * n);
  positives_.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n));
  negatives_.assign(values.begin() + static_cast<std::ptrdiff_t>(n), values.end());
}

void AUC::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor* sample_weight) {
  OSPREY_CHECK(y_true.defined() && y_pred.defined(),
               "AUC: y_true and y_pred must be defined tensors");
  OSPREY_CHECK(
      y_true.numel() == y_pred.numel(),
      "AUC: y_true and y_pred must have the same number of elements. Received: y_true.shape={}, "
      "y_pred.shape={}",
      y_true.shape().to_string(), y_pred.shape().to_string());
  const Tensor t = detail::host_numbers(y_true), p = detail::host_floats(y_pred);
  const detail::Weights w(sample_weight, y_pred.shape(), "AUC");
  const int64_t samples = w.samples(), per = w.per_sample();
  const int last = static_cast<int>(thresholds_.size()) - 1;
  const bool from_logits = options_.from_logits;
  const size_t buckets = thresholds_.size();
  scratch_.assign(2 * kLanes * buckets, 0.0);
  double* pos = scratch_.data();
  double* neg = pos + kLanes * buckets;
  detail::visit_numbers(t, [&](const auto* tp) {
    detail::visit_floats(p, [&](const auto* pp) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(pp)>>;
      // Keras: bucket = ceil(p * (T - 1)) - 1 in y_pred's precision, at least 0; bucket b holds
      // the predictions above thresholds 0..b and at or below threshold b + 1.
      const T scale = static_cast<T>(last);
      auto bucket_of = [&](T v) -> int {
        if (from_logits) v = static_cast<T>(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
        const T x = std::ceil(v * scale);
        if (!(x >= T(1))) return x == x ? 0 : -1;  // at or below 0 (or NaN: -1, skipped)
        return x > static_cast<T>(last) ? last : static_cast<int>(x) - 1;
      };
      // kLanes interleaved histograms: consecutive predictions in one bucket (common: most
      // scores of a 1000-class softmax are near 0) would otherwise chain every add through memory.
      for (int64_t i = 0; i < samples; ++i) {
        for (int64_t k = i * per; k < (i + 1) * per; ++k) {
          const int b = bucket_of(pp[k]);
          if (b < 0) continue;  // NaN predictions carry no information
          const double wk = w.defined() ? w.at(i, k - i * per) : 1.0;
          const double label = static_cast<double>(tp[k]);
          const size_t slot = static_cast<size_t>(k % kLanes) * buckets + static_cast<size_t>(b);
          pos[slot] += label * wk;
          neg[slot] += (1.0 - label) * wk;
        }
      }
    });
  });
  for (size_t lane = 0; lane < kLanes; ++lane) {
    for (size_t b = 0; b < buckets; ++b) {
      positives_[b] += pos[lane * buckets + b];
      negatives_[b] += neg[lane * buckets + b];
    }
  }
}

std::vector<double> AUC::true_positives() const { return suffix_sums(positives_); }
std::vector<double> AUC::false_positives() const { return suffix_sums(negatives_); }

std::vector<double> AUC::false_negatives() const {
  std::vector<double> tp = true_positives(), out(tp.size());
  for (size_t i = 0; i < tp.size(); ++i) out[i] = tp[0] - tp[i];
  return out;
}

std::vector<double> AUC::true_negatives() const {
  std::vector<double> fp = false_positives(), out(fp.size());
  for (size_t i = 0; i < fp.size(); ++i) out[i] = fp[0] - fp[i];
  return out;
}

double AUC::result() const {
  const std::vector<double> tp = true_positives(), fp = false_positives(), fn = false_negatives(),
                            tn = true_negatives();
  double area = 0.0;
  for (size_t i = 0; i + 1 < tp.size(); ++i) {
    const double y0 = divide_no_nan(tp[i], tp[i] + fn[i]),
                 y1 = divide_no_nan(tp[i + 1], tp[i + 1] + fn[i + 1]);
    const double x0 = divide_no_nan(fp[i], fp[i] + tn[i]),
                 x1 = divide_no_nan(fp[i + 1], fp[i + 1] + tn[i + 1]);
    const double height = summation_ == Summation::interpolation ? (y0 + y1) / 2.0
                          : summation_ == Summation::minoring    ? std::min(y0, y1)
                                                                 : std::max(y0, y1);
    area += (x0 - x1) * height;
  }
  return area;
}

nlohmann::json AUC::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["num_thresholds"] = options_.num_thresholds;
  c["curve"] = options_.curve;
  c["summation_method"] = options_.summation_method;
  c["multi_label"] = false;
  c["from_logits"] = options_.from_logits;
  return c;
}

}  // namespace osprey::metrics
