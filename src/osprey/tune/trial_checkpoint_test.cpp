// Trial checkpoints: ordinary saved models that load by path into another build of the same
// values made in a fresh name scope, with the optimizer state, so a trial that goes on from
// another takes the step the other would have taken next; clear errors naming the file; an
// unbuilt model built from the recorded input shape; 10,000 weights round trip.
#include "osprey/tune/trial_checkpoint.h"

#include <gtest/gtest.h>

#include <random>

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/name_scope.h"
#include "osprey/optim/optimizer.h"
#include "osprey/optim/sgd.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"
#include "osprey/train/trainer.h"

namespace osprey::tune {
namespace {

struct Data {
  Tensor x, y;
};

Data make_data(int rows) {
  std::mt19937 gen(321);
  std::normal_distribution<float> n(0, 1);
  std::vector<float> xs(rows * 4);
  std::vector<int64_t> ys(rows);
  for (int i = 0; i < rows; ++i) {
    for (int k = 0; k < 4; ++k) xs[i * 4 + k] = n(gen);
    ys[i] = xs[i * 4] - xs[i * 4 + 2] > 0 ? 1 : 0;
  }
  return {from_vector(xs, Shape{rows, 4}), from_vector(ys, Shape{rows})};
}

// What a build function does; `scoped` builds in a fresh name scope, as the tuner does.
Model build(const std::string& optimizer, int64_t units = 8, bool input_shape = true) {
  Model model = Sequential({layers::Dense(units, "relu"), layers::Dense(2, "softmax")},
                           {.input_shape = input_shape ? Shape{4} : Shape{}});
  model.compile(optimizer, "sparse_categorical_crossentropy");
  return model;
}
Model scoped_build(const std::string& optimizer, int64_t units = 8, bool input_shape = true) {
  nn::NameScope names;
  return build(optimizer, units, input_shape);
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("osprey_trial_checkpoint_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

// A model trained for `epochs` on d, saved as a trial checkpoint in dir: a parent trial.
Model saved_parent(const Data& d, const std::filesystem::path& dir, int epochs,
                   bool input_shape = true) {
  Model parent = scoped_build("adam", 8, input_shape);
  parent.fit(d.x, d.y, {.batch_size = 32, .epochs = epochs, .verbose = 0, .seed = 1});
  save_trial_checkpoint(dir, parent);
  return parent;
}

// The message of the IoError `f` throws, or "" (a test failure) when it throws none.
template <class F>
std::string io_error_of(F&& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an IoError";
  return "";
}

TEST(TrialCheckpointTest, CarriesTheOptimizerStateToAnotherBuildOfTheSameValues) {
  const Data d = make_data(64);
  const auto dir = fresh_dir("state");
  Model parent = saved_parent(d, dir, 2);

  Model child = scoped_build("adam");
  ASSERT_EQ(child.variables()[0].name(), parent.variables()[0].name());
  load_trial_checkpoint(dir, child);
  EXPECT_EQ(parent.trainer().optimizer().iterations(), 4);  // 2 epochs of 64 / 32 batches
  EXPECT_EQ(child.trainer().optimizer().iterations(), 4);

  Model weights_only = scoped_build("adam");
  load_trial_weights(dir, weights_only);
  EXPECT_EQ(weights_only.trainer().optimizer().iterations(), 0);

  const Tensor xb = d.x.slice(0, 0, 32), yb = d.y.slice(0, 0, 32);
  for (Model* m : {&parent, &child, &weights_only}) m->train_on_batch(xb, yb);
  double fresh_moments_gap = 0;
  for (size_t i = 0; i < parent.variables().size(); ++i) {
    const auto p = testing::values(parent.variables()[i]);
    EXPECT_EQ(testing::values(child.variables()[i]), p) << parent.variables()[i].name();
    const auto w = testing::values(weights_only.variables()[i]);
    for (size_t k = 0; k < p.size(); ++k) {
      fresh_moments_gap = std::max(fresh_moments_gap, std::abs(w[k] - p[k]));
    }
  }
  EXPECT_GT(fresh_moments_gap, 1e-6);  // without the state, Adam's next step differs
  std::filesystem::remove_all(dir);
}

TEST(TrialCheckpointTest, AStateThatDoesNotFitOrAMissingWeightIsAnIoErrorNamingTheFile) {
  const Data d = make_data(32);
  const auto dir = fresh_dir("errors");
  saved_parent(d, dir, 1);

  Model sgd = scoped_build("sgd");
  const std::string state = io_error_of([&] { load_trial_checkpoint(dir, sgd); });
  EXPECT_NE(state.find("optimizer.safetensors: the optimizer state does not fit this model's"),
            std::string::npos)
      << state;
  Model wider = scoped_build("adam", 16);
  const std::string shape = io_error_of([&] { load_trial_weights(dir, wider); });
  EXPECT_NE(shape.find("model.safetensors: weight \"sequential/dense/kernel\" has shape"),
            std::string::npos)
      << shape;
  nn::NameScope names;
  build("adam");
  Model renamed = build("adam");  // the second build in one scope: sequential_1/dense_2/kernel
  const std::string missing = io_error_of([&] { load_trial_weights(dir, renamed); });
  EXPECT_NE(missing.find("model.safetensors: weight"), std::string::npos) << missing;
  EXPECT_NE(missing.find("is missing"), std::string::npos) << missing;
  const std::string none = io_error_of([&] { load_trial_weights(dir / "nowhere", renamed); });
  EXPECT_NE(none.find("nowhere: no saved model here"), std::string::npos) << none;
  std::filesystem::remove_all(dir);
}

TEST(TrialCheckpointTest, AnUnbuiltModelIsBuiltFromTheRecordedInputShape) {
  const Data d = make_data(32);
  const auto dir = fresh_dir("unbuilt");
  Model trained = saved_parent(d, dir, 1, /*input_shape=*/false);
  Model fresh = scoped_build("adam", 8, /*input_shape=*/false);
  ASSERT_TRUE(fresh.variables().empty());
  load_trial_weights(dir, fresh);
  EXPECT_EQ(testing::values(fresh.predict(d.x)), testing::values(trained.predict(d.x)));
  std::filesystem::remove_all(dir);
}

TEST(TrialCheckpointTest, TenThousandWeightsRoundTripWithTheOptimizerState) {
  constexpr int kLayers = 5000;  // a kernel and a bias each
  auto deep = [] {
    nn::NameScope names;
    std::vector<std::shared_ptr<nn::Layer>> stack;
    stack.reserve(kLayers);
    for (int i = 0; i < kLayers; ++i) stack.push_back(layers::Dense(1));
    Model m = Sequential(stack, {.input_shape = {1}});
    // One slot per weight: 10,000 more tensors in optimizer.safetensors.
    m.compile(std::make_shared<optim::SGD>(optim::SGDOptions{.momentum = 0.9}), "mse");
    return m;
  };
  const auto dir = fresh_dir("deep");
  Model parent = deep();
  ASSERT_EQ(parent.variables().size(), 2u * kLayers);
  // Weights near 1 so the signal neither vanishes nor explodes through 5,000 layers.
  uint64_t seed = 0;
  for (const auto& v : parent.variables()) {
    const double mid = v.name().ends_with("kernel") ? 1.0 : 0.0;
    Tensor value = v.value();
    value.copy_(random_uniform(v.shape(), {.seed = ++seed, .low = mid - 0.01, .high = mid + 0.01}));
  }
  const Tensor x = from_vector(std::vector<float>{0.5f, -0.25f}, Shape{2, 1});
  const Tensor y = from_vector(std::vector<float>{0.1f, 0.2f}, Shape{2, 1});
  parent.train_on_batch(x, y);
  save_trial_checkpoint(dir, parent);

  Model child = deep();
  load_trial_checkpoint(dir, child);
  EXPECT_EQ(child.trainer().optimizer().iterations(), 1);
  const auto p = parent.variables(), c = child.variables();
  for (size_t i = 0; i < p.size(); ++i) {
    ASSERT_EQ(c[i].name(), p[i].name());
    ASSERT_EQ(testing::values(c[i]), testing::values(p[i])) << p[i].name();
  }
  const auto parent_state = parent.trainer().optimizer().state();
  const auto child_state = child.trainer().optimizer().state();
  EXPECT_EQ(parent_state.size(), 1u + 2 * kLayers);  // iterations and a momentum per weight
  ASSERT_EQ(child_state.size(), parent_state.size());
  for (size_t i = 0; i < parent_state.size(); i += 997) {
    EXPECT_EQ(child_state[i].first, parent_state[i].first);
    EXPECT_EQ(testing::values(child_state[i].second), testing::values(parent_state[i].second));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace osprey::tune
