// Exact resume: an optimizer rebuilt from get_config() and load_state() takes the same next step.
#include <gtest/gtest.h>

#include "osprey/core/error.h"
#include "osprey/optim/optim.h"
#include "osprey/optim/quadratic_test.h"

namespace osprey::optim {
namespace {

using namespace testing;  // NOLINT

using State = std::vector<std::pair<std::string, Tensor>>;

State cloned(const State& s) {
  State out;
  for (const auto& [name, t] : s) out.emplace_back(name, t.clone());
  return out;
}

void expect_identical_next_step(Optimizer& original, int warm_steps) {
  Quadratic q = make_quadratic(DType::float32);
  for (int s = 0; s < warm_steps; ++s) {
    set_quadratic_grads(q);
    original.apply(q.variables());
  }
  const State saved = cloned(original.state());
  auto resumed = deserialize(serialize(original));
  resumed->load_state(saved);
  EXPECT_EQ(resumed->iterations(), original.iterations());

  Quadratic copy{autograd::Variable(q.kernel.value().clone(), true, q.kernel.name()),
                 autograd::Variable(q.bias.value().clone(), true, q.bias.name())};
  set_quadratic_grads(q);
  set_quadratic_grads(copy);
  original.apply(q.variables());
  resumed->apply(copy.variables());
  // Bitwise: same slots, same step count, same learning rate.
  EXPECT_EQ(q.kernel.value().to_vector<float>(), copy.kernel.value().to_vector<float>())
      << original.class_name();
  EXPECT_EQ(q.bias.value().to_vector<float>(), copy.bias.value().to_vector<float>())
      << original.class_name();
}

TEST(StateTest, EveryOptimizerResumesWithTheIdenticalNextStep) {
  const LearningRate schedule =
      LinearWarmup({.initial_learning_rate = 0.01, .warmup_steps = 5, .schedule = 0.05});
  SGD sgd({.learning_rate = schedule, .momentum = 0.9, .nesterov = true});
  Adam adam({.learning_rate = schedule, .amsgrad = true, .clipnorm = 1.0});
  AdamW adamw({.learning_rate = 0.01, .weight_decay = 0.05, .global_clipnorm = 2.0});
  RMSprop rms({.learning_rate = schedule, .momentum = 0.5, .centered = true});
  for (Optimizer* opt : std::vector<Optimizer*>{&sgd, &adam, &adamw, &rms}) {
    expect_identical_next_step(*opt, 3);
  }
}

TEST(StateTest, StateNamesTheIterationsAndEverySlotByVariablePath) {
  Adam opt({.amsgrad = true});
  run_quadratic(opt, DType::float32, 2);
  std::vector<std::string> names;
  for (const auto& [name, t] : opt.state()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "optimizer/iterations",
                       "optimizer/sequential/dense/bias/momentum",
                       "optimizer/sequential/dense/bias/velocity",
                       "optimizer/sequential/dense/bias/velocity_hat",
                       "optimizer/sequential/dense/kernel/momentum",
                       "optimizer/sequential/dense/kernel/velocity",
                       "optimizer/sequential/dense/kernel/velocity_hat",
                   }));
  EXPECT_EQ(opt.state().front().second.dtype(), DType::int64);
  EXPECT_EQ(opt.state().front().second.item(), 2.0);
  EXPECT_EQ(opt.state("opt2")[1].first, "opt2/sequential/dense/bias/momentum");
}

TEST(StateTest, LoadedFloat64SlotsAreConvertedForFloat32Variables) {
  Adam a;
  run_quadratic(a, DType::float64, 2);
  Adam b;
  b.load_state(cloned(a.state()));
  run_quadratic(b, DType::float32, 1);
  EXPECT_EQ(b.slot("sequential/dense/kernel", "momentum").dtype(), DType::float32);
  EXPECT_EQ(b.iterations(), 3);
}

TEST(StateTest, ForeignOrIncompleteStateIsAValueErrorAndChangesNothing) {
  Adam adam;
  run_quadratic(adam, DType::float32, 1);
  const State good = cloned(adam.state());
  RMSprop rms;
  expect_message<ValueError>(
      [&] { rms.load_state(good); },
      "RMSprop: state entry \"optimizer/sequential/dense/bias/momentum\" is not a slot "
      "of this optimizer (its slots: velocity)");
  State no_iterations(good.begin() + 1, good.end());
  expect_message<ValueError>([&] { adam.load_state(no_iterations); },
                             "Adam: the state has no \"optimizer/iterations\" entry");
  State missing(good.begin(), good.end() - 1);
  expect_message<ValueError>(
      [&] { adam.load_state(missing); },
      "Adam: the state has no \"optimizer/sequential/dense/kernel/velocity\" entry");
  expect_message<ValueError>(
      [&] { adam.load_state(good, "other"); },
      "Adam: state entry \"optimizer/iterations\" does not start with \"other/\"");
  EXPECT_EQ(adam.iterations(), 1);
}

TEST(StateTest, AResizedVariableIsAValueError) {
  Adam opt;
  autograd::Variable w(from_vector<float>({1, 2, 3}), true, "w");
  w.set_grad(from_vector<float>({1, 1, 1}));
  opt.apply({w});
  autograd::Variable w2(from_vector<float>({1, 2}), true, "w");
  w2.set_grad(from_vector<float>({1, 1}));
  expect_message<ValueError>(
      [&] { opt.apply({w2}); },
      "Adam: slot \"momentum\" of \"w\" has shape [3], but the variable has shape [2]");
}

}  // namespace
}  // namespace osprey::optim
