#include "osprey/nn/layers/recurrent.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

// The layers hold Keras's weights and call the RNN ops (whose values and gradients are tested
// against PyTorch 1.13 in autograd/ops/rnn_torch_test.cpp): a layer equals its op on the same
// weights, for every cell and option it passes on.
TEST(RecurrentTest, EachLayerIsItsOpOnItsOwnWeights) {
  const Variable x(wave({2, 5, 3}, 1));
  auto lstm = layers::LSTM(4, {.return_sequences = true, .go_backwards = true, .dtype = "float64"});
  const Variable y = lstm(x);
  const auto want = autograd::lstm(x, {}, {}, lstm->kernel(), lstm->recurrent_kernel(),
                                   lstm->bias(), {.go_backwards = true});
  EXPECT_EQ(y.value().to_vector<double>(), want.outputs.value().to_vector<double>());
  auto gru = layers::GRU(4, {.reset_after = false, .dtype = "float64"});
  const Variable g = gru(x);
  EXPECT_EQ(g.shape(), (Shape{2, 4}));  // the last step
  EXPECT_EQ(gru->bias().shape(), (Shape{12}));
  EXPECT_EQ(g.value().to_vector<double>(),
            autograd::gru(x, {}, gru->kernel(), gru->recurrent_kernel(), gru->bias(),
                          {.reset_after = false})
                .h.value()
                .to_vector<double>());
  auto rnn = layers::SimpleRNN(4, {.activation = "relu", .dtype = "float64"});
  const Variable s = rnn(x);
  EXPECT_EQ(s.value().to_vector<double>(),
            autograd::simple_rnn(x, {}, rnn->kernel(), rnn->recurrent_kernel(), rnn->bias(),
                                 {.activation = Activation::relu})
                .h.value()
                .to_vector<double>());
}

TEST(RecurrentTest, WeightsFollowKerasShapesAndInitializers) {
  auto lstm = layers::LSTM(8);
  lstm->build({{-1, 10, 5}});
  EXPECT_EQ(lstm->kernel().shape(), (Shape{5, 32}));
  EXPECT_EQ(lstm->recurrent_kernel().shape(), (Shape{8, 32}));
  EXPECT_EQ(lstm->count_params(), 5 * 32 + 8 * 32 + 32);  // Keras: 4 * ((5 + 8) * 8 + 8) = 448
  // unit_forget_bias: the forget gate's block starts at 1, the others at 0.
  const std::vector<float> b = lstm->bias().value().to_vector<float>();
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i], i >= 8 && i < 16 ? 1.0f : 0.0f) << i;
  // The recurrent kernel starts orthogonal: R R^T = I for each [8, 8] gate block's rows.
  const Tensor r = lstm->recurrent_kernel().value().to(DType::float64);
  const std::vector<double> rrt = matmul(r, r.transpose(0, 1)).to_vector<double>();
  EXPECT_NEAR(rrt[0], 1.0, 1e-6);
  EXPECT_NEAR(rrt[1], 0.0, 1e-6);
  auto gru = layers::GRU(8);
  gru->build({{-1, 10, 5}});
  EXPECT_EQ(gru->bias().shape(), (Shape{2, 24}));        // reset_after: input and recurrent biases
  EXPECT_EQ(gru->count_params(), 5 * 24 + 8 * 24 + 48);  // Keras's GRU(8) on 5 features: 360
}

TEST(RecurrentTest, StatesInAndOut) {
  auto lstm = layers::LSTM(3, {.dtype = "float64"});
  const Variable x(wave({2, 4, 2}, 2));
  const Variable h0(wave({2, 3}, 3, 0.5)), c0(wave({2, 3}, 4, 0.5));
  const auto r = lstm->call_with_state(x, {h0, c0});
  EXPECT_EQ(r.outputs.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.c.shape(), (Shape{2, 3}));
  const auto want =
      autograd::lstm(x, h0, c0, lstm->kernel(), lstm->recurrent_kernel(), lstm->bias());
  EXPECT_EQ(r.h.value().to_vector<double>(), want.h.value().to_vector<double>());
  EXPECT_EQ(r.c.value().to_vector<double>(), want.c.value().to_vector<double>());
  // Two halves with the state carried across equal one pass (what stateful use relies on).
  const auto first = lstm->call_with_state(autograd::slice(x, 1, 0, 2), {h0, c0});
  const auto second = lstm->call_with_state(autograd::slice(x, 1, 2, 4), {first.h, first.c});
  test::expect_values_near(second.h.value(), want.h.value().to_vector<double>(), 1e-12);
  EXPECT_EQ(test::value_error([&] { lstm->call_with_state(x, {h0}); }),
            lstm->name() + ": initial_state must hold 2 state(s) (h and c). Received: 1");
}

TEST(RecurrentTest, PassTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::LSTM(3, {.return_sequences = true, .dtype = "float64"}); },
      Shape{2, 4, 2},
      {.output_shape = {2, 4, 3},
       .params = 2 * 12 + 3 * 12 + 12,
       .weights = {{"kernel", {2, 12}}, {"recurrent_kernel", {3, 12}}, {"bias", {12}}}});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::GRU(3, {.go_backwards = true, .dtype = "float64"}); }, Shape{2, 4, 2},
      {.output_shape = {2, 3},
       .params = 2 * 9 + 3 * 9 + 18,
       .weights = {{"kernel", {2, 9}}, {"recurrent_kernel", {3, 9}}, {"bias", {2, 9}}}});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::SimpleRNN(3, {.use_bias = false, .dtype = "float64"}); }, Shape{2, 4, 2},
      {.output_shape = {2, 3},
       .params = 2 * 3 + 3 * 3,
       .weights = {{"kernel", {2, 3}}, {"recurrent_kernel", {3, 3}}}});
}

TEST(RecurrentTest, ReturnStateGivesTheOutputThenTheStatesFromCallMulti) {
  // Keras's [output, h, c] (LSTM) and [output, h] (GRU, SimpleRNN): call_with_state's values,
  // from the given initial_state; the sequence output keeps the input's mask, the states none.
  Tensor xv = test::wave({2, 5, 3}, 1);
  Variable x(xv);
  Tensor mask = ones({2, 5}, {DType::boolean});
  mask.slice(1, 4, 5).fill_(0.0);
  x.set_mask(mask);
  const Variable h0(test::wave({2, 4}, 2)), c0(test::wave({2, 4}, 3));
  for (const char* cls : {"LSTM", "GRU", "SimpleRNN"}) {
    const RecurrentOptions o{.return_sequences = true, .return_state = true, .dtype = "float64"};
    std::shared_ptr<Recurrent> rnn =
        std::string(cls) == "LSTM"  ? std::shared_ptr<Recurrent>(std::make_shared<LSTM>(4, o))
        : std::string(cls) == "GRU" ? std::shared_ptr<Recurrent>(std::make_shared<GRU>(4, o))
                                    : std::make_shared<SimpleRNN>(4, o);
    const bool lstm = std::string(cls) == "LSTM";
    const std::vector<Variable> init = lstm ? std::vector{h0, c0} : std::vector{h0};
    const std::vector<Variable> outs = rnn->call_multi({x}, {.initial_state = init});
    const autograd::RnnOutputs want = rnn->call_with_state(x, init);
    ASSERT_EQ(outs.size(), lstm ? 3u : 2u) << cls;
    EXPECT_EQ(outs[0].value().to_vector<double>(), want.outputs.value().to_vector<double>());
    EXPECT_EQ(outs[1].value().to_vector<double>(), want.h.value().to_vector<double>());
    if (lstm) {
      EXPECT_EQ(outs[2].value().to_vector<double>(), want.c.value().to_vector<double>());
    }
    ASSERT_TRUE(outs[0].mask().defined()) << cls;
    EXPECT_EQ(outs[0].mask().to_vector<bool>(), mask.to_vector<bool>());
    for (size_t i = 1; i < outs.size(); ++i) EXPECT_FALSE(outs[i].mask().defined()) << cls;
  }
  // Without return_sequences the output is the state h itself, as two handles: the output's
  // mask (none here, the sequence ends) and the state's are apart.
  auto last = layers::GRU(4, {.return_state = true, .dtype = "float64"});
  const std::vector<Variable> two = last->call_multi({x});
  EXPECT_EQ(two[0].value().to_vector<double>(), two[1].value().to_vector<double>());
  EXPECT_FALSE(two[0].mask().defined());
  EXPECT_FALSE(two[1].mask().defined());
}

TEST(RecurrentTest, ConfigsAreKerasAndWhatIsNotSupportedIsRefused) {
  const nlohmann::json c = layers::LSTM(16, {.return_sequences = true})->get_config();
  EXPECT_EQ(c["units"], 16);
  EXPECT_EQ(c["recurrent_initializer"]["class_name"], "Orthogonal");
  EXPECT_EQ(c["unit_forget_bias"], true);
  EXPECT_EQ(c["return_sequences"], true);
  EXPECT_FALSE(c.contains("reset_after"));
  auto back = std::dynamic_pointer_cast<LSTM>(layer_from_config("LSTM", c));
  ASSERT_NE(back, nullptr);
  EXPECT_TRUE(back->options().return_sequences);
  nlohmann::json gru = layers::GRU(4, {.reset_after = false})->get_config();
  EXPECT_EQ(gru["reset_after"], false);
  EXPECT_FALSE(
      std::dynamic_pointer_cast<GRU>(layer_from_config("GRU", gru))->options().reset_after);
  // return_state round-trips (Keras's key), for each of the three layers.
  EXPECT_EQ(c["return_state"], false);
  for (const nlohmann::json& with_state :
       {layers::LSTM(3, {.return_state = true})->get_config(),
        layers::GRU(3, {.return_state = true})->get_config(),
        layers::SimpleRNN(3, {.return_state = true})->get_config()}) {
    EXPECT_EQ(with_state["return_state"], true);
    const std::string cls = with_state.contains("unit_forget_bias") ? "LSTM"
                            : with_state.contains("reset_after")    ? "GRU"
                                                                    : "SimpleRNN";
    auto layer = std::dynamic_pointer_cast<Recurrent>(layer_from_config(cls, with_state));
    ASSERT_NE(layer, nullptr);
    EXPECT_TRUE(layer->options().return_state);
    EXPECT_EQ(layer->num_outputs(), cls == "LSTM" ? 3u : 2u);
    EXPECT_EQ(layer->get_config(), with_state);
  }
  EXPECT_EQ(test::value_error([] { layers::LSTM(4, {.activation = "relu"}); }),
            "LSTM: only activation='tanh' with recurrent_activation='sigmoid' runs on the RNN "
            "kernels. Received: activation='relu', recurrent_activation='sigmoid'");
  EXPECT_EQ(test::value_error([] { layers::SimpleRNN(0); }),
            "SimpleRNN: units must be positive. Received: units=0");
  auto lstm = layers::LSTM(4, {.name = "l"});
  EXPECT_EQ(test::value_error([&] {
              lstm(Variable(zeros({2, 5})));
            }),
            "l: expected a 3-D input [batch, timesteps, features]. Received: [2, 5]");
}

// Keras's dropout: one input mask per sequence (the same features dropped at every step), drawn
// per training call; none in inference.
TEST(RecurrentTest, DropoutMasksEachSequenceOnceAndOnlyInTraining) {
  const Variable x(wave({3, 5, 4}, 1));
  auto plain = layers::LSTM(3, {.return_sequences = true, .dtype = "float64"});
  auto drop =
      layers::LSTM(3, {.return_sequences = true, .dropout = 0.5, .seed = 7, .dtype = "float64"});
  plain->build({x.shape()});
  drop->build({x.shape()});
  for (const char* w : {"kernel", "recurrent_kernel", "bias"}) {
    for (const Weight& pw : plain->own_weights())
      if (pw.name == w) test::set_weight(*drop, w, pw.variable.value());
  }
  EXPECT_EQ(drop(x).value().to_vector<double>(), plain(x).value().to_vector<double>());
  Variable xg(wave({3, 5, 4}, 1), true);
  const Variable y = drop(xg, /*training=*/true);
  EXPECT_NE(y.value().to_vector<double>(), plain(x).value().to_vector<double>());
  autograd::sum(y).backward();
  // A dropped input feature gets no gradient at any step; a kept one gets one at every step.
  const std::vector<double> g = xg.grad().to_vector<double>();
  int dropped = 0;
  for (int b = 0; b < 3; ++b) {
    for (int f = 0; f < 4; ++f) {
      const bool zero = g[(b * 5) * 4 + f] == 0.0;
      dropped += zero;
      for (int t = 1; t < 5; ++t) EXPECT_EQ(g[(b * 5 + t) * 4 + f] == 0.0, zero) << b << t << f;
    }
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 12);
  // A layer with its own seed draws the same masks call for call.
  auto again =
      layers::LSTM(3, {.return_sequences = true, .dropout = 0.5, .seed = 7, .dtype = "float64"});
  again->build({x.shape()});
  for (const Weight& w : drop->own_weights()) test::set_weight(*again, w.name, w.variable.value());
  EXPECT_EQ(again(x, true).value().to_vector<double>(), y.value().to_vector<double>());
  EXPECT_EQ(again->seed_calls(), 1u);
}

// recurrent_dropout runs the op one step at a time with the state masked; a mask of ones (a rate
// of 1e-12) gives what the whole-sequence op gives, in both directions and for every cell.
TEST(RecurrentTest, RecurrentDropoutStepsThroughTheSequence) {
  const Variable x(wave({2, 4, 3}, 3));
  for (const bool backwards : {false, true}) {
    const RecurrentOptions o{.return_sequences = true,
                             .go_backwards = backwards,
                             .recurrent_dropout = 1e-12,
                             .seed = 3,
                             .dtype = "float64"};
    for (const auto& rnn : std::vector<std::shared_ptr<Recurrent>>{
             layers::LSTM(2, o).ptr(), layers::GRU(2, o).ptr(), layers::SimpleRNN(2, o).ptr()}) {
      SCOPED_TRACE(rnn->class_name() + (backwards ? " backwards" : ""));
      const autograd::RnnOutputs steps = rnn->call_with_state(x, {}, /*training=*/true);
      const autograd::RnnOutputs whole = rnn->call_with_state(x, {}, false);
      test::expect_values_near(steps.outputs.value(), whole.outputs.value().to_vector<double>(),
                               1e-10);
      test::expect_values_near(steps.h.value(), whole.h.value().to_vector<double>(), 1e-10);
    }
  }
  auto rnn = layers::GRU(3, {.recurrent_dropout = 0.5, .seed = 11, .dtype = "float64"});
  const Variable a = rnn(x, true), inference = rnn(x);
  EXPECT_NE(a.value().to_vector<double>(), inference.value().to_vector<double>());
  rnn->set_seed_calls(0);
  EXPECT_EQ(rnn(x, true).value().to_vector<double>(), a.value().to_vector<double>());
}

TEST(RecurrentTest, DropoutRatesOutsideZeroToOneAreRefused) {
  EXPECT_EQ(test::value_error([] { layers::LSTM(4, {.dropout = 1.0, .name = "l"}); }),
            "l: dropout must be in [0, 1). Received: dropout=1");
  EXPECT_EQ(test::value_error([] { layers::GRU(4, {.recurrent_dropout = -0.1, .name = "g"}); }),
            "g: recurrent_dropout must be in [0, 1). Received: recurrent_dropout=-0.1");
  nlohmann::json c = layers::SimpleRNN(2, {.name = "s"})->get_config();
  c["dropout"] = 1.5;
  EXPECT_EQ(test::value_error([&] { layer_from_config("SimpleRNN", c); }),
            "s: dropout must be in [0, 1). Received: dropout=1.5");
}

TEST(RecurrentTest, DropoutStatefulAndSeedRoundTripThroughTheConfig) {
  const nlohmann::json c =
      layers::GRU(4, {.dropout = 0.25, .recurrent_dropout = 0.125, .stateful = true, .seed = 9})
          ->get_config();
  EXPECT_EQ(c["dropout"], 0.25);
  EXPECT_EQ(c["recurrent_dropout"], 0.125);
  EXPECT_EQ(c["stateful"], true);
  EXPECT_EQ(c["seed"], 9);
  const auto back = std::dynamic_pointer_cast<GRU>(layer_from_config("GRU", c));
  EXPECT_EQ(back->get_config(), c);
  EXPECT_EQ(back->options().seed, std::optional<uint64_t>(9));
  EXPECT_TRUE(layers::LSTM(2)->get_config()["seed"].is_null());
}

// stateful: the final states of a call start the next one, so two calls on the halves of a
// sequence equal one call on the whole; reset_states() starts from zeros again.
TEST(RecurrentTest, StatefulLayersCarryTheirStatesAcrossCalls) {
  const Variable x(wave({2, 6, 3}, 4));
  auto whole = layers::LSTM(3, {.return_sequences = true, .dtype = "float64"});
  auto halves = layers::LSTM(
      3, {.return_sequences = true, .stateful = true, .name = "s", .dtype = "float64"});
  whole->build({x.shape()});
  halves->build({x.shape()});
  for (const Weight& w : whole->own_weights())
    test::set_weight(*halves, w.name, w.variable.value());
  const Variable want = whole(x);
  EXPECT_TRUE(halves->states().empty());
  const Variable first = halves(autograd::slice(x, 1, 0, 3));
  const Variable second = halves(autograd::slice(x, 1, 3, 6));
  test::expect_values_near(autograd::concat({first, second}, 1).value(),
                           want.value().to_vector<double>(), 1e-12);
  ASSERT_EQ(halves->states().size(), 2u);  // h and c
  test::expect_values_near(halves->states()[0],
                           autograd::select(want, 1, 5).value().contiguous().to_vector<double>(),
                           1e-12);
  halves->reset_states();
  for (const Tensor& s : halves->states())
    EXPECT_EQ(s.to_vector<double>(), std::vector<double>(6, 0.0));
  test::expect_values_near(halves(autograd::slice(x, 1, 0, 3)).value(),
                           first.value().to_vector<double>(), 1e-12);
  EXPECT_EQ(test::value_error([&] {
              halves(Variable(wave({3, 2, 3}, 5)));
            }),
            "s: a stateful layer keeps states for a batch of 2. Received: a batch of 3 (every call "
            "of a stateful layer must have the same batch size)");
  // Explicit initial states win over the kept ones (Keras).
  const auto given = halves->call_with_state(
      x, {Variable(zeros({2, 3}, {DType::float64})), Variable(zeros({2, 3}, {DType::float64}))});
  test::expect_values_near(given.outputs.value(), want.value().to_vector<double>(), 1e-12);
}

}  // namespace
}  // namespace osprey::nn
