// Combiners: how an ensemble's member weights are fitted from the members' class probabilities
// on the SAME held-out rows (never the test rows). Pure functions on numbers: a plain average,
// a weighted average whose weights minimize the log loss (NLopt's Nelder-Mead, or random
// Dirichlet draws), and Caruana et al.'s greedy ensemble selection with replacement (2004).
// Ensemble (ensemble.h) calls them through fit_weights(); a tuner can call them directly on the
// validation predictions it kept.
//   std::vector<Tensor> probs = {p_cnn, p_mlp, p_xgb};          // each [N, C] float32
//   std::vector<double> w = fit_weights("greedy", probs, y_val);  // >= 0, sums to 1
//   double loss = ensemble_log_loss(probs, w, y_val);
//
// Inputs everywhere: member_probs, one [N, C] floating tensor per member (rows are class
// probabilities), and y, the labels of those N rows: [N] (or [N, 1]) class ids as int32, int64
// or a float type holding integers, or [N, C] one-hot rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "osprey/tensor/tensor.h"

namespace osprey::ensemble {

// Probabilities are clipped to [kProbabilityEpsilon, 1 - kProbabilityEpsilon] before the log, as
// Keras's crossentropy does, so one confidently wrong row costs -log(1e-7) ~ 16.1, not infinity.
inline constexpr double kProbabilityEpsilon = 1e-7;

struct NelderMeadOptions {
  int max_evals = 2000;    // objective evaluations (each costs O(members * rows))
  double xtol_rel = 1e-6;  // stop when a step changes the logits by less than this, relatively
  uint64_t seed = 0;       // NLopt's random seed (nlopt_srand); LN_NELDERMEAD itself draws none
};

struct RandomSearchOptions {
  int trials = 1000;  // candidate weight vectors, the plain average included
  uint64_t seed = 0;
};

struct GreedyOptions {
  int rounds = 50;  // members picked (with replacement); weights are counts / rounds
  std::string metric = "log_loss";  // or "accuracy"
};

struct CombinerOptions {
  NelderMeadOptions nelder_mead{};
  RandomSearchOptions random_search{};
  GreedyOptions greedy{};
};

// "average", "nelder_mead", "random_search", "greedy": the names fit_weights() accepts.
const std::vector<std::string>& combiner_names();

// {1/n, ..., 1/n}; ValueError when n == 0.
std::vector<double> average_weights(size_t num_members);

// Minimizes ensemble_log_loss over the simplex with NLopt's LN_NELDERMEAD, starting from the
// plain average. The result is never worse on these rows than the plain average or any single
// member (those are compared at the end: Nelder-Mead on softmax logits only approaches a vertex).
std::vector<double> nelder_mead_weights(const std::vector<Tensor>& member_probs, const Tensor& y,
                                        const NelderMeadOptions& options = {});

// Candidates: the plain average, each single member, then Dirichlet(1) draws (uniform on the
// simplex) until options.trials candidates; returns the one of lowest log loss (first wins ties).
std::vector<double> random_search_weights(const std::vector<Tensor>& member_probs, const Tensor& y,
                                          const RandomSearchOptions& options = {});

// Caruana's forward selection with replacement: from the empty ensemble, each round adds the
// member (repeats allowed) whose addition gives the best metric for the plain average of the
// selected members (lowest log loss or highest accuracy; ties: lowest index).
std::vector<double> greedy_selection_weights(const std::vector<Tensor>& member_probs,
                                             const Tensor& y, const GreedyOptions& options = {});

// Dispatches on the combiner's name; ValueError listing combiner_names() for another.
std::vector<double> fit_weights(const std::string& combiner,
                                const std::vector<Tensor>& member_probs, const Tensor& y,
                                const CombinerOptions& options = {});

// sum_m weights[m] * member_probs[m], in float64 then rounded to float32: [N, C].
Tensor weighted_average(const std::vector<Tensor>& member_probs,
                        const std::vector<double>& weights);
// Mean over rows of -log(clip(p[true class])) of the weighted average (computed in float64).
double ensemble_log_loss(const std::vector<Tensor>& member_probs,
                         const std::vector<double>& weights, const Tensor& y);
// Fraction of rows whose weighted average's argmax (first maximum) is the true class.
double ensemble_accuracy(const std::vector<Tensor>& member_probs,
                         const std::vector<double>& weights, const Tensor& y);

// The same two metrics of one [N, C] prediction (a member's, or an ensemble's predict()).
double log_loss(const Tensor& probs, const Tensor& y);
double accuracy(const Tensor& probs, const Tensor& y);

// Checks weights for `num_members` members (count, finite, >= 0, positive sum) and returns them
// divided by their sum. `what` names the caller in errors ("Ensemble::set_weights").
std::vector<double> normalize_weights(const std::vector<double>& weights, size_t num_members,
                                      const char* what);

}  // namespace osprey::ensemble
