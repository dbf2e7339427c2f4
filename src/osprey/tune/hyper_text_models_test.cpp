// The prebuilt text hypermodels, HyperTransformer and HyperLSTM: what their defaults build for
// each task (layers, output shape, parameters against a hand count), the search space they
// declare, how `fixed` fixes and narrows it, that a language model is causal, that any sample of
// a space builds and trains a step, that a short search learns a task a guess cannot, and their
// option errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "osprey/core/rng.h"
#include "osprey/losses/crossentropy.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/trainer.h"
#include "osprey/tune/builtin_tuners.h"
#include "osprey/tune/hyper_lstm.h"
#include "osprey/tune/hyper_models_test_helpers.h"
#include "osprey/tune/hyper_transformer.h"

namespace osprey::tune {
namespace {

using test_helpers::build;
using test_helpers::layer_classes;
using test_helpers::random_values;
using test_helpers::space_lines;
using test_helpers::space_names;

constexpr int64_t kVocab = 50, kLength = 16;
const HyperTransformerOptions kTransformer{
    .vocab_size = kVocab, .sequence_length = kLength, .num_classes = 3};
const HyperTransformerOptions kTransformerLm{
    .vocab_size = kVocab, .sequence_length = kLength, .task = "language_model"};
const HyperLSTMOptions kLstm{.vocab_size = kVocab, .sequence_length = kLength, .num_classes = 3};
const HyperLSTMOptions kLstmLm{
    .vocab_size = kVocab, .sequence_length = kLength, .task = "language_model"};

// Token ids [n, length] drawn uniformly from [0, vocab).
Tensor random_tokens(int64_t n, int64_t length, int64_t vocab, uint64_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> id(0, vocab - 1);
  std::vector<int64_t> v(static_cast<size_t>(n * length));
  for (int64_t& t : v) t = id(gen);
  return from_vector(v, Shape{n, length});
}

// The parameters of one pre-norm block of width d with an ff-wide feed-forward network: query,
// key, value and output projections with biases, two normalizations (gamma, beta), and the two
// dense layers.
int64_t block_params(int64_t d, int64_t ff) {
  return 4 * (d * d + d) + 2 * (2 * d) + (d * ff + ff) + (ff * d + d);
}

bool is_sparse_crossentropy_from_logits(const Model& model) {
  const auto* loss =
      dynamic_cast<const losses::SparseCategoricalCrossentropy*>(&model.trainer().loss());
  return loss != nullptr && loss->options().from_logits;
}

TEST(HyperTransformerTest, DefaultsBuildTheDocumentedClassifier) {
  HyperTransformer hm(kTransformer);
  HyperParameters hp;
  Model model = build(hm, hp);
  EXPECT_EQ(layer_classes(model),
            (std::vector<std::string>{"Embedding", "PositionEmbedding", "Add", "Dropout",
                                      "TransformerEncoder", "TransformerEncoder",
                                      "LayerNormalization", "GlobalAveragePooling1D", "Dense"}));
  // Tokens and positions of width 64, two blocks (4 heads, ff_dim 128), the final
  // normalization and the softmax over 3 classes.
  EXPECT_EQ(model.count_params(),
            kVocab * 64 + kLength * 64 + 2 * block_params(64, 128) + 2 * 64 + (64 * 3 + 3));
  EXPECT_EQ(model.count_params(), 71491);
  const auto block = std::dynamic_pointer_cast<nn::TransformerEncoder>(model.layers()[4]);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->num_heads(), 4);
  EXPECT_EQ(block->intermediate_dim(), 128);
  EXPECT_EQ(block->options().activation, "gelu");
  EXPECT_TRUE(block->options().normalize_first);
  EXPECT_DOUBLE_EQ(block->options().dropout, 0.1);
  const Tensor p = model.predict(random_tokens(5, kLength, kVocab, 1));
  EXPECT_EQ(p.shape(), (Shape{5, 3}));
  for (int64_t i = 0; i < 5; ++i) {  // softmax rows
    const std::vector<float> row = p.to_vector<float>();
    EXPECT_NEAR(row[3 * i] + row[3 * i + 1] + row[3 * i + 2], 1.0, 1e-5);
  }
  EXPECT_EQ(model.trainer().optimizer().class_name(), "Adam");
  EXPECT_DOUBLE_EQ(model.trainer().optimizer().learning_rate(), 1e-3);
  EXPECT_EQ(model.trainer().loss().name(), "sparse_categorical_crossentropy");
  EXPECT_FALSE(is_sparse_crossentropy_from_logits(model));
}

TEST(HyperTransformerTest, TheSearchSpaceListsEveryHyperparameterWithItsRange) {
  HyperTransformer hm(kTransformer);
  HyperParameters hp;
  build(hm, hp);
  const std::vector<std::string> lines = {
      "Int num_layers: [1, 4], linear, default 2",
      "Choice num_heads: {1, 2, 4, 8} ordered, default 4",
      "Int embed_dim: [32, 256] step 32, linear, default 64",
      "Int ff_dim: [64, 512] step 64, linear, default 128",
      "Float dropout: [0, 0.3] step 0.05, linear, default 0.1",
      "Choice pooling: {global_average, global_max}, default global_average",
      "Choice optimizer: {adam, sgd, rmsprop}, default adam",
      "Float learning_rate: [0.0001, 0.01], log, default 0.001"};
  EXPECT_EQ(space_lines(hp), lines);
  // A language model pools nothing.
  HyperTransformer lm(kTransformerLm);
  HyperParameters lm_hp;
  build(lm, lm_hp);
  std::vector<std::string> lm_lines = lines;
  lm_lines.erase(lm_lines.begin() + 5);
  EXPECT_EQ(space_lines(lm_hp), lm_lines);
}

TEST(HyperTransformerTest, ALanguageModelGivesCausalLogitsAtEveryPosition) {
  HyperTransformer hm(kTransformerLm);
  HyperParameters hp;
  Model model = build(hm, hp);
  EXPECT_EQ(layer_classes(model),
            (std::vector<std::string>{"Embedding", "PositionEmbedding", "Add", "Dropout",
                                      "TransformerDecoder", "TransformerDecoder",
                                      "LayerNormalization", "Dense"}));
  EXPECT_EQ(model.count_params(), kVocab * 64 + kLength * 64 + 2 * block_params(64, 128) + 2 * 64 +
                                      (64 * kVocab + kVocab));
  EXPECT_TRUE(is_sparse_crossentropy_from_logits(model));
  // Changing token 9 changes the logits at positions 9 and after, never before.
  const Tensor x = random_tokens(2, kLength, kVocab, 2);
  std::vector<int64_t> changed = x.to_vector<int64_t>();
  for (int64_t b = 0; b < 2; ++b) {
    int64_t& t = changed[static_cast<size_t>(b * kLength + 9)];
    t = (t + 1) % kVocab;
  }
  const Tensor p = model.predict(x);
  ASSERT_EQ(p.shape(), (Shape{2, kLength, kVocab}));
  const std::vector<float> a = p.to_vector<float>();
  const std::vector<float> b = model.predict(from_vector(changed, x.shape())).to_vector<float>();
  for (int64_t row = 0; row < 2; ++row) {
    for (int64_t t = 0; t < kLength; ++t) {
      double diff = 0;
      for (int64_t v = 0; v < kVocab; ++v) {
        const auto i = static_cast<size_t>((row * kLength + t) * kVocab + v);
        diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
      }
      if (t < 9) {
        EXPECT_EQ(diff, 0.0) << "row " << row << " position " << t;
      } else {
        EXPECT_GT(diff, 1e-4) << "row " << row << " position " << t;
      }
    }
  }
}

TEST(HyperTransformerTest, FixedValuesAreHonored) {
  HyperParameters fixed;
  fixed.set("num_layers", int64_t{1});
  fixed.set("num_heads", int64_t{2});
  fixed.Int("embed_dim", 32, 64, {.step = 32, .default_value = 32});
  fixed.set("ff_dim", int64_t{64});
  fixed.set("dropout", 0.0);
  fixed.set("pooling", "global_max");
  HyperTransformer hm({.vocab_size = 10, .sequence_length = 8, .num_classes = 2, .fixed = fixed});
  HyperParameters hp;
  Model model = build(hm, hp);
  EXPECT_EQ(space_names(hp),
            (std::vector<std::string>{"num_layers", "num_heads", "embed_dim", "ff_dim", "dropout",
                                      "pooling", "optimizer", "learning_rate"}));
  EXPECT_EQ(space_lines(hp)[2], "Int embed_dim: [32, 64] step 32, linear, default 32");
  EXPECT_EQ(layer_classes(model),
            (std::vector<std::string>{"Embedding", "PositionEmbedding", "Add", "TransformerEncoder",
                                      "LayerNormalization", "GlobalMaxPooling1D", "Dense"}));
  EXPECT_EQ(model.count_params(), 10 * 32 + 8 * 32 + block_params(32, 64) + 2 * 32 + (32 * 2 + 2));
  const auto block = std::dynamic_pointer_cast<nn::TransformerEncoder>(model.layers()[3]);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->num_heads(), 2);
  // The oracle's other value of embed_dim builds too.
  HyperParameters other = hp.copy_space();
  other.set("embed_dim", int64_t{64});
  EXPECT_EQ(build(hm, other).count_params(),
            10 * 64 + 8 * 64 + block_params(64, 64) + 2 * 64 + (64 * 2 + 2));
}

TEST(HyperTransformerTest, BadOptionsGiveClearErrors) {
  auto expect = [](HyperTransformerOptions o, const std::string& message) {
    try {
      HyperTransformer hm(std::move(o));
      ADD_FAILURE() << "expected: " << message;
    } catch (const ValueError& e) {
      EXPECT_STREQ(e.what(), message.c_str());
    }
  };
  expect({.vocab_size = 1, .sequence_length = 8, .num_classes = 2},
         "HyperTransformer: vocab_size must be at least 2. Received: vocab_size=1");
  expect({.vocab_size = 10, .num_classes = 2},
         "HyperTransformer: sequence_length must be positive. Received: sequence_length=0");
  expect({.vocab_size = 10, .sequence_length = 8, .task = "tagging"},
         "HyperTransformer: task must be classification or language_model. Received: "
         "task='tagging'");
  expect({.vocab_size = 10, .sequence_length = 8, .num_classes = 1},
         "HyperTransformer: num_classes must be at least 2 for classification. Received: "
         "num_classes=1");
  expect({.vocab_size = 10, .sequence_length = 8, .task = "language_model", .num_classes = 10},
         "HyperTransformer: a language model predicts one of vocab_size tokens; leave "
         "num_classes at 0. Received: num_classes=10");
  HyperParameters pooling;
  pooling.set("pooling", "global_max");
  expect({.vocab_size = 10, .sequence_length = 8, .task = "language_model", .fixed = pooling},
         "HyperTransformer: fixed names hyperparameters the model does not read: pooling. It "
         "reads: num_layers, num_heads, embed_dim, ff_dim, dropout, optimizer, learning_rate");
  HyperParameters heads;
  heads.Choice("num_heads", {int64_t{2}, int64_t{3}});
  expect({.vocab_size = 10, .sequence_length = 8, .num_classes = 2, .fixed = heads},
         "HyperTransformer: embed_dim must be divisible by num_heads (each head takes embed_dim / "
         "num_heads features), but the space can draw embed_dim=32 with num_heads=3");
  HyperParameters width;
  width.set("embed_dim", int64_t{36});
  expect({.vocab_size = 10, .sequence_length = 8, .num_classes = 2, .fixed = width},
         "HyperTransformer: embed_dim must be divisible by num_heads (each head takes embed_dim / "
         "num_heads features), but the space can draw embed_dim=36 with num_heads=8");
  HyperParameters kind;
  kind.set("ff_dim", 0.5);
  expect({.vocab_size = 10, .sequence_length = 8, .num_classes = 2, .fixed = kind},
         "HyperTransformer: fixed hyperparameter 'ff_dim' must take int values within [1, "
         "16384]. Received: Fixed {0.5}, default 0.5");
  HyperParameters dropout;
  dropout.Float("dropout", 0.5, 1.0);
  expect({.vocab_size = 10, .sequence_length = 8, .num_classes = 2, .fixed = dropout},
         "HyperTransformer: fixed hyperparameter 'dropout' must take numeric values within [0, "
         "0.95]. Received: Float [0.5, 1], linear, default 0.5");
}

TEST(HyperLSTMTest, DefaultsBuildABidirectionalLstmClassifier) {
  HyperLSTM hm(kLstm);
  HyperParameters hp;
  Model model = build(hm, hp);
  EXPECT_EQ(layer_classes(model),
            (std::vector<std::string>{"Embedding", "Bidirectional", "Dropout", "Dense"}));
  // An LSTM of 64 units over width 64: kernel [64, 4 * 64], recurrent kernel [64, 4 * 64] and
  // bias [4 * 64], twice (one per direction); the concatenated 128 features -> 3 classes.
  const int64_t lstm = 64 * 256 + 64 * 256 + 256;
  EXPECT_EQ(model.count_params(), kVocab * 64 + 2 * lstm + (128 * 3 + 3));
  EXPECT_EQ(model.count_params(), 69635);
  const auto bi = std::dynamic_pointer_cast<nn::Bidirectional>(model.layers()[1]);
  ASSERT_NE(bi, nullptr);
  EXPECT_EQ(bi->forward_layer()->class_name(), "LSTM");
  EXPECT_FALSE(bi->forward_layer()->options().return_sequences);
  const auto dropout = std::dynamic_pointer_cast<nn::Dropout>(model.layers()[2]);
  ASSERT_NE(dropout, nullptr);
  EXPECT_DOUBLE_EQ(dropout->rate(), 0.2);
  EXPECT_EQ(model.predict(random_tokens(4, kLength, kVocab, 3)).shape(), (Shape{4, 3}));
  EXPECT_EQ(model.trainer().optimizer().class_name(), "Adam");
  EXPECT_DOUBLE_EQ(model.trainer().optimizer().learning_rate(), 1e-3);
  EXPECT_FALSE(is_sparse_crossentropy_from_logits(model));
}

TEST(HyperLSTMTest, TheSearchSpaceListsEveryHyperparameterWithItsRange) {
  HyperLSTM hm(kLstm);
  HyperParameters hp;
  build(hm, hp);
  const std::vector<std::string> lines = {
      "Choice cell: {lstm, gru}, default lstm",
      "Int embed_dim: [32, 256] step 32, linear, default 64",
      "Int num_layers: [1, 3], linear, default 1",
      "Int units: [32, 256] step 32, linear, default 64",
      "Boolean bidirectional: {false, true}, default true",
      "Float dropout: [0, 0.5] step 0.1, linear, default 0.2",
      "Choice optimizer: {adam, sgd, rmsprop}, default adam",
      "Float learning_rate: [0.0001, 0.01], log, default 0.001"};
  EXPECT_EQ(space_lines(hp), lines);
  // A language model reads left to right only.
  HyperLSTM lm(kLstmLm);
  HyperParameters lm_hp;
  build(lm, lm_hp);
  std::vector<std::string> lm_lines = lines;
  lm_lines.erase(lm_lines.begin() + 4);
  EXPECT_EQ(space_lines(lm_hp), lm_lines);
}

TEST(HyperLSTMTest, FixedValuesBuildStackedGrusAndALanguageModelReturnsEveryStep) {
  HyperParameters fixed;
  fixed.set("cell", "gru");
  fixed.set("num_layers", int64_t{2});
  fixed.set("units", int64_t{32});
  fixed.set("embed_dim", int64_t{16});
  fixed.set("bidirectional", false);
  fixed.set("dropout", 0.0);
  HyperLSTM hm({.vocab_size = 10, .sequence_length = 6, .num_classes = 2, .fixed = fixed});
  HyperParameters hp;
  Model model = build(hm, hp);
  EXPECT_EQ(layer_classes(model), (std::vector<std::string>{"Embedding", "GRU", "GRU", "Dense"}));
  // A GRU with reset_after (Keras 3): kernel [in, 3 * units], recurrent kernel [units, 3 * units],
  // bias [2, 3 * units] (the input's and the recurrent product's).
  auto gru = [](int64_t in, int64_t units) {
    return in * 3 * units + units * 3 * units + 2 * 3 * units;
  };
  EXPECT_EQ(model.count_params(), 10 * 16 + gru(16, 32) + gru(32, 32) + (32 * 2 + 2));
  const auto first = std::dynamic_pointer_cast<nn::Recurrent>(model.layers()[1]);
  const auto last = std::dynamic_pointer_cast<nn::Recurrent>(model.layers()[2]);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(last, nullptr);
  EXPECT_TRUE(first->options().return_sequences);
  EXPECT_FALSE(last->options().return_sequences);
  EXPECT_EQ(model.predict(random_tokens(3, 6, 10, 4)).shape(), (Shape{3, 2}));

  fixed = HyperParameters();
  fixed.set("num_layers", int64_t{2});
  fixed.set("dropout", 0.0);
  HyperLSTM lm({.vocab_size = 10, .sequence_length = 6, .task = "language_model", .fixed = fixed});
  HyperParameters lm_hp;
  Model lm_model = build(lm, lm_hp);
  EXPECT_EQ(layer_classes(lm_model),
            (std::vector<std::string>{"Embedding", "LSTM", "LSTM", "Dense"}));
  auto lstm = [](int64_t in, int64_t units) {
    return in * 4 * units + units * 4 * units + 4 * units;
  };
  EXPECT_EQ(lm_model.count_params(), 10 * 64 + lstm(64, 64) + lstm(64, 64) + (64 * 10 + 10));
  EXPECT_EQ(lm_model.predict(random_tokens(3, 6, 10, 5)).shape(), (Shape{3, 6, 10}));
  EXPECT_TRUE(is_sparse_crossentropy_from_logits(lm_model));
}

TEST(HyperLSTMTest, BadOptionsGiveClearErrors) {
  auto expect = [](HyperLSTMOptions o, const std::string& message) {
    try {
      HyperLSTM hm(std::move(o));
      ADD_FAILURE() << "expected: " << message;
    } catch (const ValueError& e) {
      EXPECT_STREQ(e.what(), message.c_str());
    }
  };
  expect({.vocab_size = 0, .sequence_length = 8, .num_classes = 2},
         "HyperLSTM: vocab_size must be at least 2. Received: vocab_size=0");
  expect({.vocab_size = 10, .sequence_length = -1, .num_classes = 2},
         "HyperLSTM: sequence_length must be positive. Received: sequence_length=-1");
  expect({.vocab_size = 10, .sequence_length = 8, .task = "lm"},
         "HyperLSTM: task must be classification or language_model. Received: task='lm'");
  expect({.vocab_size = 10, .sequence_length = 8},
         "HyperLSTM: num_classes must be at least 2 for classification. Received: num_classes=0");
  HyperParameters bidirectional;
  bidirectional.set("bidirectional", true);
  expect({.vocab_size = 10, .sequence_length = 8, .task = "language_model", .fixed = bidirectional},
         "HyperLSTM: fixed names hyperparameters the model does not read: bidirectional. It "
         "reads: cell, embed_dim, num_layers, units, dropout, optimizer, learning_rate");
  HyperParameters cell;
  cell.Choice("cell", {"lstm", "simple_rnn"});
  expect({.vocab_size = 10, .sequence_length = 8, .num_classes = 2, .fixed = cell},
         "HyperLSTM: fixed hyperparameter 'cell' must take values among {lstm, gru}. Received: "
         "Choice {lstm, simple_rnn}, default lstm");
  HyperParameters layers_n;
  layers_n.set("num_layers", int64_t{0});
  expect({.vocab_size = 10, .sequence_length = 8, .num_classes = 2, .fixed = layers_n},
         "HyperLSTM: fixed hyperparameter 'num_layers' must take int values within [1, 16]. "
         "Received: Fixed {0}, default 0");
}

// Any point of every space builds and takes a finite training step on a tiny batch, for both
// tasks.
TEST(HyperTextModelsTest, RandomSamplesOfEverySpaceBuildAndTrainOneStep) {
  std::mt19937 rng(2024);
  constexpr int64_t kV = 12, kT = 8;
  const Tensor x = random_tokens(4, kT, kV, 6);
  const Tensor labels = from_vector<int64_t>({0, 1, 2, 1}, Shape{4});
  const Tensor next = random_tokens(4, kT, kV, 7);
  HyperTransformer transformer({.vocab_size = kV, .sequence_length = kT, .num_classes = 3});
  HyperTransformer transformer_lm(
      {.vocab_size = kV, .sequence_length = kT, .task = "language_model"});
  HyperLSTM lstm({.vocab_size = kV, .sequence_length = kT, .num_classes = 3});
  HyperLSTM lstm_lm({.vocab_size = kV, .sequence_length = kT, .task = "language_model"});
  for (HyperModel* hm : std::vector<HyperModel*>{&transformer, &transformer_lm, &lstm, &lstm_lm}) {
    const bool lm = hm == &transformer_lm || hm == &lstm_lm;
    HyperParameters space;
    build(*hm, space);
    for (int sample = 0; sample < 4; ++sample) {
      set_global_seed(static_cast<uint64_t>(sample));
      HyperParameters hp = random_values(space, rng);
      Model model = build(*hm, hp);
      const train::Logs logs = model.train_on_batch(x, lm ? next : labels);
      EXPECT_TRUE(std::isfinite(logs.at("loss"))) << hp.to_json().dump();
      EXPECT_EQ(model.predict(x).shape(), lm ? (Shape{4, kT, kV}) : (Shape{4, 3}))
          << hp.to_json().dump();
    }
  }
}

// Sequences of ids in [2, vocab) whose label is 1 when id 1 appears somewhere in them (half the
// rows, at a random position) and 0 otherwise: a guess scores 0.5, a model that finds the token
// scores 1.
struct PresenceData {
  Tensor x, y, xv, yv;
};

PresenceData presence_data(int64_t vocab, int64_t length) {
  std::mt19937 gen(11);
  std::uniform_int_distribution<int64_t> id(2, vocab - 1), at(0, length - 1);
  auto make = [&](int64_t rows, Tensor& x, Tensor& y) {
    std::vector<int64_t> xs(static_cast<size_t>(rows * length)), ys(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t t = 0; t < length; ++t) xs[static_cast<size_t>(r * length + t)] = id(gen);
      ys[static_cast<size_t>(r)] = r % 2;
      if (r % 2 == 1) xs[static_cast<size_t>(r * length + at(gen))] = 1;
    }
    x = from_vector(xs, Shape{rows, length});
    y = from_vector(ys, Shape{rows});
  };
  PresenceData d;
  make(512, d.x, d.y);
  make(128, d.xv, d.yv);
  return d;
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("osprey_hyper_text_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

// A short random search over each text hypermodel (3 trials of 1 epoch of 32 steps, the spaces
// narrowed to small networks) finds a model that tells the classes apart.
TEST(HyperTextModelsTest, AShortRandomSearchLearnsWhetherATokenIsPresent) {
  constexpr int64_t kV = 10, kT = 8;
  const PresenceData d = presence_data(kV, kT);
  HyperParameters small;
  small.set("num_layers", int64_t{1});
  small.set("embed_dim", int64_t{32});
  small.set("learning_rate", 1e-2);
  small.set("optimizer", "adam");
  HyperParameters small_lstm = small;
  small_lstm.set("units", int64_t{32});
  // Heads of 16 or 32 features: 4 and 8 heads of 8 and 4 need more than 32 steps here.
  small.Choice("num_heads", {int64_t{1}, int64_t{2}});
  const std::vector<std::pair<std::string, std::shared_ptr<HyperModel>>> models = {
      {"transformer",
       std::make_shared<HyperTransformer>(HyperTransformerOptions{
           .vocab_size = kV, .sequence_length = kT, .num_classes = 2, .fixed = small})},
      {"lstm",
       std::make_shared<HyperLSTM>(HyperLSTMOptions{
           .vocab_size = kV, .sequence_length = kT, .num_classes = 2, .fixed = small_lstm})}};
  for (const auto& [name, hm] : models) {
    const auto dir = fresh_dir(name);
    RandomSearch tuner(hm, {.objective = "val_accuracy",
                            .max_trials = 3,
                            .directory = dir.string(),
                            .project_name = name,
                            .seed = 3,
                            .verbose = 0});
    tuner.search(d.x, d.y,
                 {.batch_size = 16,
                  .epochs = 1,
                  .verbose = 0,
                  .validation_data = train::ValidationData(d.xv, d.yv),
                  .seed = 1});
    ASSERT_EQ(tuner.oracle().trials().size(), 3u) << name;
    for (const Trial& t : tuner.oracle().trials())
      EXPECT_EQ(t.status, TrialStatus::completed) << name << ": " << t.message;
    const Trial best = tuner.oracle().get_best_trials(1).at(0);
    ASSERT_TRUE(best.score.has_value()) << name;
    EXPECT_GT(*best.score, 0.9) << name << ": " << best.hyperparameters.to_json().dump();
    // The best model, rebuilt from its values and its saved weights, scores what the trial did.
    Model model = tuner.get_best_models(1).at(0);
    EXPECT_NEAR(model.evaluate(d.xv, d.yv, {.batch_size = 16}).at("accuracy"), *best.score, 1e-6)
        << name;
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace osprey::tune
