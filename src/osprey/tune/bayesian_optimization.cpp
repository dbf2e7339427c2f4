#include "osprey/tune/bayesian_optimization.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "osprey/core/error.h"

namespace osprey::tune {

BayesianOptimizationOracle::BayesianOptimizationOracle(OracleOptions options, BayesianOptimizationOracleOptions bo)
    : Oracle(std::move(options)), bo_(std::move(bo)) {
  OSPREY_CHECK(bo_.acquisition == "ucb" || bo_.acquisition == "ei",
               "BayesianOptimization: acquisition must be \"ucb\" or \"ei\". Received: \"{}\"", bo_.acquisition);
  OSPREY_CHECK(bo_.num_initial_points >= 0, "BayesianOptimization: num_initial_points must be >= 0. Received: {}",
               bo_.num_initial_points);
  OSPREY_CHECK(bo_.alpha > 0, "BayesianOptimization: alpha must be positive. Received: {}", bo_.alpha);
  OSPREY_CHECK(bo_.beta >= 0, "BayesianOptimization: beta must be >= 0. Received: {}", bo_.beta);
  OSPREY_CHECK(bo_.num_candidates > 0 && bo_.num_refined >= 0,
               "BayesianOptimization: num_candidates must be positive and num_refined >= 0");
}

std::vector<double> BayesianOptimizationOracle::to_vector(const HyperParameters& hp,
                                                          const std::vector<const HyperParameter*>& dims) const {
  std::vector<double> x;
  x.reserve(dims.size());
  for (const HyperParameter* h : dims) {
    x.push_back(hp.has_value(h->name) && h->contains(hp.get(h->name)) ? h->to_unit(hp.get(h->name))
                                                                      : h->to_unit(h->default_value));
  }
  return x;
}

HyperParameters BayesianOptimizationOracle::from_vector(const std::vector<double>& u,
                                                        const std::vector<const HyperParameter*>& dims) const {
  HyperParameters hp = space_.copy_space();
  size_t k = 0;
  for (const HyperParameter& h : space_.space()) {
    const bool tunable = k < dims.size() && dims[k] == &h;
    if (hp.is_active(h)) hp.set(h.name, tunable ? h.from_unit(u[k]) : h.default_value);
    if (tunable) ++k;
  }
  return hp;
}

Oracle::Proposal BayesianOptimizationOracle::populate_space(const std::string& trial_id) {
  std::vector<const HyperParameter*> dims;
  for (const HyperParameter& h : space_.space()) {
    if (h.tunable()) dims.push_back(&h);
  }
  const auto done = completed_trials();
  const size_t initial = bo_.num_initial_points > 0 ? static_cast<size_t>(bo_.num_initial_points)
                                                    : std::max<size_t>(2, 3 * dims.size());
  if (dims.empty() || done.size() < initial) {
    auto values = random_unseen_values();
    if (!values) return {TrialStatus::stopped, {}};
    return {TrialStatus::running, std::move(*values)};
  }

  std::vector<std::vector<double>> X;
  std::vector<double> y;
  const double sign = objective().maximize() ? -1.0 : 1.0;  // the GP models a quantity to minimize
  for (const Trial* t : done) {
    X.push_back(to_vector(t->hyperparameters, dims));
    y.push_back(sign * *t->score);
  }
  GaussianProcess gp({.alpha = bo_.alpha});
  gp.fit(X, y);
  const double y_best = *std::min_element(y.begin(), y.end());

  bool conditional = false;
  for (const HyperParameter& h : space_.space()) conditional = conditional || !h.conditions.empty();
  // The surrogate sees the coordinates of the values u maps to, so discrete hyperparameters are
  // evaluated where they actually are. Without conditions that is a per-coordinate snap; with
  // them, inactive children sit at their defaults.
  auto snap = [&](const std::vector<double>& u) {
    if (conditional) return to_vector(from_vector(u, dims), dims);
    std::vector<double> x(u.size());
    for (size_t k = 0; k < u.size(); ++k) x[k] = dims[k]->to_unit(dims[k]->from_unit(u[k]));
    return x;
  };
  // Lower is better for both acquisitions.
  auto acquisition = [&](const std::vector<double>& u) {
    const auto [mean, var] = gp.predict(snap(u));
    const double sd = std::sqrt(var);
    if (bo_.acquisition == "ucb") return mean - bo_.beta * sd;
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
    std::vector<double> u(dims.size());
    for (double& v : u) v = next_uniform();
    const double a = acquisition(u);
    cands.push_back({std::move(u), a});
  }
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.a < b.a; });
  const size_t refine = std::min<size_t>(bo_.num_refined, cands.size());
  for (size_t c = 0; c < refine; ++c) {
    Candidate& cand = cands[c];
    for (double step = 0.1; step > 0.005; step *= 0.5) {
      bool improved = true;
      for (int pass = 0; pass < 3 && improved; ++pass) {
        improved = false;
        for (size_t k = 0; k < dims.size(); ++k) {
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
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.a < b.a; });
  for (const Candidate& c : cands) {
    HyperParameters hp = from_vector(c.u, dims);
    if (!seen(hp)) return {TrialStatus::running, std::move(hp)};
  }
  auto values = random_unseen_values();
  if (!values) return {TrialStatus::stopped, {}};
  return {TrialStatus::running, std::move(*values)};
}

}  // namespace osprey::tune
