#include "osprey/ensemble/combiners.h"

#include <fmt/ranges.h>
#include <nlopt.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"

namespace osprey::ensemble {

namespace {

// The members' predictions in float64, row-major, with the labels as class ids: what every
// combiner works on after the inputs are checked once.
struct Problem {
  size_t members = 0;
  int64_t rows = 0, classes = 0;
  std::vector<std::vector<double>> probs;       // [member][row * classes + class]
  std::vector<int64_t> labels;                  // [row]
  std::vector<std::vector<double>> true_probs;  // [member][row]: probability of the true class
};

std::vector<int64_t> read_labels(const Tensor& y, int64_t rows, int64_t classes, const char* what) {
  OSPREY_CHECK(y.defined(), "{}: the labels y are undefined", what);
  const Shape& s = y.shape();
  const bool one_hot = s.ndim() == 2 && s[0] == rows && s[1] == classes && classes > 1;
  const bool ids = (s.ndim() == 1 && s[0] == rows) || (s.ndim() == 2 && s[0] == rows && s[1] == 1);
  OSPREY_CHECK(one_hot || ids,
               "{}: y must hold one label per prediction row: [{}] class ids or [{}, {}] one-hot "
               "rows. Received: y of shape {}",
               what, rows, rows, classes, s.to_string());
  OSPREY_CHECK(is_floating(y.dtype()) || is_integral(y.dtype()),
               "{}: y must hold integer class ids or one-hot rows. Received: dtype {}", what,
               dtype_name(y.dtype()));
  const std::vector<double> v = y.to_vector<double>();
  std::vector<int64_t> labels(static_cast<size_t>(rows));
  if (one_hot) {
    for (int64_t i = 0; i < rows; ++i) {
      const double* row = v.data() + i * classes;
      int64_t hot = -1, ones = 0;
      bool binary = true;
      for (int64_t c = 0; c < classes; ++c) {
        if (row[c] == 1.0) {
          hot = c;
          ++ones;
        } else if (row[c] != 0.0) {
          binary = false;
        }
      }
      OSPREY_CHECK(binary && ones == 1,
                   "{}: one-hot labels must have a single 1 and zeros elsewhere in each row. "
                   "Received: row {} = [{}]",
                   what, i, fmt::join(row, row + classes, ", "));
      labels[static_cast<size_t>(i)] = hot;
    }
    return labels;
  }
  for (int64_t i = 0; i < rows; ++i) {
    const double id = v[static_cast<size_t>(i)];
    OSPREY_CHECK(
        std::isfinite(id) && id == std::floor(id) && id >= 0 && id < static_cast<double>(classes),
        "{}: labels must be class ids in [0, {}). Received: y[{}] = {}", what, classes, i, id);
    labels[static_cast<size_t>(i)] = static_cast<int64_t>(id);
  }
  return labels;
}

// y == nullptr: predictions only (labels and true_probs stay empty).
Problem make_problem(const std::vector<Tensor>& member_probs, const Tensor* y, const char* what) {
  OSPREY_CHECK(!member_probs.empty(),
               "{}: needs the predictions of at least one member. Received: 0 members", what);
  Problem p;
  p.members = member_probs.size();
  const Tensor& first = member_probs[0];
  for (size_t m = 0; m < p.members; ++m) {
    const Tensor& t = member_probs[m];
    OSPREY_CHECK(t.defined(), "{}: member {}'s predictions are undefined", what, m);
    OSPREY_CHECK(t.ndim() == 2,
                 "{}: member {}'s predictions must be [N, C] class probabilities. Received: shape "
                 "{}",
                 what, m, t.shape().to_string());
    OSPREY_CHECK(t.shape() == first.shape(),
                 "{}: every member's predictions must have the shape of member 0's. Received: "
                 "member {} has shape {}, member 0 has shape {}",
                 what, m, t.shape().to_string(), first.shape().to_string());
    OSPREY_CHECK(is_floating(t.dtype()),
                 "{}: member {}'s predictions must be floating-point probabilities. Received: "
                 "dtype {}",
                 what, m, dtype_name(t.dtype()));
  }
  p.rows = first.size(0);
  p.classes = first.size(1);
  OSPREY_CHECK(p.rows > 0 && p.classes > 0,
               "{}: the predictions need at least one row and one class. Received: shape {}", what,
               first.shape().to_string());
  if (y != nullptr) p.labels = read_labels(*y, p.rows, p.classes, what);
  p.probs.reserve(p.members);
  p.true_probs.reserve(p.members);
  for (size_t m = 0; m < p.members; ++m) {
    std::vector<double> v = member_probs[m].to_vector<double>();
    for (size_t k = 0; k < v.size(); ++k) {
      OSPREY_CHECK(std::isfinite(v[k]),
                   "{}: member {}'s predictions must be finite. Received: {} at row {}, class {}",
                   what, m, v[k], static_cast<int64_t>(k) / p.classes,
                   static_cast<int64_t>(k) % p.classes);
    }
    if (y != nullptr) {
      std::vector<double> t(static_cast<size_t>(p.rows));
      for (int64_t i = 0; i < p.rows; ++i) {
        const auto row = static_cast<size_t>(i);
        t[row] = v[static_cast<size_t>(i * p.classes + p.labels[row])];
      }
      p.true_probs.push_back(std::move(t));
    }
    p.probs.push_back(std::move(v));
  }
  return p;
}

double clipped_neg_log(double prob) {
  return -std::log(std::clamp(prob, kProbabilityEpsilon, 1.0 - kProbabilityEpsilon));
}

// Log loss of the mixture sum_m w[m] * probs[m] (w already normalized).
double mixture_log_loss(const Problem& p, const std::vector<double>& w) {
  double total = 0.0;
  for (int64_t i = 0; i < p.rows; ++i) {
    double q = 0.0;
    for (size_t m = 0; m < p.members; ++m) q += w[m] * p.true_probs[m][static_cast<size_t>(i)];
    total += clipped_neg_log(q);
  }
  return total / static_cast<double>(p.rows);
}

// Index of the first maximum of row[0..n).
int64_t first_argmax(const double* row, int64_t n) {
  int64_t best = 0;
  for (int64_t c = 1; c < n; ++c) {
    if (row[c] > row[best]) best = c;
  }
  return best;
}

double mixture_accuracy(const Problem& p, const std::vector<double>& w) {
  std::vector<double> row(static_cast<size_t>(p.classes));
  int64_t correct = 0;
  for (int64_t i = 0; i < p.rows; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (size_t m = 0; m < p.members; ++m) {
      const double* src = p.probs[m].data() + i * p.classes;
      for (int64_t c = 0; c < p.classes; ++c) row[static_cast<size_t>(c)] += w[m] * src[c];
    }
    if (first_argmax(row.data(), p.classes) == p.labels[static_cast<size_t>(i)]) ++correct;
  }
  return static_cast<double>(correct) / static_cast<double>(p.rows);
}

std::vector<double> one_hot_weights(size_t members, size_t m) {
  std::vector<double> w(members, 0.0);
  w[m] = 1.0;
  return w;
}

// Nelder-Mead's objective. The parametrization is w = softmax(z_1, ..., z_{K-1}, 0):
// - every z maps to a valid weight vector, so the simplex's reflections and expansions never
//   leave the feasible set and need no projection or penalty;
// - it is smooth. |z| / sum|z| has a kink at z_m = 0, exactly where a useless member's weight
//   wants to go, and is undefined at z = 0 (where the plain average would start), both of which
//   stall Nelder-Mead's simplex;
// - fixing the last logit at 0 removes softmax's flat direction (adding a constant to every
//   logit changes nothing), along which the simplex could otherwise degenerate.
// The price: a weight reaches 0 only in the limit (e^-50 at the bound), hence the final
// comparison with the single members in nelder_mead_weights.
struct NelderMeadState {
  const Problem* problem = nullptr;
  std::vector<double> weights;  // scratch
  double best_loss = std::numeric_limits<double>::infinity();
  std::vector<double> best_weights;
};

void softmax_with_zero_last(const double* z, size_t free, std::vector<double>& w) {
  double top = 0.0;  // the fixed last logit
  for (size_t k = 0; k < free; ++k) top = std::max(top, z[k]);
  double sum = 0.0;
  for (size_t k = 0; k < free; ++k) sum += w[k] = std::exp(z[k] - top);
  sum += w[free] = std::exp(-top);
  for (double& v : w) v /= sum;
}

double nelder_mead_objective(unsigned n, const double* z, double* /*grad: derivative-free*/,
                             void* data) {
  auto* state = static_cast<NelderMeadState*>(data);
  softmax_with_zero_last(z, n, state->weights);
  const double loss = mixture_log_loss(*state->problem, state->weights);
  if (loss < state->best_loss) {
    state->best_loss = loss;
    state->best_weights = state->weights;
  }
  return loss;
}

// Keeps the candidate of lowest log loss (the first one on ties).
struct BestCandidate {
  double loss = std::numeric_limits<double>::infinity();
  std::vector<double> weights;
  void offer(const Problem& p, const std::vector<double>& w) {
    const double l = mixture_log_loss(p, w);
    if (l < loss) {
      loss = l;
      weights = w;
    }
  }
};

}  // namespace

const std::vector<std::string>& combiner_names() {
  static const std::vector<std::string> names = {"average", "nelder_mead", "random_search",
                                                 "greedy"};
  return names;
}

std::vector<double> average_weights(size_t num_members) {
  OSPREY_CHECK(num_members > 0, "average_weights: needs at least one member. Received: 0");
  return std::vector<double>(num_members, 1.0 / static_cast<double>(num_members));
}

std::vector<double> normalize_weights(const std::vector<double>& weights, size_t num_members,
                                      const char* what) {
  OSPREY_CHECK(weights.size() == num_members,
               "{}: needs one weight per member ({}). Received: {} weights", what, num_members,
               weights.size());
  double sum = 0.0;
  for (size_t m = 0; m < weights.size(); ++m) {
    OSPREY_CHECK(std::isfinite(weights[m]) && weights[m] >= 0.0,
                 "{}: weights must be finite and >= 0. Received: weights[{}] = {}", what, m,
                 weights[m]);
    sum += weights[m];
  }
  OSPREY_CHECK(sum > 0.0, "{}: weights must not all be 0. Received: [{}]", what,
               fmt::join(weights, ", "));
  std::vector<double> out(weights);
  for (double& w : out) w /= sum;
  return out;
}

std::vector<double> nelder_mead_weights(const std::vector<Tensor>& member_probs, const Tensor& y,
                                        const NelderMeadOptions& options) {
  constexpr const char* kWhat = "nelder_mead_weights";
  OSPREY_CHECK(options.max_evals > 0, "{}: max_evals must be positive. Received: max_evals={}",
               kWhat, options.max_evals);
  OSPREY_CHECK(std::isfinite(options.xtol_rel) && options.xtol_rel >= 0.0,
               "{}: xtol_rel must be finite and >= 0. Received: xtol_rel={}", kWhat,
               options.xtol_rel);
  const Problem p = make_problem(member_probs, &y, kWhat);
  if (p.members == 1) return {1.0};

  NelderMeadState state;
  state.problem = &p;
  state.weights.resize(p.members);
  const auto free = static_cast<unsigned>(p.members - 1);
  nlopt_opt opt = nlopt_create(NLOPT_LN_NELDERMEAD, free);
  OSPREY_ASSERT(opt != nullptr, "nlopt_create(NLOPT_LN_NELDERMEAD, {}) failed", free);
  constexpr double kLogitBound = 50.0;  // e^-50: a weight indistinguishable from 0
  nlopt_srand(options.seed);
  nlopt_set_min_objective(opt, nelder_mead_objective, &state);
  nlopt_set_lower_bounds1(opt, -kLogitBound);
  nlopt_set_upper_bounds1(opt, kLogitBound);
  nlopt_set_initial_step1(opt, 1.0);
  nlopt_set_xtol_rel(opt, options.xtol_rel);
  nlopt_set_maxeval(opt, options.max_evals);
  std::vector<double> z(free, 0.0);  // softmax(0, ..., 0): the plain average
  double final_loss = 0.0;
  // Any result code is fine: state holds the best point evaluated (NLOPT_MAXEVAL_REACHED and
  // NLOPT_ROUNDOFF_LIMITED still leave a usable point); the objective itself cannot fail.
  nlopt_optimize(opt, z.data(), &final_loss);
  nlopt_destroy(opt);

  BestCandidate best;
  best.offer(p, average_weights(p.members));
  for (size_t m = 0; m < p.members; ++m) best.offer(p, one_hot_weights(p.members, m));
  if (!state.best_weights.empty() && state.best_loss < best.loss) {
    best.loss = state.best_loss;
    best.weights = state.best_weights;
  }
  return best.weights;
}

std::vector<double> random_search_weights(const std::vector<Tensor>& member_probs, const Tensor& y,
                                          const RandomSearchOptions& options) {
  constexpr const char* kWhat = "random_search_weights";
  OSPREY_CHECK(options.trials > 0, "{}: trials must be positive. Received: trials={}", kWhat,
               options.trials);
  const Problem p = make_problem(member_probs, &y, kWhat);
  BestCandidate best;
  best.offer(p, average_weights(p.members));
  int64_t tried = 1;
  for (size_t m = 0; m < p.members && tried < options.trials; ++m, ++tried)
    best.offer(p, one_hot_weights(p.members, m));
  // Dirichlet(1, ..., 1): normalized Exp(1) draws. Draw k of candidate t uses Philox counter
  // t * members + k, so a seed gives the same candidates whatever the trial count.
  const Philox rng(options.seed);
  std::vector<double> w(p.members);
  for (uint64_t t = 0; tried < options.trials; ++t, ++tried) {
    double sum = 0.0;
    for (size_t k = 0; k < p.members; ++k) {
      const auto words = rng(t * p.members + k);
      const double u = Philox::to_unit_double(words[0], words[1]);  // [0, 1)
      sum += w[k] = -std::log1p(-u);                                // Exp(1), finite
    }
    if (sum <= 0.0) continue;  // every draw exactly 0: probability ~2^-53 per member
    for (double& v : w) v /= sum;
    best.offer(p, w);
  }
  return best.weights;
}

std::vector<double> greedy_selection_weights(const std::vector<Tensor>& member_probs,
                                             const Tensor& y, const GreedyOptions& options) {
  constexpr const char* kWhat = "greedy_selection_weights";
  OSPREY_CHECK(options.rounds > 0, "{}: rounds must be positive. Received: rounds={}", kWhat,
               options.rounds);
  const bool by_accuracy = options.metric == "accuracy";
  OSPREY_CHECK(by_accuracy || options.metric == "log_loss",
               "{}: metric must be one of log_loss, accuracy. Received: metric='{}'", kWhat,
               options.metric);
  const Problem p = make_problem(member_probs, &y, kWhat);
  const auto cells = static_cast<size_t>(p.rows * p.classes);
  std::vector<double> selected_sum(cells, 0.0);  // sum of the selected members' probabilities
  std::vector<double> candidate(cells);
  std::vector<int64_t> counts(p.members, 0);
  for (int round = 0; round < options.rounds; ++round) {
    const auto size = static_cast<double>(round + 1);  // ensemble size with the candidate
    size_t pick = 0;
    double pick_score = 0.0;
    for (size_t m = 0; m < p.members; ++m) {
      for (size_t k = 0; k < cells; ++k) candidate[k] = (selected_sum[k] + p.probs[m][k]) / size;
      double score = 0.0;  // higher is better: accuracy, or minus the log loss
      for (int64_t i = 0; i < p.rows; ++i) {
        const double* row = candidate.data() + i * p.classes;
        const int64_t label = p.labels[static_cast<size_t>(i)];
        score += by_accuracy ? (first_argmax(row, p.classes) == label ? 1.0 : 0.0)
                             : -clipped_neg_log(row[label]);
      }
      if (m == 0 || score > pick_score) {  // strict: the lowest index wins ties
        pick = m;
        pick_score = score;
      }
    }
    for (size_t k = 0; k < cells; ++k) selected_sum[k] += p.probs[pick][k];
    ++counts[pick];
  }
  std::vector<double> weights(p.members);
  for (size_t m = 0; m < p.members; ++m)
    weights[m] = static_cast<double>(counts[m]) / static_cast<double>(options.rounds);
  return weights;
}

std::vector<double> fit_weights(const std::string& combiner,
                                const std::vector<Tensor>& member_probs, const Tensor& y,
                                const CombinerOptions& options) {
  if (combiner == "average") {
    make_problem(member_probs, &y, "fit_weights");  // the same checks as the other combiners
    return average_weights(member_probs.size());
  }
  if (combiner == "nelder_mead") return nelder_mead_weights(member_probs, y, options.nelder_mead);
  if (combiner == "random_search")
    return random_search_weights(member_probs, y, options.random_search);
  if (combiner == "greedy") return greedy_selection_weights(member_probs, y, options.greedy);
  OSPREY_THROW(ValueError, "fit_weights: unknown combiner '{}'. Expected one of: {}", combiner,
               fmt::join(combiner_names(), ", "));
}

Tensor weighted_average(const std::vector<Tensor>& member_probs,
                        const std::vector<double>& weights) {
  constexpr const char* kWhat = "weighted_average";
  const Problem p = make_problem(member_probs, nullptr, kWhat);
  const std::vector<double> w = normalize_weights(weights, p.members, kWhat);
  Tensor out = Tensor::empty({p.rows, p.classes});
  float* dst = out.data<float>();
  const auto cells = static_cast<size_t>(p.rows * p.classes);
  for (size_t k = 0; k < cells; ++k) {
    double v = 0.0;
    for (size_t m = 0; m < p.members; ++m) v += w[m] * p.probs[m][k];
    dst[k] = static_cast<float>(v);
  }
  return out;
}

double ensemble_log_loss(const std::vector<Tensor>& member_probs,
                         const std::vector<double>& weights, const Tensor& y) {
  const Problem p = make_problem(member_probs, &y, "ensemble_log_loss");
  return mixture_log_loss(p, normalize_weights(weights, p.members, "ensemble_log_loss"));
}

double ensemble_accuracy(const std::vector<Tensor>& member_probs,
                         const std::vector<double>& weights, const Tensor& y) {
  const Problem p = make_problem(member_probs, &y, "ensemble_accuracy");
  return mixture_accuracy(p, normalize_weights(weights, p.members, "ensemble_accuracy"));
}

double log_loss(const Tensor& probs, const Tensor& y) {
  return mixture_log_loss(make_problem({probs}, &y, "log_loss"), {1.0});
}

double accuracy(const Tensor& probs, const Tensor& y) {
  return mixture_accuracy(make_problem({probs}, &y, "accuracy"), {1.0});
}

}  // namespace osprey::ensemble
