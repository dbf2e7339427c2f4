#include "osprey/metrics/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::metrics {
namespace {

// logits [2, 3, 4]: sin(0.37 i + 0.11) * 2; labels [[1, 3, 0], [2, 0, 0]], 0 the padding id.
Tensor logits() {
  std::vector<double> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37 * static_cast<double>(i) + 0.11) * 2;
  return from_vector<double>(v, {2, 3, 4});
}
Tensor labels() { return from_vector<int64_t>({1, 3, 0, 2, 0, 0}, {2, 3}); }

// PyTorch 1.13: torch.exp(F.cross_entropy(logits.reshape(-1, 4), labels.reshape(-1),
// ignore_index=0)), and the same without ignore_index, and with per-token weights.
constexpr double kAll = 5.294042252646282;
constexpr double kMasked = 5.96043076821567;
constexpr double kMaskedWeighted = 5.161473883323947;

TEST(PerplexityTest, MatchesPyTorchFromLogitsAndFromProbabilities) {
  Perplexity all({.from_logits = true});
  all.update_state(labels(), logits());
  EXPECT_NEAR(all.result(), kAll, 1e-12);
  Perplexity masked({.from_logits = true, .mask_token_id = 0});
  masked.update_state(labels(), logits());
  EXPECT_NEAR(masked.result(), kMasked, 1e-12);
  Perplexity probs({.mask_token_id = 0});
  probs.update_state(labels(), softmax(logits(), -1).to(DType::float32));
  EXPECT_NEAR(probs.result(), kMasked, 1e-5);
  // Sample weights: the second sequence counts three times.
  Perplexity weighted({.from_logits = true, .mask_token_id = 0});
  const Tensor w = from_vector<double>({1, 3}, {2});
  weighted.update_state(labels(), logits(), &w);
  EXPECT_NEAR(weighted.result(), kMaskedWeighted, 1e-12);
}

TEST(PerplexityTest, EveryTokenCountsOnceAcrossBatchesAndTheStateRoundTrips) {
  Perplexity split({.from_logits = true, .mask_token_id = 0});
  split.update_state(labels().slice(0, 0, 1), logits().slice(0, 0, 1));
  Perplexity copy({.from_logits = true, .mask_token_id = 0});
  copy.load_state_values(split.state_values());
  copy.update_state(labels().slice(0, 1, 2), logits().slice(0, 1, 2));
  EXPECT_NEAR(copy.result(), kMasked, 1e-12);  // 3 real tokens, not a mean of 2 sequence means
  copy.reset_state();
  EXPECT_EQ(copy.result(), 1.0);
  EXPECT_EQ(copy.get_config()["mask_token_id"], 0);
}

TEST(PerplexityTest, ATokenOutsideTheVocabularyIsNamed) {
  Perplexity p({.from_logits = true});
  try {
    p.update_state(from_vector<int64_t>({1, 4, 0, 2, 0, 0}, {2, 3}), logits());
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Perplexity: token id 4 is outside the vocabulary [0, 4)");
  }
}

}  // namespace
}  // namespace osprey::metrics
