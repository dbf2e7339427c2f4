// Layers with several outputs in the functional API (Keras's return_state / initial_state): the
// encoder-decoder of Keras's lstm_seq2seq example built in osprey equals the same computation
// done by hand with call_with_state, trains, gets its encoder gradients through the states,
// round-trips through its config and a saved directory, reads from Keras 3's JSON
// (tests/data/keras3_lstm_seq2seq.json, made by keras3_lstm_seq2seq.py beside it) and predicts
// as Keras did; and the errors name the layer and the shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "osprey/autograd/ops.h"
#include "osprey/io/io_test_util.h"
#include "osprey/io/json.h"
#include "osprey/models/keras_config.h"
#include "osprey/models/model_config.h"
#include "osprey/models/network.h"
#include "osprey/models/saving.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/name_scope.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::models {
namespace {

using nn::SymbolicTensor;
using testing::expect_error;

constexpr int64_t kEncTokens = 3, kDecTokens = 2, kLatent = 4;

// v[i] = scale sin(0.37 i + 0.11 tag), row-major (the fixture script's wave).
Tensor wave(const Shape& shape, int tag, double scale = 0.5, DType dtype = DType::float64) {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = scale * std::sin(0.37 * static_cast<double>(i) + 0.11 * tag);
  return from_vector<double>(v, shape).to(dtype);
}

double max_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double m = 0.0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

struct Seq2seq {
  nn::LayerRef<nn::LSTM> encoder, decoder;
  nn::LayerRef<nn::Dense> dense;
  std::shared_ptr<Functional> model;
};

// Keras's lstm_seq2seq, in float64 so that the comparisons are to rounding.
Seq2seq build_seq2seq() {
  Seq2seq s;
  s.encoder = layers::LSTM(kLatent, {.return_state = true, .name = "encoder", .dtype = "float64"});
  s.decoder = layers::LSTM(
      kLatent,
      {.return_sequences = true, .return_state = true, .name = "decoder", .dtype = "float64"});
  s.dense = layers::Dense(kDecTokens, "softmax", {.name = "dense", .dtype = "float64"});
  const SymbolicTensor enc_in = nn::Input({5, kEncTokens}, "encoder_inputs", DType::float64);
  const std::vector<SymbolicTensor> enc = s.encoder->call_multi({enc_in});
  const SymbolicTensor dec_in = nn::Input({4, kDecTokens}, "decoder_inputs", DType::float64);
  const std::vector<SymbolicTensor> dec =
      s.decoder->call_multi({dec_in}, {.initial_state = {enc[1], enc[2]}});
  s.model = std::make_shared<Functional>(std::vector{enc_in, dec_in}, std::vector{s.dense(dec[0])},
                                         "seq2seq");
  return s;
}

// The same computation with call_with_state, by hand.
Variable by_hand(Seq2seq& s, const Variable& x_enc, const Variable& x_dec) {
  const autograd::RnnOutputs enc = s.encoder->call_with_state(x_enc);
  const autograd::RnnOutputs dec = s.decoder->call_with_state(x_dec, {enc.h, enc.c});
  return s.dense(dec.outputs);
}

TEST(Seq2seqTest, ReturnStateGivesAMultiOutputNodeWhoseStatesFeedTheDecoder) {
  nn::clear_session();
  Seq2seq s = build_seq2seq();
  EXPECT_EQ(s.encoder->num_outputs(), 3u);
  const SymbolicTensor probe = nn::Input({5, kEncTokens});
  const std::vector<SymbolicTensor> outs = s.encoder->call_multi({probe});
  ASSERT_EQ(outs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(outs[i].index(), i);
    EXPECT_EQ(outs[i].node(), outs[0].node());
    EXPECT_EQ(outs[i].shape(), (Shape{-1, kLatent}));
  }
  EXPECT_EQ(s.model->layers().size(), 3u);
  // The summary shows a call's first output.
  EXPECT_EQ(s.model->summary_rows()[2].name, "encoder");
  EXPECT_EQ(s.model->summary_rows()[2].output_shape, (Shape{-1, kLatent}));
  EXPECT_EQ(s.model->summary_rows()[3].output_shape, (Shape{-1, 4, kLatent}));
}

TEST(Seq2seqTest, TheModelEqualsCallWithStateByHandTrainsAndItsGradientsReachTheEncoder) {
  nn::clear_session();
  Seq2seq s = build_seq2seq();
  const Variable x_enc(wave({2, 5, kEncTokens}, 1)), x_dec(wave({2, 4, kDecTokens}, 2));
  const Tensor target = wave({2, 4, kDecTokens}, 3, 1.0);
  const auto loss_of = [&](const Variable& y) {
    return autograd::sum(autograd::mul(y, Variable(target)));
  };
  const std::vector<Variable> vars = s.model->trainable_variables();
  ASSERT_EQ(vars.size(), 8u);
  std::vector<double> losses;
  for (int step = 0; step < 4; ++step) {
    // The model's gradients, then the hand computation's: equal to rounding, the encoder's
    // (reached only through the states) not zero.
    const Variable y = s.model->call_all({x_enc, x_dec}, true)[0];
    const Variable hand = by_hand(s, x_enc, x_dec);
    EXPECT_LT(max_diff(y.value(), hand.value()), 1e-14);
    for (const Variable& v : vars) Variable(v).zero_grad();
    const Variable loss = loss_of(y);
    loss.backward();
    std::vector<Tensor> model_grads;
    model_grads.reserve(vars.size());
    for (const Variable& v : vars) model_grads.push_back(v.grad().clone());
    for (const Variable& v : vars) Variable(v).zero_grad();
    loss_of(hand).backward();
    for (size_t i = 0; i < vars.size(); ++i)
      EXPECT_LT(max_diff(model_grads[i], vars[i].grad()), 1e-14) << vars[i].name();
    const Tensor& enc_kernel_grad = model_grads[0];
    EXPECT_EQ(vars[0].name(), "seq2seq/encoder/kernel");
    EXPECT_GT(max_diff(enc_kernel_grad, zeros(enc_kernel_grad.shape(), {DType::float64})), 1e-6);
    losses.push_back(loss.value().item());
    // Plain gradient descent on the loss.
    for (size_t i = 0; i < vars.size(); ++i) {
      Variable v = vars[i];
      v.set_value(sub(v.value(), mul(model_grads[i], 0.5)));
    }
  }
  for (size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]);
}

TEST(Seq2seqTest, TheEncoderGradientMatchesFiniteDifferences) {
  nn::clear_session();
  Seq2seq s = build_seq2seq();
  const Variable x_enc(wave({2, 5, kEncTokens}, 1)), x_dec(wave({2, 4, kDecTokens}, 2));
  const Tensor target = wave({2, 4, kDecTokens}, 3, 1.0);
  const auto loss = [&] {
    return autograd::sum(
        autograd::mul(s.model->call_all({x_enc, x_dec}, false)[0], Variable(target)));
  };
  Variable kernel = s.encoder->kernel();
  kernel.zero_grad();
  loss().backward();
  const std::vector<double> grad = kernel.grad().to_vector<double>();
  const Tensor base = kernel.value().clone();
  const double eps = 1e-6;
  for (size_t i : {size_t{0}, size_t{7}, size_t{30}, size_t{47}}) {
    std::vector<double> plus = base.to_vector<double>(), minus = plus;
    plus[i] += eps;
    minus[i] -= eps;
    kernel.set_value(from_vector<double>(plus, base.shape()));
    const double lp = loss().value().item();
    kernel.set_value(from_vector<double>(minus, base.shape()));
    const double lm = loss().value().item();
    EXPECT_NEAR(grad[i], (lp - lm) / (2 * eps), 1e-7) << "kernel element " << i;
  }
  kernel.set_value(base);
}

TEST(Seq2seqTest, TheConfigNamesEachOutputAndTheInitialStateAndRoundTrips) {
  nn::clear_session();
  Seq2seq s = build_seq2seq();
  const nlohmann::json c = s.model->get_config();
  const nlohmann::json& decoder = c["layers"][3];
  ASSERT_EQ(decoder["name"], "decoder");
  EXPECT_EQ(decoder["config"]["return_state"], true);
  EXPECT_EQ(decoder["inbound_nodes"], nlohmann::json::parse(R"([[["decoder_inputs", 0, 0,
      {"initial_state": [["encoder", 0, 1], ["encoder", 0, 2]]}]]])"));
  EXPECT_EQ(c["layers"][4]["inbound_nodes"], nlohmann::json::parse(R"([[["decoder", 0, 0]]])"));
  const auto back = std::dynamic_pointer_cast<Functional>(Functional::from_config(c));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->get_config(), c);
  back->set_weights(s.model->get_weights());
  const Variable x_enc(wave({2, 5, kEncTokens}, 1)), x_dec(wave({2, 4, kDecTokens}, 2));
  EXPECT_EQ(back->call_all({x_enc, x_dec}, false)[0].value().to_vector<double>(),
            s.model->call_all({x_enc, x_dec}, false)[0].value().to_vector<double>());
  // Without execution_order (Keras's configs) the calls run in Keras's order.
  nlohmann::json keras_order = c;
  keras_order.erase("execution_order");
  std::swap(keras_order["layers"][2], keras_order["layers"][3]);  // the decoder before the encoder
  const auto reordered = Functional::from_config(keras_order);
  EXPECT_EQ(std::dynamic_pointer_cast<Network>(reordered)->count_params(), s.model->count_params());
}

TEST(Seq2seqTest, ASavedModelLoadsWithItsWeightsAndPredictsTheSame) {
  nn::clear_session();
  Seq2seq s = build_seq2seq();
  const io::testing::TempDir dir;
  save_model(*s.model, dir.path() / "seq2seq");
  const LoadedModel loaded = load_model(dir.path() / "seq2seq");
  EXPECT_EQ(loaded.model->num_inputs(), 2u);
  const Variable x_enc(wave({3, 5, kEncTokens}, 4)), x_dec(wave({3, 4, kDecTokens}, 5));
  EXPECT_EQ(loaded.model->call_all({x_enc, x_dec}, false)[0].value().to_vector<double>(),
            s.model->call_all({x_enc, x_dec}, false)[0].value().to_vector<double>());
}

TEST(Seq2seqTest, StatesCanBeModelOutputsAndCarryNoMask) {
  nn::clear_session();
  // A masked sequence: the output of return_sequences keeps the mask, the states carry none.
  auto lstm = layers::GRU(3, {.return_sequences = true, .return_state = true, .dtype = "float64"});
  const SymbolicTensor in = nn::Input({4, 2}, "x", DType::float64);
  const std::vector<SymbolicTensor> outs =
      lstm->call_multi({layers::Masking(0.0, {.dtype = "float64"})(in)});
  ASSERT_EQ(outs.size(), 2u);
  Functional m({in}, {outs[0], outs[1]}, "gru_states");
  EXPECT_EQ(m.num_outputs(), 2u);
  Tensor x = wave({2, 4, 2}, 6);
  x.slice(1, 3, 4).fill_(0.0);  // the last step of every sequence is padding
  const std::vector<Variable> y = m.call_all({Variable(x)}, false);
  ASSERT_TRUE(y[0].mask().defined());
  EXPECT_EQ(y[0].mask().to_vector<bool>(),
            (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_FALSE(y[1].mask().defined());
  // The state is the last real step's output.
  const std::vector<double> seq = y[0].value().to_vector<double>();
  const std::vector<double> h = y[1].value().to_vector<double>();
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t u = 0; u < 3; ++u)
      EXPECT_DOUBLE_EQ(h[static_cast<size_t>(b * 3 + u)], seq[static_cast<size_t>(b * 12 + 6 + u)]);
  }
}

TEST(Seq2seqTest, BidirectionalSplitsTheInitialStateAndReturnsBothDirectionsStates) {
  nn::clear_session();
  auto bi = layers::Bidirectional(
      layers::LSTM(3, {.return_state = true, .name = "l", .dtype = "float64"}),
      {.name = "bi", .dtype = "float64"});
  const SymbolicTensor in = nn::Input({5, 2}, "x", DType::float64);
  const SymbolicTensor h0 = nn::Input({3}, "h0", DType::float64);
  const SymbolicTensor c0 = nn::Input({3}, "c0", DType::float64);
  const std::vector<SymbolicTensor> outs =
      bi->call_multi({in}, {.initial_state = {h0, c0, c0, h0}});
  ASSERT_EQ(outs.size(), 5u);  // the merged output, forward h and c, backward h and c
  EXPECT_EQ(outs[0].shape(), (Shape{-1, 6}));
  EXPECT_EQ(outs[4].shape(), (Shape{-1, 3}));
  Functional m({in, h0, c0}, outs, "bi_states");
  const Variable x(wave({2, 5, 2}, 7)), h(wave({2, 3}, 8)), c(wave({2, 3}, 9));
  const std::vector<Variable> got = m.call_all({x, h, c}, false);
  const nn::BidirectionalOutputs want = bi->call_with_state(x, {h, c, c, h});
  EXPECT_EQ(got[0].value().to_vector<double>(), want.output.value().to_vector<double>());
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(got[1 + i].value().to_vector<double>(), want.states[i].value().to_vector<double>());
  }
  const auto back = Functional::from_config(m.get_config());
  EXPECT_EQ(std::dynamic_pointer_cast<Network>(back)->num_outputs(), 5u);
}

TEST(Seq2seqTest, Keras3sJsonReadsAndPredictsAsKerasDid) {
  nn::clear_session();
  const nlohmann::json fixture = io::read_json_file(std::filesystem::path(OSPREY_SOURCE_DIR) /
                                                    "tests" / "data" / "keras3_lstm_seq2seq.json");
  const std::shared_ptr<Network> m = model_from_config(fixture["model"], "keras.json");
  ASSERT_EQ(m->num_inputs(), 2u);
  std::vector<Tensor> weights;
  for (const auto& w : fixture["weights"]) {
    Shape shape;
    for (const auto& d : w["shape"]) shape.push_back(d.get<int64_t>());
    weights.push_back(from_vector<float>(w["values"].get<std::vector<float>>(), shape));
  }
  m->set_weights(weights);
  const Tensor x_enc =
      from_vector<float>(fixture["encoder_inputs"].get<std::vector<float>>(), {2, 5, 3});
  const Tensor x_dec =
      from_vector<float>(fixture["decoder_inputs"].get<std::vector<float>>(), {2, 4, 2});
  const std::vector<double> want = fixture["outputs"].get<std::vector<double>>();
  const std::vector<double> got =
      m->call_all({Variable(x_enc), Variable(x_dec)}, false)[0].value().to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-6) << "element " << i;
}

TEST(Seq2seqTest, BadInitialStatesAndOutputIndicesAreNamed) {
  nn::clear_session();
  auto decoder = layers::LSTM(4, {.name = "decoder"});
  const SymbolicTensor x = nn::Input({5, 2});
  const SymbolicTensor h = nn::Input({4}), wrong = nn::Input({3});
  expect_error<ValueError>([&] { decoder->call_multi({x}, {.initial_state = {h}}); },
                           {"decoder: initial_state must hold 2 state(s) (h and c). Received: 1"});
  expect_error<ValueError>(
      [&] {
        decoder->call_multi({x}, {.initial_state = {h, wrong}});
      },
      {"decoder: initial_state[1] (c) must have shape [batch, 4]. Received: [-1, 3]"});
  expect_error<ValueError>(
      [&] {
        decoder->call_multi({Variable(wave({2, 5, 2}, 1, 0.5, DType::float32))},
                            {.initial_state = {Variable(zeros({2, 4})), Variable(zeros({3, 4}))}});
      },
      {"decoder: initial_state[1] (c) must have shape [2, 4]. Received: [3, 4]"});
  auto encoder = layers::LSTM(4, {.return_state = true, .name = "encoder"});
  expect_error<ValueError>([&] { encoder(x); },
                           {"encoder: the call gives 3 outputs (return_state: the output, then "
                            "the states); use call_multi()"});
  expect_error<ValueError>(
      [&] {
        encoder(Variable(zeros({2, 5, 2})));
      },
      {"encoder: return_state=true gives 3 outputs (the output, then the "
       "states); use call_multi() or call_with_state()"});
  auto dense = layers::Dense(2, {}, {.name = "dense"});
  expect_error<ValueError>([&] { dense->call_multi({h}, {.initial_state = {h}}); },
                           {"dense: a Dense call takes no initial_state (only recurrent layers "
                            "do). Received: 1 tensor(s)"});
  // A config that reads output 3 of the encoder's call, which has 3 (0 to 2).
  Seq2seq s = build_seq2seq();
  nlohmann::json c = s.model->get_config();
  c["layers"][3]["inbound_nodes"][0][0][3]["initial_state"][1][2] = 3;
  expect_error<ValueError>([&] { Functional::from_config(c); },
                           {"functional config: layer 'decoder' reads output 3 of 'encoder/0', "
                            "which has 3 output(s)"});
  // Keras 3's call with a keyword osprey does not take.
  nlohmann::json k = io::read_json_file(std::filesystem::path(OSPREY_SOURCE_DIR) / "tests" /
                                        "data" / "keras3_lstm_seq2seq.json")["model"];
  k["config"]["layers"][2]["inbound_nodes"][0]["kwargs"]["constants"] = 1.5;
  expect_error<ValueError>([&] { from_keras_config(k, ""); },
                           {"layers[2] (LSTM): inbound_nodes[0].kwargs.constants: osprey's layers "
                            "take initial_state as a keyword tensor and no other. Received: 1.5"});
}

}  // namespace
}  // namespace osprey::models
