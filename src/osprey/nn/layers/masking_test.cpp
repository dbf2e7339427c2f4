// Masking end to end through the layers: a padded batch and each of its sequences run alone,
// unpadded, must agree at the real steps — outputs and the gradients of every weight — through
// Embedding(mask_zero), the recurrent layers (both directions, left and right padding),
// Bidirectional, attention, the transformer blocks and the masked poolings. Float64 runs the
// reference kernels; float32 runs oneDNN's (the masked RNN one step at a time) and is held to
// float32's rounding.
#include "osprey/nn/layers/masking.h"

#include <gtest/gtest.h>

#include <functional>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/precision/dtype_policy.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::nn {
namespace {

using Sequences = std::vector<std::vector<int64_t>>;

// Token rows padded with 0 to `steps`, on the right or (left[i]) on the left.
Tensor padded_ids(const Sequences& rows, int64_t steps, const std::vector<bool>& left = {}) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto pad = static_cast<size_t>(steps) - rows[i].size();
    const bool on_left = i < left.size() && left[i];
    if (on_left) ids.insert(ids.end(), pad, 0);
    ids.insert(ids.end(), rows[i].begin(), rows[i].end());
    if (!on_left) ids.insert(ids.end(), pad, 0);
  }
  return from_vector<int64_t>(ids, {static_cast<int64_t>(rows.size()), steps});
}

// The model under test: ids -> outputs, [batch, F] (pooled) or [batch, T, F] (a sequence).
using Model = std::function<Variable(const Variable& ids)>;

// The objective whose gradients are compared: sum over the real steps of outputs . c, with
// c[f] = f + 1 (for pooled outputs every row is real).
Variable objective(const Variable& out, const Tensor& real /* [batch, T] float */) {
  const int64_t f = out.shape()[out.ndim() - 1];
  std::vector<double> c(static_cast<size_t>(f));
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<double>(i + 1);
  Tensor w = from_vector<double>(c, {f}).to(out.dtype());
  if (out.ndim() == 3) {
    w = mul(real.to(out.dtype()).reshape({real.size(0), real.size(1), 1}), w.reshape({1, 1, f}));
  }
  return autograd::sum(autograd::mul(out, Variable(w)));
}

struct Run {
  Tensor out;                 // the outputs
  Tensor mask;                // the outputs' mask
  std::vector<Tensor> grads;  // of `weights`, in order
};

Run run(const Model& model, const std::vector<Variable>& weights_hint, const Tensor& ids,
        std::vector<Variable>* weights) {
  const Variable out = model(Variable(ids));
  if (weights->empty()) *weights = weights_hint;
  for (Variable w : *weights) w.zero_grad();
  const Tensor real = ne(ids, full(Shape{}, 0.0, {ids.dtype()})).to(DType::float64);
  objective(out, real).backward();
  Run r{out.value(), out.mask(), {}};
  for (const Variable& w : *weights) {
    EXPECT_TRUE(w.has_grad()) << w.name() << " got no gradient";
    r.grads.push_back(w.has_grad() ? w.grad().clone() : zeros(w.shape(), {w.dtype()}));
  }
  return r;
}

// Runs `model` on the padded batch and on each row alone; expects equal outputs at the real
// steps and gradients (the batch's against the sum of the rows').
void expect_padding_invisible(const Model& model,
                              const std::function<std::vector<Variable>()>& vars,
                              const Sequences& rows, int64_t steps, const std::vector<bool>& left,
                              double tol) {
  const Tensor batch_ids = padded_ids(rows, steps, left);
  std::vector<Variable> weights;
  // Build on the padded batch first, so the weights exist before the hint is read.
  (void)model(Variable(batch_ids));
  const Run batch = run(model, vars(), batch_ids, &weights);
  ASSERT_FALSE(weights.empty());
  std::vector<Tensor> summed;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Tensor ids_i = from_vector<int64_t>(rows[i], {1, static_cast<int64_t>(rows[i].size())});
    const Run alone = run(model, {}, ids_i, &weights);
    // The batch row's real steps, in order.
    const int64_t n = static_cast<int64_t>(rows[i].size());
    const int64_t start = i < left.size() && left[i] ? steps - n : 0;
    Tensor row = batch.out.narrow(0, static_cast<int64_t>(i), 1);
    if (row.ndim() == 3) row = row.narrow(1, start, n);
    const std::vector<double> want = alone.out.to(DType::float64).to_vector<double>();
    const std::vector<double> got = row.to(DType::float64).contiguous().to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_NEAR(got[k], want[k], tol) << "row " << i << " output " << k;
    if (summed.empty()) {
      for (const Tensor& g : alone.grads) summed.push_back(g.to(DType::float64));
    } else {
      for (size_t w = 0; w < summed.size(); ++w)
        summed[w] = add(summed[w], alone.grads[w].to(DType::float64));
    }
  }
  for (size_t w = 0; w < weights.size(); ++w) {
    const std::vector<double> want = summed[w].to_vector<double>();
    const std::vector<double> got = batch.grads[w].to(DType::float64).to_vector<double>();
    double scale = 1.0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_NEAR(got[k], want[k], tol * scale) << weights[w].name() << " element " << k;
  }
}

const Sequences kRows = {{3, 7, 1, 9}, {5, 2}, {8, 8, 4, 6, 11, 1}, {10}};
constexpr int64_t kSteps = 7;

class MaskedModels : public ::testing::TestWithParam<const char*> {
 protected:
  double tol() const { return std::string(GetParam()) == "float64" ? 1e-10 : 2e-5; }
};

TEST_P(MaskedModels, RecurrentLayersSkipPaddingOnEitherSide) {
  const precision::DTypePolicyScope policy(GetParam());
  auto emb = layers::Embedding(12, 4, {.mask_zero = true});
  auto bi = layers::Bidirectional(layers::LSTM(5, {.return_sequences = true}));
  auto gru = layers::GRU(4, {.return_sequences = true});
  auto back = layers::SimpleRNN(3, {.return_sequences = true, .go_backwards = true});
  auto last = layers::LSTM(3);
  const Model model = [&](const Variable& ids) { return last(back(gru(bi(emb(ids))))); };
  const auto vars = [&] {
    std::vector<Variable> v;
    for (const auto& l : std::vector<std::shared_ptr<Layer>>{emb, bi, gru, back, last})
      for (const Variable& w : l->variables()) v.push_back(w);
    return v;
  };
  // Rows 1 and 3 padded on the left: a masked step before the first real one keeps the zero
  // state.
  expect_padding_invisible(model, vars, kRows, kSteps, {false, true, false, true}, tol());
}

TEST_P(MaskedModels, AttentionAndPoolingSkipPadding) {
  const precision::DTypePolicyScope policy(GetParam());
  auto emb = layers::Embedding(12, 8, {.mask_zero = true});
  auto pos = layers::PositionEmbedding(kSteps);
  auto enc = layers::TransformerEncoder(16, 2, {.normalize_first = true});
  auto dec = layers::TransformerDecoder(16, 2);
  auto avg = layers::GlobalAveragePooling1D();
  auto mx = layers::GlobalMaxPooling1D();
  auto plus = layers::Add();
  auto join = layers::Concatenate();
  auto head = layers::Dense(3);
  const Model model = [&](const Variable& ids) {
    const Variable e = emb(ids);
    const Variable h = dec(enc(plus(std::vector<Variable>{e, pos(e)})));
    return head(join(std::vector<Variable>{avg(h), mx(h)}));
  };
  const auto vars = [&] {
    std::vector<Variable> v;
    for (const auto& l : std::vector<std::shared_ptr<Layer>>{emb, pos, enc, dec, head})
      for (const Variable& w : l->variables()) v.push_back(w);
    return v;
  };
  expect_padding_invisible(model, vars, kRows, kSteps, {}, tol());
}

TEST_P(MaskedModels, SequenceOutputsKeepTheMaskThroughAttention) {
  const precision::DTypePolicyScope policy(GetParam());
  auto emb = layers::Embedding(12, 6, {.mask_zero = true});
  auto lstm = layers::LSTM(6, {.return_sequences = true});
  auto mha = layers::MultiHeadAttention(2, 3);
  auto drop = layers::Dropout(0.5);
  auto head = layers::Dense(4);
  const Model model = [&](const Variable& ids) {
    const Variable h = lstm(emb(ids));
    const Variable a = mha->attend(h, h);  // every real step attends to every real step
    return head(drop(a, /*training=*/false));
  };
  const auto vars = [&] {
    std::vector<Variable> v;
    for (const auto& l : std::vector<std::shared_ptr<Layer>>{emb, lstm, mha, head})
      for (const Variable& w : l->variables()) v.push_back(w);
    return v;
  };
  expect_padding_invisible(model, vars, kRows, kSteps, {}, tol());
  // The output still marks the padding: ids != 0.
  const Tensor ids = padded_ids(kRows, kSteps);
  const Tensor mask = model(Variable(ids)).mask();
  ASSERT_TRUE(mask.defined());
  EXPECT_EQ(mask.to(DType::int64).to_vector<int64_t>(),
            ne(ids, full(Shape{}, 0.0, {DType::int64})).to(DType::int64).to_vector<int64_t>());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MaskedModels, ::testing::Values("float64", "float32"));

TEST(MaskingTest, MasksStepsWhoseFeaturesAllEqualMaskValue) {
  auto masking = layers::Masking(-1.0, {.dtype = "float64"});
  // [2, 3, 2]: step (0, 1) and step (1, 2) are all -1; step (1, 0) only partly.
  const Tensor x = from_vector<double>({1, 2, -1, -1, 3, 4, -1, 5, 6, 7, -1, -1}, {2, 3, 2});
  const Variable y = masking(Variable(x));
  test::expect_values_near(y.value(), {1, 2, 0, 0, 3, 4, -1, 5, 6, 7, 0, 0});
  EXPECT_EQ(y.mask().to(DType::int64).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(masking->get_config()["mask_value"], -1.0);
}

TEST(MaskingTest, EmbeddingMasksIndexZeroOnlyWithMaskZero) {
  const Tensor ids = from_vector<int64_t>({4, 0, 2, 0, 0, 1}, {2, 3});
  auto masked = layers::Embedding(5, 2, {.mask_zero = true});
  EXPECT_EQ(masked(Variable(ids)).mask().to(DType::int64).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0, 1, 0, 0, 1}));
  auto plain = layers::Embedding(5, 2);
  EXPECT_FALSE(plain(Variable(ids)).mask().defined());
}

TEST(MaskingTest, MergeLayersCombineMasks) {
  Variable a(zeros({2, 3, 2}));
  Variable b(zeros({2, 3, 2}));
  a.set_mask(from_vector<int64_t>({1, 1, 0, 1, 0, 0}, {2, 3}).to(DType::boolean));
  b.set_mask(from_vector<int64_t>({1, 0, 0, 1, 1, 0}, {2, 3}).to(DType::boolean));
  auto add = layers::Add();
  EXPECT_EQ(add(std::vector<Variable>{a, b}).mask().to(DType::int64).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0, 0, 1, 0, 0}));
  // Along the steps axis the masks are joined; an input without one counts as all real.
  Variable c(zeros({2, 2, 2}));
  auto join = layers::Concatenate(1);
  EXPECT_EQ(join(std::vector<Variable>{a, c}).mask().to(DType::int64).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 1, 0, 1, 1, 1, 0, 0, 1, 1}));
}

TEST(MaskingTest, AMaskOfTheWrongShapeIsAnErrorNamingTheLayer) {
  auto lstm = layers::LSTM(3, {.name = "encoder_lstm"});
  Variable x(zeros({2, 5, 4}));
  x.set_mask(full(Shape{2, 4}, 1.0, {DType::boolean}));
  EXPECT_EQ(test::value_error([&] { lstm(x); }),
            "encoder_lstm: the mask of input 0 must be bool with that input's leading axes (input "
            "shape [2, 5, 4]; a sequence [batch, steps, ...] takes a mask [batch, steps]). "
            "Received: mask bool[2, 4]");
  x.set_mask(full(Shape{2, 5}, 1.0, {DType::float32}));
  EXPECT_EQ(test::value_error([&] { lstm(x); }),
            "encoder_lstm: the mask of input 0 must be bool with that input's leading axes (input "
            "shape [2, 5, 4]; a sequence [batch, steps, ...] takes a mask [batch, steps]). "
            "Received: mask float32[2, 5]");
  auto mha = layers::MultiHeadAttention(2, 2, {.name = "mha"});
  Variable q(zeros({2, 5, 4}));
  Variable v(zeros({2, 6, 4}));
  v.set_mask(full(Shape{2, 5}, 1.0, {DType::boolean}));
  EXPECT_EQ(test::value_error([&] { mha->attend(q, v); }),
            "mha: the mask of input 1 must be bool with that input's leading axes (input shape "
            "[2, 6, 4]; a sequence [batch, steps, ...] takes a mask [batch, steps]). Received: "
            "mask bool[2, 5]");
}

TEST(MaskingTest, ALayerWithoutMaskingDropsTheMaskAndLeavesItsInputAlone) {
  auto flatten = layers::Flatten();
  auto emb = layers::Embedding(5, 2, {.mask_zero = true});
  const Variable e = emb(Variable(from_vector<int64_t>({1, 0, 2, 3}, {2, 2})));
  ASSERT_TRUE(e.mask().defined());
  ::testing::internal::CaptureStderr();
  const Variable f = flatten(e);
  const std::string warned = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(f.mask().defined());
  EXPECT_TRUE(e.mask().defined());
  EXPECT_NE(warned.find("layer '" + flatten->name() +
                        "' (Flatten) was passed an input with a mask, but it does not support "
                        "masking"),
            std::string::npos)
      << warned;
  // The warning is printed once per layer.
  ::testing::internal::CaptureStderr();
  (void)flatten(e);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace osprey::nn
