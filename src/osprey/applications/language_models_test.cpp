// The GPT trained through the user's API (compile, train_on_batch) against PyTorch: 20 AdamW
// steps from the same weights on the same batches (models/gpt_torch_references.py) give the same
// losses.
#include "osprey/applications/language_models.h"

#include <gtest/gtest.h>

#include "osprey/losses/crossentropy.h"
#include "osprey/models/gpt_torch_values.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/optim/adam.h"
#include "osprey/tensor/factory.h"

namespace osprey::applications {
namespace {

TEST(GptTrainingTest, TwentyAdamWStepsMatchPyTorch) {
  Model model = gpt({.vocab_size = 11, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 16});
  std::vector<Tensor> w;
  int tag = 0;
  for (const auto& v : model.variables()) {
    w.push_back(nn::test::wave(v.shape(), tag++, 0.1, v.name().ends_with("gamma") ? 1.0 : 0.0)
                    .to(v.dtype()));
  }
  model.set_weights(w);
  auto opt = std::make_shared<optim::AdamW>(optim::AdamWOptions{.learning_rate = 1e-2,
                                                                .weight_decay = 0.1,
                                                                .beta_2 = 0.99,
                                                                .epsilon = 1e-12,
                                                                .global_clipnorm = 1.0});
  opt->exclude_from_weight_decay({"gamma"});
  model.compile(opt, std::make_shared<losses::SparseCategoricalCrossentropy>(
                         losses::SparseCategoricalCrossentropyOptions{.from_logits = true}));
  for (int64_t i = 0; i < 20; ++i) {
    std::vector<int64_t> ids;
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t t = 0; t < 9; ++t) ids.push_back((7 * j + 3 * i + 5 * t) % 11);
    }
    const Tensor all = from_vector<int64_t>(ids, {3, 9});
    const double loss =
        model.train_on_batch(all.narrow(1, 0, 8).contiguous(), all.narrow(1, 1, 8).contiguous())
            .at("loss");
    EXPECT_NEAR(loss, models::test::kGptLosses[static_cast<size_t>(i)], 1e-4 * loss)
        << "step " << i;
  }
}

}  // namespace
}  // namespace osprey::applications
