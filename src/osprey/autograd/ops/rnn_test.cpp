#include "osprey/autograd/ops/rnn.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "osprey/autograd/grad_mode.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

// One recurrent op with its inputs in Vars order {x, h0, [c0,] kernel, recurrent_kernel, bias}.
struct Cell {
  const char* name;
  int64_t gates;
  bool lstm;
  RnnOptions options;
};

const std::vector<Cell>& cells() {
  static const std::vector<Cell> c{
      {"lstm", 4, true, {}},
      {"gru reset_after", 3, false, {}},
      {"gru", 3, false, {.reset_after = false}},
      {"simple_rnn tanh", 1, false, {}},
      {"simple_rnn relu", 1, false, {.activation = Activation::relu}},
  };
  return c;
}

RnnOutputs run(const Cell& c, const Vars& v, const RnnOptions& o) {
  const std::string n = c.name;
  if (c.lstm) return lstm(v[0], v[1], v[2], v[3], v[4], v[5], o);
  if (n.rfind("gru", 0) == 0) return gru(v[0], v[1], v[2], v[3], v[4], o);
  return simple_rnn(v[0], v[1], v[2], v[3], v[4], o);
}

// Options of the cell with the mask and direction flags of o.
RnnOptions with(const Cell& c, const RnnOptions& o) {
  RnnOptions r = c.options;
  r.mask = o.mask;
  r.go_backwards = o.go_backwards;
  r.zero_output_for_mask = o.zero_output_for_mask;
  return r;
}

Vars inputs(const Cell& c, int64_t batch, int64_t steps, int64_t features, int64_t units,
            uint64_t seed) {
  const bool two_rows = std::string(c.name) == "gru reset_after";
  Vars v{input({batch, steps, features}, seed), input({batch, units}, seed + 1)};
  if (c.lstm) v.push_back(input({batch, units}, seed + 2));
  v.push_back(Variable(osprey::mul(randn({features, c.gates * units}, seed + 3), 0.5), true));
  v.push_back(Variable(osprey::mul(randn({units, c.gates * units}, seed + 4), 0.5), true));
  v.push_back(Variable(
      osprey::mul(randn(two_rows ? Shape{2, c.gates * units} : Shape{c.gates * units}, seed + 5),
                  0.5),
      true));
  return v;
}

// Every output (sequence and final states) in one Variable, for gradcheck.
Variable all_outputs(const RnnOutputs& r) {
  std::vector<Variable> parts{flatten(r.outputs), flatten(r.h)};
  if (r.c.defined()) parts.push_back(flatten(r.c));
  return concat(parts, 0);
}

TEST(RnnTest, GradientsOfEveryCellMatchFiniteDifferences) {
  for (const Cell& c : cells()) {
    SCOPED_TRACE(c.name);
    const Vars v = inputs(c, 2, 3, 3, 2, 10);
    OSPREY_EXPECT_GRADCHECK([&](const Vars& a) { return all_outputs(run(c, a, c.options)); }, v);
  }
}

TEST(RnnTest, GradientsWithAMaskGoBackwardsAndZeroOutputsMatchFiniteDifferences) {
  const Tensor mask = from_vector<double>({1, 0, 1, 1, 0, 0, 1, 0}, {2, 4});
  for (const Cell& c : cells()) {
    for (const bool backwards : {false, true}) {
      for (const bool zero_out : {false, true}) {
        SCOPED_TRACE(std::string(c.name) + (backwards ? " backwards" : "") +
                     (zero_out ? " zero outputs" : ""));
        const RnnOptions o =
            with(c, {.mask = mask, .go_backwards = backwards, .zero_output_for_mask = zero_out});
        const Vars v = inputs(c, 2, 4, 3, 2, 20);
        OSPREY_EXPECT_GRADCHECK([&](const Vars& a) { return all_outputs(run(c, a, o)); }, v);
      }
    }
  }
}

TEST(RnnTest, AMaskedStepKeepsTheStateAndRepeatsTheCarriedOutput) {
  const Cell& c = cells()[0];
  const Vars v = inputs(c, 1, 3, 2, 2, 30);
  const RnnOutputs r = run(c, v, {.mask = from_vector<double>({1, 0, 1}, {1, 3})});
  const std::vector<double> y = values(r.outputs);
  EXPECT_EQ(y[2], y[0]);  // step 1 masked: repeats step 0's output
  EXPECT_EQ(y[3], y[1]);
  const RnnOutputs z =
      run(c, v, {.mask = from_vector<double>({1, 0, 1}, {1, 3}), .zero_output_for_mask = true});
  EXPECT_EQ(values(z.outputs)[2], 0.0);
  expect_near_all(values(z.h), values(r.h), 0.0);
}

TEST(RnnTest, PaddedAndUnpaddedBatchesAgreeOnTheRealSteps) {
  // Sample 0 has 4 real steps, sample 1 has 2 (padded at the end with junk values).
  for (const Cell& c : cells()) {
    SCOPED_TRACE(c.name);
    const Vars full = inputs(c, 2, 4, 3, 2, 40);
    const RnnOptions o = with(c, {.mask = from_vector<double>({1, 1, 1, 1, 1, 1, 0, 0}, {2, 4})});
    const RnnOutputs padded = run(c, full, o);
    // Sample 1 alone, unpadded: the first two steps of its row.
    Vars one;
    one.push_back(Variable(full[0].value().narrow(0, 1, 1).narrow(1, 0, 2).contiguous(), true));
    one.push_back(Variable(full[1].value().narrow(0, 1, 1).contiguous(), true));
    size_t k = 2;
    if (c.lstm) one.push_back(Variable(full[k++].value().narrow(0, 1, 1).contiguous(), true));
    for (; k < full.size(); ++k) one.push_back(Variable(full[k].value(), true));
    const RnnOutputs alone = run(c, one, c.options);
    expect_near_all(values(padded.outputs.value().narrow(0, 1, 1).narrow(1, 0, 2)),
                    values(alone.outputs), 1e-12);
    expect_near_all(values(padded.h.value().narrow(0, 1, 1)), values(alone.h), 1e-12);
    // Gradients of a loss on the real positions: the same for sample 1's inputs and states.
    const Variable lp = sum(
        all_outputs({narrow(narrow(padded.outputs, 0, 1, 1), 1, 0, 2), narrow(padded.h, 0, 1, 1),
                     c.lstm ? narrow(padded.c, 0, 1, 1) : Variable()}));
    const Variable la = sum(all_outputs(alone));
    lp.backward();
    la.backward();
    expect_near_all(values(full[0].grad().narrow(0, 1, 1).narrow(1, 0, 2)), values(one[0].grad()),
                    1e-12);
    expect_near_all(values(full[0].grad().narrow(0, 1, 1).narrow(1, 2, 2)), {0, 0, 0, 0, 0, 0},
                    0.0);
    expect_near_all(values(full[1].grad().narrow(0, 1, 1)), values(one[1].grad()), 1e-12);
  }
}

TEST(RnnTest, PaddedAndUnpaddedBatchesAgreeGoingBackwards) {
  // Reversed, sample 1's two real steps come last, after two masked steps that keep h0.
  for (const Cell& c : cells()) {
    SCOPED_TRACE(c.name);
    const Vars full = inputs(c, 2, 4, 3, 2, 45);
    RnnOptions o = with(
        c, {.mask = from_vector<double>({1, 1, 1, 1, 1, 1, 0, 0}, {2, 4}), .go_backwards = true});
    const RnnOutputs padded = run(c, full, o);
    Vars one{Variable(full[0].value().narrow(0, 1, 1).narrow(1, 0, 2).contiguous()),
             Variable(full[1].value().narrow(0, 1, 1).contiguous())};
    size_t k = 2;
    if (c.lstm) one.push_back(Variable(full[k++].value().narrow(0, 1, 1).contiguous()));
    for (; k < full.size(); ++k) one.push_back(full[k]);
    RnnOptions back = c.options;
    back.go_backwards = true;
    const RnnOutputs alone = run(c, one, back);
    expect_near_all(values(padded.outputs.value().narrow(0, 1, 1).narrow(1, 2, 2)),
                    values(alone.outputs), 1e-12);
    expect_near_all(values(padded.h.value().narrow(0, 1, 1)), values(alone.h), 1e-12);
    // The masked leading steps output the carried state: h0.
    expect_near_all(values(padded.outputs.value().narrow(0, 1, 1).narrow(1, 0, 1)),
                    values(full[1].value().narrow(0, 1, 1)), 0.0);
  }
}

TEST(RnnTest, GoBackwardsRunsTheReversedSequenceAndReturnsOutputsInProcessingOrder) {
  for (const Cell& c : cells()) {
    SCOPED_TRACE(c.name);
    const Vars v = inputs(c, 2, 3, 2, 2, 50);
    RnnOptions back = c.options;
    back.go_backwards = true;
    const RnnOutputs b = run(c, v, back);
    Vars rev = v;
    rev[0] = Variable(osprey::stack(
        {v[0].value().select(1, 2), v[0].value().select(1, 1), v[0].value().select(1, 0)}, 1));
    const RnnOutputs f = run(c, rev, c.options);
    expect_near_all(values(b.outputs), values(f.outputs), 1e-12);
    expect_near_all(values(b.h), values(f.h), 1e-12);
  }
}

TEST(RnnTest, UndefinedStatesAndBiasAreZerosAndNoGradRecordsNothing) {
  for (const Cell& c : cells()) {
    SCOPED_TRACE(c.name);
    const Vars v = inputs(c, 2, 3, 3, 2, 80);
    Vars zeroed = v;
    zeroed[1] = Variable(zeros_like(v[1].value()));
    if (c.lstm) zeroed[2] = Variable(zeros_like(v[2].value()));
    zeroed.back() = Variable(zeros_like(v.back().value()));
    Vars undefined = v;
    undefined[1] = Variable();
    if (c.lstm) undefined[2] = Variable();
    undefined.back() = Variable();
    const RnnOutputs a = run(c, zeroed, c.options), b = run(c, undefined, c.options);
    expect_near_all(values(b.outputs), values(a.outputs), 0.0);
    OSPREY_EXPECT_GRADCHECK(
        [&](const Vars& w) {
          Vars in = undefined;
          in[0] = w[0];
          in[c.lstm ? 3 : 2] = w[1];
          return all_outputs(run(c, in, c.options));
        },
        (Vars{v[0], v[c.lstm ? 3 : 2]}));
    NoGradGuard no_grad;
    const RnnOutputs n = run(c, v, c.options);
    EXPECT_FALSE(n.outputs.requires_grad());
    expect_near_all(values(n.outputs), values(run(c, v, c.options).outputs), 0.0);
  }
}

TEST(RnnTest, BadArgumentsNameTheOpTheArgumentAndTheShapes) {
  const Variable x = input({2, 3, 5}, 60), h = input({2, 4}, 61);
  const Variable k = input({5, 16}, 62), r = input({4, 16}, 63), b = input({16}, 64);
  expect_error<ValueError>(
      [&] {
        lstm(input({2, 5}, 65), h, h, k, r, b);
      },
      {"lstm: inputs must be 3-D [batch, timesteps, features]. Received: "
       "inputs.shape=[2, 5]"});
  expect_error<ValueError>(
      [&] {
        lstm(x, h, h, input({5, 12}, 66), r, b);
      },
      {"lstm: kernel must be [features, 4 * units] = [5, 16] for "
       "inputs.shape=[2, 3, 5] and units=4. Received: kernel.shape=[5, 12]"});
  expect_error<ValueError>(
      [&] {
        lstm(x, h, h, k, input({4, 12}, 67), b);
      },
      {"lstm: recurrent_kernel must be [units, 4 * units]. Received: "
       "recurrent_kernel.shape=[4, 12]"});
  expect_error<ValueError>([&] { lstm(x, h, h, k, r, input({12}, 68)); },
                           {"lstm: bias must be [16] (4 * units). Received: bias.shape=[12]"});
  expect_error<ValueError>(
      [&] {
        lstm(x, input({2, 5}, 69), h, k, r, b);
      },
      {"lstm: initial state h must be [batch, units] = [2, 4]. Received: "
       "h.shape=[2, 5]"});
  expect_error<ValueError>(
      [&] {
        lstm(x, h, input({3, 4}, 70), k, r, b);
      },
      {"lstm: initial state c must be [batch, units] = [2, 4]. Received: "
       "c.shape=[3, 4]"});
  expect_error<ValueError>(
      [&] {
        lstm(x, h, h, k, r, b, {.mask = from_vector<double>({1, 1, 1}, {3})});
      },
      {"lstm: mask must be [batch, timesteps] = [2, 3]. Received: mask.shape=[3]"});
  expect_error<ValueError>(
      [&] {
        gru(x, h, input({5, 12}, 71), input({4, 12}, 72), input({12}, 73));
      },
      {"gru: bias must be [2, 12] (input and recurrent biases of 3 * units, reset_after=True). "
       "Received: bias.shape=[12]"});
  expect_error<ValueError>(
      [&] {
        simple_rnn(x, h, input({5, 8}, 74), input({4, 4}, 75), Variable());
      },
      {"simple_rnn: kernel must be [features, 1 * units] = [5, 4] for inputs.shape=[2, 3, 5] and "
       "units=4. Received: kernel.shape=[5, 8]"});
  expect_error<ValueError>(
      [&] {
        simple_rnn(x, h, input({5, 4}, 76), input({4, 4}, 77), Variable(),
                   {.activation = Activation::sigmoid});
      },
      {"simple_rnn: activation must be tanh or relu"});
  expect_error<ValueError>(
      [&] { lstm(Variable(x.value().to(DType::float32)), h, h, k, r, b); },
      {"lstm: kernel must have the dtype and device of inputs (float32[2, 3, 5] on cpu:0). "
       "Received: float64[5, 16] on cpu:0"});
}

}  // namespace
}  // namespace osprey::autograd
