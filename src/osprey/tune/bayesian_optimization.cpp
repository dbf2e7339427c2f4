#include "osprey/tune/bayesian_optimization.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "osprey/core/error.h"

namespace osprey::tune {

Acquisition parse_acquisition(const std::string& name, const std::string& where) {
  if (name == "ucb") return Acquisition::ucb;
  if (name == "ei") return Acquisition::ei;
  OSPREY_THROW(ValueError, "{}: the acquisition must be ucb or ei. Received: '{}'", where, name);
}

const char* acquisition_name(Acquisition acquisition) {
  return acquisition == Acquisition::ei ? "ei" : "ucb";
}

void check_bayesian_options(const BayesianOptimizationOracleOptions& bo, const char* who) {
  OSPREY_CHECK(bo.num_initial_points >= 0, "{}: num_initial_points must be >= 0. Received: {}", who,
               bo.num_initial_points);
  OSPREY_CHECK(bo.alpha > 0, "{}: alpha must be positive. Received: {}", who, bo.alpha);
  OSPREY_CHECK(bo.beta >= 0, "{}: beta must be >= 0. Received: {}", who, bo.beta);
  OSPREY_CHECK(bo.num_candidates > 0 && bo.num_refined >= 0,
               "{}: num_candidates must be positive and num_refined >= 0", who);
}

GaussianProcessSampler::GaussianProcessSampler(const HyperParameters& space,
                                               BayesianOptimizationOracleOptions bo)
    : space_(space), bo_(bo) {
  for (const HyperParameter& h : space_.space()) {
    if (h.tunable()) dims_.push_back(&h);
  }
}

std::vector<double> GaussianProcessSampler::to_vector(const HyperParameters& hp) const {
  std::vector<double> x;
  x.reserve(dims_.size());
  for (const HyperParameter* h : dims_) {
    x.push_back(hp.has_value(h->name) && h->contains(hp.get(h->name))
                    ? h->to_unit(hp.get(h->name))
                    : h->to_unit(h->default_value));
  }
  return x;
}

HyperParameters GaussianProcessSampler::from_vector(const std::vector<double>& u) const {
  HyperParameters hp = space_.copy_space();
  size_t k = 0;
  for (const HyperParameter& h : space_.space()) {
    const bool tunable = k < dims_.size() && dims_[k] == &h;
    if (hp.is_active(h)) hp.set(h.name, tunable ? h.from_unit(u[k]) : h.default_value);
    if (tunable) ++k;
  }
  return hp;
}

namespace {

std::vector<double> with_context(std::vector<double> x, const std::vector<double>& context) {
  x.insert(x.end(), context.begin(), context.end());
  return x;
}

}  // namespace

void GaussianProcessSampler::observe(const HyperParameters& values, double loss,
                                     const std::vector<double>& context) {
  OSPREY_CHECK(X_.empty() || context.size() == context_size_,
               "GaussianProcessSampler: every point needs {} context coordinates, this one has {}",
               context_size_, context.size());
  context_size_ = context.size();
  X_.push_back(with_context(to_vector(values), context));
  y_.push_back(loss);
}

void GaussianProcessSampler::pend(const HyperParameters& values,
                                  const std::vector<double>& context) {
  pending_.push_back(with_context(to_vector(values), context));
}

std::optional<HyperParameters> GaussianProcessSampler::propose(
    const std::function<double()>& uniform,
    const std::function<bool(const HyperParameters&)>& accept,
    const std::vector<double>& context) const {
  OSPREY_CHECK(!y_.empty() && !dims_.empty(),
               "GaussianProcessSampler: propose needs an observation and a tunable "
               "hyperparameter (observed {}, dimensions {})",
               y_.size(), dims_.size());
  OSPREY_CHECK(
      context.size() == context_size_ &&
          std::all_of(pending_.begin(), pending_.end(),
                      [&](const auto& x) { return x.size() == dims_.size() + context_size_; }),
      "GaussianProcessSampler: the observations have {} context coordinates; propose and pend need "
      "as many",
      context_size_);
  GaussianProcess gp({.alpha = bo_.alpha});
  gp.fit(X_, y_);
  if (!pending_.empty()) {
    std::vector<std::vector<double>> X = X_;
    std::vector<double> y = y_;
    for (const auto& x : pending_) {
      X.push_back(x);
      y.push_back(gp.predict(x).first);
    }
    gp.fit(X, y);
  }
  // EI improves on the best value at `context`: the best observation, or with context the
  // lowest posterior mean there of the points observed (elsewhere).
  double y_best = *std::min_element(y_.begin(), y_.end());
  if (context_size_ > 0) {
    y_best = std::numeric_limits<double>::infinity();
    for (const auto& x : X_) {
      std::vector<double> at(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(dims_.size()));
      y_best = std::min(y_best, gp.predict(with_context(std::move(at), context)).first);
    }
  }

  bool conditional = false;
  for (const HyperParameter& h : space_.space()) conditional = conditional || !h.conditions.empty();
  // The surrogate sees the coordinates of the values u maps to, so discrete hyperparameters are
  // evaluated where they actually are. Without conditions that is a per-coordinate snap; with
  // them, inactive children sit at their defaults.
  auto snap = [&](const std::vector<double>& u) {
    if (conditional) return with_context(to_vector(from_vector(u)), context);
    std::vector<double> x(u.size());
    for (size_t k = 0; k < u.size(); ++k) x[k] = dims_[k]->to_unit(dims_[k]->from_unit(u[k]));
    return with_context(std::move(x), context);
  };
  // Lower is better for both acquisitions.
  auto acquisition = [&](const std::vector<double>& u) {
    const auto [mean, var] = gp.predict(snap(u));
    const double sd = std::sqrt(var);
    if (bo_.acquisition == Acquisition::ucb) return mean - bo_.beta * sd;
    const double z = (y_best - mean) / sd;
    const double cdf = 0.5 * std::erfc(-z / std::numbers::sqrt2);
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
    return -((y_best - mean) * cdf + sd * pdf);
  };

  struct Candidate {
    std::vector<double> u;
    double a;
  };
  std::vector<Candidate> cands;
  cands.reserve(bo_.num_candidates);
  for (int i = 0; i < bo_.num_candidates; ++i) {
    std::vector<double> u(dims_.size());
    for (double& v : u) v = uniform();
    const double a = acquisition(u);
    cands.push_back({std::move(u), a});
  }
  std::sort(cands.begin(), cands.end(),
            [](const Candidate& a, const Candidate& b) { return a.a < b.a; });
  const size_t refine = std::min<size_t>(bo_.num_refined, cands.size());
  for (size_t c = 0; c < refine; ++c) {
    Candidate& cand = cands[c];
    for (double step = 0.1; step > 0.005; step *= 0.5) {
      bool improved = true;
      for (int pass = 0; pass < 3 && improved; ++pass) {
        improved = false;
        for (size_t k = 0; k < dims_.size(); ++k) {
          for (double dir : {-1.0, 1.0}) {
            std::vector<double> u = cand.u;
            u[k] = std::clamp(u[k] + dir * step, 0.0, 1.0 - 1e-12);
            const double a = acquisition(u);
            if (a < cand.a) {
              cand = {std::move(u), a};
              improved = true;
            }
          }
        }
      }
    }
  }
  std::sort(cands.begin(), cands.end(),
            [](const Candidate& a, const Candidate& b) { return a.a < b.a; });
  for (const Candidate& c : cands) {
    HyperParameters hp = from_vector(c.u);
    if (accept(hp)) return hp;
  }
  return std::nullopt;
}

BayesianOptimizationOracle::BayesianOptimizationOracle(OracleOptions options,
                                                       BayesianOptimizationOracleOptions bo)
    : Oracle(std::move(options)), bo_(bo) {
  check_bayesian_options(bo_, "BayesianOptimization");
}

Oracle::Proposal BayesianOptimizationOracle::populate_space(const std::string& trial_id) {
  GaussianProcessSampler gp(space_, bo_);
  const auto done = completed_trials();
  const size_t initial = bo_.num_initial_points > 0 ? static_cast<size_t>(bo_.num_initial_points)
                                                    : std::max<size_t>(2, 3 * gp.dimensions());
  std::optional<HyperParameters> values;
  if (gp.dimensions() > 0 && done.size() >= initial) {
    const double sign =
        objective().maximize() ? -1.0 : 1.0;  // the GP models a quantity to minimize
    for (const Trial* t : done) gp.observe(t->hyperparameters, sign * *t->score);
    // Parallel tuners: a trial still running enters the GP at the GP's own prediction (the
    // "kriging believer" form of the constant liar, Ginsbourger et al. 2010), so proposals made
    // while it runs spread out instead of piling onto the same optimum.
    for (const Trial& t : trials()) {
      if (t.status == TrialStatus::running) gp.pend(t.hyperparameters);
    }
    values = gp.propose([this] { return next_uniform(); },
                        [this](const HyperParameters& hp) { return !seen(hp); });
  }
  if (!values) values = random_unseen_values();
  if (!values) return {TrialStatus::stopped, {}};
  return {TrialStatus::running, std::move(*values)};
}

}  // namespace osprey::tune
