// The mask a model's output carries (Embedding(mask_zero) through the layers) reaches the loss and
// the metrics of compile(): evaluate on a padded batch gives the loss and accuracy over the real
// tokens only, the same as each sequence run alone, and training on padded batches does not see
// the padding. (Across workers: tests/multi_worker, MaskedSequenceMetrics...)
#include <gtest/gtest.h>

#include "osprey/core/rng.h"
#include "osprey/losses/crossentropy.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/adam.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"

namespace osprey {
namespace {

constexpr int64_t kVocab = 9;
constexpr int64_t kSteps = 6;
// Next-token rows: inputs then targets, unpadded.
const std::vector<std::vector<int64_t>> kInputs = {{1, 4, 2, 7}, {3, 3}, {5, 6, 8, 2, 1, 4}, {2}};
const std::vector<std::vector<int64_t>> kTargets = {{4, 2, 7, 1}, {3, 5}, {6, 8, 2, 1, 4, 3}, {6}};

Tensor padded(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> v;
  for (const auto& r : rows) {
    v.insert(v.end(), r.begin(), r.end());
    v.insert(v.end(), static_cast<size_t>(kSteps) - r.size(), 0);
  }
  return from_vector<int64_t>(v, {static_cast<int64_t>(rows.size()), kSteps});
}

Model tagger() {
  nn::clear_session();
  set_global_seed(5);
  return Sequential({layers::Embedding(kVocab, 8, {.mask_zero = true}),
                     layers::LSTM(8, {.return_sequences = true}), layers::Dense(kVocab)});
}

// The loss and accuracy over the real tokens, from each row run alone through the network.
std::pair<double, double> reference(Model& model) {
  double loss = 0.0, correct = 0.0, tokens = 0.0;
  losses::SparseCategoricalCrossentropy ce({.from_logits = true, .reduction = "sum"});
  for (size_t i = 0; i < kInputs.size(); ++i) {
    const auto n = static_cast<int64_t>(kInputs[i].size());
    const Tensor x = from_vector<int64_t>(kInputs[i], {1, n});
    const Tensor y = from_vector<int64_t>(kTargets[i], {1, n});
    const autograd::Variable logits = model.network()(autograd::Variable(x), false);
    loss += ce(y, logits).item();
    const std::vector<int64_t> best = argmax(logits.value(), -1).to_vector<int64_t>();
    for (int64_t t = 0; t < n; ++t)
      correct += best[static_cast<size_t>(t)] == kTargets[i][static_cast<size_t>(t)] ? 1 : 0;
    tokens += static_cast<double>(n);
  }
  return {loss / tokens, correct / tokens};
}

TEST(MaskedTrainingTest, EvaluateCountsOnlyTheRealTokens) {
  Model model = tagger();
  model.compile(std::make_shared<optim::Adam>(optim::AdamOptions{.learning_rate = 0.02}),
                std::make_shared<losses::SparseCategoricalCrossentropy>(
                    losses::SparseCategoricalCrossentropyOptions{.from_logits = true}),
                {"accuracy"});
  model.fit(padded(kInputs), padded(kTargets), {.batch_size = 4, .epochs = 40, .verbose = 0});
  const auto [loss, accuracy] = reference(model);
  const train::Logs logs =
      model.evaluate(padded(kInputs), padded(kTargets), {.batch_size = 4, .verbose = 0});
  EXPECT_NEAR(logs.at("loss"), loss, 1e-5);
  EXPECT_NEAR(logs.at("accuracy"), accuracy, 1e-9);
  // The model has learned the 13 real tokens; counting the 11 padded positions (target 0, which
  // no real token predicts) would pull the accuracy down to at most 13/24.
  EXPECT_GT(accuracy, 0.75);
}

TEST(MaskedTrainingTest, PaddingDoesNotChangeTraining) {
  // One SGD step on the batch padded to 6 steps and on the same batch padded to 9 ends with the
  // same weights: the extra padding gets no loss and no gradient.
  const auto step = [](int64_t extra) {
    Model model = tagger();
    model.compile("sgd", std::make_shared<losses::SparseCategoricalCrossentropy>(
                             losses::SparseCategoricalCrossentropyOptions{.from_logits = true}));
    const auto pad = [&](const Tensor& t) {
      return concat({t, zeros({t.size(0), extra}, {DType::int64})}, 1);
    };
    model.fit(pad(padded(kInputs)), pad(padded(kTargets)),
              {.batch_size = 4, .epochs = 1, .verbose = 0, .shuffle = false});
    return model.network().get_weights();
  };
  const std::vector<Tensor> a = step(0), b = step(3);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<float> x = a[i].to_vector<float>(), y = b[i].to_vector<float>();
    for (size_t k = 0; k < x.size(); ++k) ASSERT_NEAR(x[k], y[k], 1e-6) << i << " " << k;
  }
}

TEST(MaskedTrainingTest, ALossRefusesAMaskThatDoesNotFitItsLosses) {
  losses::SparseCategoricalCrossentropy ce({.from_logits = true});
  autograd::Variable logits(zeros({2, 3, 4}));
  logits.set_mask(full(Shape{2, 5}, 1.0, {DType::boolean}));
  try {
    (void)ce(zeros({2, 3}, {DType::int64}), logits);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "SparseCategoricalCrossentropy: y_pred's mask of shape [2, 5] does not match the "
                 "per-sample losses of shape [2, 3] (it must be their leading axes, as [batch, "
                 "steps] for losses [batch, steps])");
  }
}

}  // namespace
}  // namespace osprey
