#include "osprey/ensemble/boosted_trees.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/io/atomic_file.h"

namespace osprey::ensemble {
namespace {

// Handles freed by RAII, so no path (an error included) leaks one.
struct BoosterFree {
  void operator()(BoosterHandle h) const noexcept { XGBoosterFree(h); }
};
struct DMatrixFree {
  void operator()(DMatrixHandle h) const noexcept { XGDMatrixFree(h); }
};
using Booster = std::unique_ptr<void, BoosterFree>;
using DMatrix = std::unique_ptr<void, DMatrixFree>;

// XGBoost's last error without its "[hh:mm:ss] " prefix and the stack trace it appends.
std::string last_error() {
  std::string s = XGBGetLastError();
  if (const auto p = s.find("Stack trace:"); p != std::string::npos) s.resize(p);
  if (s.size() > 11 && s[0] == '[' && s[9] == ']' && s[10] == ' ') s.erase(0, 11);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.pop_back();
  return s;
}

// Every C call goes through here: a non-zero return becomes E naming the operation and the call.
template <class E = ValueError>
void check(int rc, std::string_view where, std::string_view call) {
  if (rc != 0) [[unlikely]] {
    throw E(fmt::format("{}: {} failed: {}", where, call, last_error()));
  }
}
void check_file(int rc, std::string_view where, std::string_view call,
                const std::filesystem::path& file) {
  if (rc != 0) [[unlikely]] {
    throw IoError(fmt::format("{}: {} failed on {}: {}", where, call, file.string(), last_error()));
  }
}

int xgboost_threads(int requested) { return requested > 0 ? requested : num_threads(); }

// x as a contiguous float32 [N, F] matrix (a copy only when x is not one already).
Tensor feature_matrix(const Tensor& x, std::string_view where, std::string_view name) {
  OSPREY_CHECK(x.defined(), "{}: {} is undefined. Expected a [N, ...] tensor", where, name);
  OSPREY_CHECK(x.ndim() >= 1, "{}: {} must be [N, ...] with one row per sample. Received: {}",
               where, name, x.describe());
  const int64_t n = x.size(0);
  int64_t f = 1;
  for (int a = 1; a < x.ndim(); ++a) f *= x.size(a);
  OSPREY_CHECK(n > 0, "{}: {} is empty (no rows). Received: {}", where, name, x.describe());
  OSPREY_CHECK(f > 0, "{}: {} has no features. Received: {}", where, name, x.describe());
  Tensor m = x.to(DType::float32).contiguous().view({n, f});
  const float* p = m.data<const float>();
  for (int64_t i = 0; i < n * f; ++i) {
    if (std::isinf(p[i])) [[unlikely]] {
      OSPREY_THROW(ValueError,
                   "{}: {} must be finite or NaN (NaN marks a missing value). Received: {} at row "
                   "{}, feature {}",
                   where, name, p[i], i / f, i % f);
    }
  }
  return m;
}

// y ([N] or [N, 1] integer class ids) as XGBoost's float labels, each checked to lie in
// [0, num_classes).
std::vector<float> class_labels(const Tensor& y, int64_t n, int num_classes, std::string_view where,
                                std::string_view x_name, std::string_view name) {
  OSPREY_CHECK(y.defined(), "{}: {} is undefined. Expected [N] class ids", where, name);
  OSPREY_CHECK(y.ndim() == 1 || (y.ndim() == 2 && y.size(1) == 1),
               "{}: {} must be [N] class ids. Received: {}", where, name, y.describe());
  OSPREY_CHECK(is_integral(y.dtype()) || is_floating(y.dtype()),
               "{}: {} must hold class ids (int32, int64 or float). Received: {}", where, name,
               y.describe());
  OSPREY_CHECK(y.size(0) == n,
               "{}: {} and {} must have the same number of rows. Received: {} has {}, {} has {}",
               where, x_name, name, x_name, n, name, y.size(0));
  const std::vector<double> v = y.to_vector<double>();
  std::vector<float> labels(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    OSPREY_CHECK(v[i] >= 0 && v[i] < num_classes && v[i] == std::floor(v[i]),
                 "{}: {} must hold integer class ids in [0, {}). Received: {}[{}]={}", where, name,
                 num_classes, name, i, v[i]);
    labels[i] = static_cast<float>(v[i]);
  }
  return labels;
}

DMatrix make_dmatrix(const Tensor& m, const std::vector<float>* labels, int nthread,
                     std::string_view where) {
  DMatrixHandle h = nullptr;
  check(XGDMatrixCreateFromMat_omp(m.data<const float>(), static_cast<bst_ulong>(m.size(0)),
                                   static_cast<bst_ulong>(m.size(1)),
                                   std::numeric_limits<float>::quiet_NaN(), &h, nthread),
        where, "XGDMatrixCreateFromMat");
  DMatrix d(h);
  if (labels != nullptr) {
    check(XGDMatrixSetFloatInfo(d.get(), "label", labels->data(),
                                static_cast<bst_ulong>(labels->size())),
          where, "XGDMatrixSetFloatInfo");
  }
  return d;
}

template <class E = ValueError>
Booster make_booster(std::vector<DMatrixHandle> cache, std::string_view where) {
  BoosterHandle h = nullptr;
  check<E>(XGBoosterCreate(cache.data(), static_cast<bst_ulong>(cache.size()), &h), where,
           "XGBoosterCreate");
  return Booster(h);
}

void set_param(BoosterHandle b, const char* name, const std::string& value,
               std::string_view where) {
  check(XGBoosterSetParam(b, name, value.c_str()), where,
        fmt::format("XGBoosterSetParam({}={})", name, value));
}

void set_params(BoosterHandle b, int num_classes, const BoostedTreesOptions& o,
                std::string_view where) {
  set_param(b, "objective", "multi:softprob", where);
  set_param(b, "num_class", std::to_string(num_classes), where);
  set_param(b, "eval_metric", "mlogloss", where);
  set_param(b, "eta", fmt::format("{}", o.learning_rate), where);
  set_param(b, "max_depth", std::to_string(o.max_depth), where);
  set_param(b, "subsample", fmt::format("{}", o.subsample), where);
  set_param(b, "colsample_bytree", fmt::format("{}", o.colsample_bytree), where);
  set_param(b, "min_child_weight", fmt::format("{}", o.min_child_weight), where);
  set_param(b, "lambda", fmt::format("{}", o.reg_lambda), where);
  set_param(b, "tree_method", o.tree_method, where);
  set_param(b, "max_bin", std::to_string(o.max_bin), where);
  set_param(b, "nthread", std::to_string(xgboost_threads(o.nthread)), where);
  set_param(b, "seed", std::to_string(static_cast<int64_t>(o.seed)), where);
  set_param(b, "verbosity", o.verbose > 0 ? "1" : "0", where);
}

// The value of `key` ("validation-mlogloss") in an eval line such as
// "[3]\ttrain-mlogloss:0.41\tvalidation-mlogloss:0.52".
double parse_metric(const std::string& line, std::string_view key) {
  const auto p = line.find(fmt::format("{}:", key));
  OSPREY_ASSERT(p != std::string::npos, "no {} in XGBoost's eval line '{}'", key, line);
  return std::strtod(line.c_str() + p + key.size() + 1, nullptr);
}

}  // namespace

struct BoostedTrees::Impl {
  Booster booster;
  int num_classes = 0;
  int64_t num_features = 0;
  int best_iteration = -1;
  int nthread = 1;  // XGBoost's threads for this model's work (prediction's DMatrix included)
};

bool xgboost_built() noexcept { return true; }

BoostedTrees::BoostedTrees() = default;
BoostedTrees::BoostedTrees(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BoostedTrees::BoostedTrees(BoostedTrees&& other) noexcept = default;
BoostedTrees& BoostedTrees::operator=(BoostedTrees&& other) noexcept = default;
BoostedTrees::~BoostedTrees() = default;

const BoostedTrees::Impl& BoostedTrees::impl(const char* op) const {
  OSPREY_CHECK(impl_ != nullptr,
               "{}: the model is empty (default-constructed or moved from). Expected a model "
               "from BoostedTrees::fit or BoostedTrees::load",
               op);
  return *impl_;
}

int BoostedTrees::num_classes() const { return impl("BoostedTrees.num_classes").num_classes; }
int64_t BoostedTrees::num_features() const {
  return impl("BoostedTrees.num_features").num_features;
}
int BoostedTrees::best_iteration() const {
  return impl("BoostedTrees.best_iteration").best_iteration;
}

BoostedTrees BoostedTrees::fit(const Tensor& x, const Tensor& y, int num_classes,
                               const BoostedTreesOptions& options, const Tensor* x_val,
                               const Tensor* y_val) {
  constexpr std::string_view kWhere = "BoostedTrees.fit";
  OSPREY_CHECK(num_classes >= 2,
               "BoostedTrees.fit: num_classes must be at least 2. Received: num_classes={}",
               num_classes);
  OSPREY_CHECK(options.num_boost_round >= 1,
               "BoostedTrees.fit: num_boost_round must be positive. Received: num_boost_round={}",
               options.num_boost_round);
  OSPREY_CHECK(options.early_stopping_rounds >= 0,
               "BoostedTrees.fit: early_stopping_rounds must be >= 0. Received: "
               "early_stopping_rounds={}",
               options.early_stopping_rounds);
  OSPREY_CHECK(options.nthread >= 0,
               "BoostedTrees.fit: nthread must be >= 0 (0: osprey's thread count). Received: "
               "nthread={}",
               options.nthread);
  OSPREY_CHECK((x_val == nullptr) == (y_val == nullptr),
               "BoostedTrees.fit: x_val and y_val must be given together. Received: only {}",
               x_val != nullptr ? "x_val" : "y_val");
  OSPREY_CHECK(options.early_stopping_rounds == 0 || x_val != nullptr,
               "BoostedTrees.fit: early_stopping_rounds > 0 needs validation data (x_val, y_val). "
               "Received: early_stopping_rounds={} and no validation data",
               options.early_stopping_rounds);

  const Tensor xm = feature_matrix(x, kWhere, "x");
  const std::vector<float> labels = class_labels(y, xm.size(0), num_classes, kWhere, "x", "y");
  const int nthread = xgboost_threads(options.nthread);
  const DMatrix dtrain = make_dmatrix(xm, &labels, nthread, kWhere);
  DMatrix dval;
  if (x_val != nullptr) {
    const Tensor xv = feature_matrix(*x_val, kWhere, "x_val");
    OSPREY_CHECK(xv.size(1) == xm.size(1),
                 "BoostedTrees.fit: x_val must have as many features as x. Received: x has {}, "
                 "x_val has {}",
                 xm.size(1), xv.size(1));
    const std::vector<float> val_labels =
        class_labels(*y_val, xv.size(0), num_classes, kWhere, "x_val", "y_val");
    dval = make_dmatrix(xv, &val_labels, nthread, kWhere);
  }

  std::vector<DMatrixHandle> cache{dtrain.get()};
  if (dval) cache.push_back(dval.get());
  Booster booster = make_booster(cache, kWhere);
  BoosterHandle b = booster.get();
  set_params(b, num_classes, options, kWhere);

  // The early-stopping rule of XGBoost's Python package: a round improves when its validation
  // loss is strictly below the best so far; stop after early_stopping_rounds rounds without one.
  const bool stopping = options.early_stopping_rounds > 0;
  double best_score = std::numeric_limits<double>::infinity();
  int best = -1;
  int since_best = 0;
  for (int i = 0; i < options.num_boost_round; ++i) {
    check(XGBoosterUpdateOneIter(b, i, dtrain.get()), kWhere, "XGBoosterUpdateOneIter");
    const bool log = options.verbose > 0 && (i % 10 == 0 || i + 1 == options.num_boost_round);
    if (!log && !stopping) continue;
    std::vector<DMatrixHandle> sets;
    std::vector<const char*> names;
    if (log) {
      sets.push_back(dtrain.get());
      names.push_back("train");
    }
    if (dval) {
      sets.push_back(dval.get());
      names.push_back("validation");
    }
    const char* out = nullptr;
    check(XGBoosterEvalOneIter(b, i, sets.data(), names.data(), static_cast<bst_ulong>(sets.size()),
                               &out),
          kWhere, "XGBoosterEvalOneIter");
    const std::string line = out;  // owned by the booster until its next call
    if (log) fmt::print("{}\n", line);
    if (!stopping) continue;
    const double score = parse_metric(line, "validation-mlogloss");
    if (score < best_score) {
      best_score = score;
      best = i;
      since_best = 0;
    } else if (++since_best >= options.early_stopping_rounds) {
      if (options.verbose > 0) {
        fmt::print("Stopping. Best iteration:\n[{}]\tvalidation-mlogloss:{}\n", best, best_score);
      }
      break;
    }
  }
  if (best >= 0) {
    // Attributes are part of XGBoost's model file, so the choice survives save/load.
    check(XGBoosterSetAttr(b, "best_iteration", std::to_string(best).c_str()), kWhere,
          "XGBoosterSetAttr(best_iteration)");
    check(XGBoosterSetAttr(b, "best_score", fmt::format("{}", best_score).c_str()), kWhere,
          "XGBoosterSetAttr(best_score)");
  }

  auto impl = std::make_unique<Impl>();
  impl->booster = std::move(booster);
  impl->num_classes = num_classes;
  impl->num_features = xm.size(1);
  impl->best_iteration = best;
  impl->nthread = nthread;
  return BoostedTrees(std::move(impl));
}

Tensor BoostedTrees::predict_proba(const Tensor& x) const {
  constexpr std::string_view kWhere = "BoostedTrees.predict_proba";
  const Impl& m = impl("BoostedTrees.predict_proba");
  const Tensor xm = feature_matrix(x, kWhere, "x");
  OSPREY_CHECK(xm.size(1) == m.num_features,
               "BoostedTrees.predict_proba: x must have {} features per row, as the data the "
               "model was fit on. Received: {} features ({})",
               m.num_features, xm.size(1), x.describe());
  const DMatrix d = make_dmatrix(xm, nullptr, m.nthread, kWhere);
  // iteration_end 0 means every round; best_iteration + 1 keeps the rounds up to the best one.
  const std::string config =
      fmt::format(R"({{"type": 0, "training": false, "iteration_begin": 0, "iteration_end": {}, )"
                  R"("strict_shape": false}})",
                  m.best_iteration + 1);
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  check(
      XGBoosterPredictFromDMatrix(m.booster.get(), d.get(), config.c_str(), &shape, &dim, &result),
      kWhere, "XGBoosterPredictFromDMatrix");
  const int64_t n = xm.size(0);
  OSPREY_ASSERT(dim == 2 && static_cast<int64_t>(shape[0]) == n &&
                    static_cast<int64_t>(shape[1]) == m.num_classes,
                "XGBoost predicted {} dims for {} rows and {} classes", dim, n, m.num_classes);
  Tensor out = Tensor::empty({n, m.num_classes});
  std::copy(result, result + n * m.num_classes, out.data<float>());
  return out;
}

void BoostedTrees::save(const std::filesystem::path& json_file) const {
  constexpr std::string_view kWhere = "BoostedTrees.save";
  const Impl& m = impl("BoostedTrees.save");
  OSPREY_CHECK(json_file.extension() == ".json",
               "BoostedTrees.save: the file name must end in .json (XGBoost's JSON model "
               "format). Received: {}",
               json_file.string());
  // XGBoosterSaveModel picks the format from the file name, which the atomic writer's temporary
  // ("<name>.tmp-XXXXXX") lacks: take the same JSON bytes from a buffer instead.
  bst_ulong len = 0;
  const char* data = nullptr;
  check_file(XGBoosterSaveModelToBuffer(m.booster.get(), R"({"format": "json"})", &len, &data),
             kWhere, "XGBoosterSaveModelToBuffer", json_file);
  io::atomic_write_file(json_file, std::string_view(data, len));
}

BoostedTrees BoostedTrees::load(const std::filesystem::path& json_file) {
  constexpr std::string_view kWhere = "BoostedTrees.load";
  const std::string name = json_file.string();
  OSPREY_CHECK(json_file.extension() == ".json",
               "BoostedTrees.load: the file name must end in .json (XGBoost's JSON model "
               "format). Received: {}",
               name);
  std::error_code ec;
  OSPREY_CHECK_T(IoError, std::filesystem::is_regular_file(json_file, ec),
                 "BoostedTrees.load: cannot read {}: no such file", name);

  Booster booster = make_booster<IoError>({}, kWhere);
  BoosterHandle b = booster.get();
  check_file(XGBoosterLoadModel(b, name.c_str()), kWhere, "XGBoosterLoadModel", json_file);
  // The thread count is not part of XGBoost's model file: a loaded model uses osprey's.
  auto impl = std::make_unique<Impl>();
  impl->nthread = num_threads();
  check_file(XGBoosterSetParam(b, "nthread", std::to_string(impl->nthread).c_str()), kWhere,
             "XGBoosterSetParam(nthread)", json_file);
  // The objective and num_class live in the learner's configuration.
  bst_ulong len = 0;
  const char* config_text = nullptr;
  check_file(XGBoosterSaveJsonConfig(b, &len, &config_text), kWhere, "XGBoosterSaveJsonConfig",
             json_file);
  const auto config = nlohmann::json::parse(config_text, config_text + len, nullptr, false);
  std::string objective;
  try {
    const auto& learner = config.at("learner");
    objective = learner.at("objective").at("name").get<std::string>();
    impl->num_classes =
        std::stoi(learner.at("learner_model_param").at("num_class").get<std::string>());
  } catch (const std::exception& e) {
    OSPREY_THROW(IoError, "BoostedTrees.load: {}: unexpected XGBoost configuration: {}", name,
                 e.what());
  }
  OSPREY_CHECK_T(IoError, objective == "multi:softprob" && impl->num_classes >= 2,
                 "BoostedTrees.load: {} is not a multi-class classifier. Expected objective "
                 "multi:softprob with num_class >= 2. Received: objective {}, num_class {}",
                 name, objective, impl->num_classes);

  bst_ulong features = 0;
  check_file(XGBoosterGetNumFeature(b, &features), kWhere, "XGBoosterGetNumFeature", json_file);
  impl->num_features = static_cast<int64_t>(features);
  OSPREY_CHECK_T(IoError, impl->num_features > 0, "BoostedTrees.load: {} has no features", name);

  const char* best = nullptr;
  int found = 0;
  check_file(XGBoosterGetAttr(b, "best_iteration", &best, &found), kWhere,
             "XGBoosterGetAttr(best_iteration)", json_file);
  if (found != 0) {
    int rounds = 0;
    check_file(XGBoosterBoostedRounds(b, &rounds), kWhere, "XGBoosterBoostedRounds", json_file);
    const std::string_view s = best;
    int v = -1;
    const auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v);
    OSPREY_CHECK_T(IoError,
                   err == std::errc() && end == s.data() + s.size() && v >= 0 && v < rounds,
                   "BoostedTrees.load: {}: attribute best_iteration must be a round in [0, {}). "
                   "Received: '{}'",
                   name, rounds, s);
    impl->best_iteration = v;
  }
  impl->booster = std::move(booster);
  return BoostedTrees(std::move(impl));
}

}  // namespace osprey::ensemble
