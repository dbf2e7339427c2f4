#include <gtest/gtest.h>

#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/data/labeled_arrays.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace osprey {
namespace {
using train::History;
using train::Logs;

TEST(FitTest, AnMlpLearnsFashionMnistFromASixThousandImageSubset) {
  set_global_seed(1);
  nn::clear_session();
  auto data = datasets::fashion_mnist::load({.flatten = true});
  const Tensor x = data.train.x.narrow(0, 0, 6000);
  const Tensor y = data.train.y.narrow(0, 0, 6000);
  Model model = Sequential({layers::Dense(128, "relu"), layers::Dense(10, "softmax")});
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  History h = model.fit(x, y, {.batch_size = 64, .epochs = 2, .verbose = 0});
  ASSERT_EQ(h.history["loss"].size(), 2u);
  EXPECT_LT(h.history["loss"][1], h.history["loss"][0]);
  const Logs test = model.evaluate(data.test.x, data.test.y, {.batch_size = 256});
  EXPECT_GE(test.at("accuracy"), 0.80);
  const Tensor probs = model.predict(data.test.x.narrow(0, 0, 10));
  EXPECT_EQ(probs.shape(), (Shape{10, 10}));
}

TEST(FitTest, FunctionalModelWithASharedLayerTrains) {
  nn::clear_session();
  auto in = Input({8});
  auto shared = layers::Dense(8, "relu");
  auto h = shared(shared(in));
  Model model = Functional(in, layers::Dense(1)(h));
  EXPECT_EQ(model.count_params(), 8 * 8 + 8 + 8 + 1);
  model.compile("sgd", "mse");
  const Tensor x = random_normal({64, 8}, {.seed = 3});
  const Tensor y = random_normal({64, 1}, {.seed = 4});
  const double before = model.evaluate(x, y).at("loss");
  model.fit(x, y, {.batch_size = 16, .epochs = 5, .verbose = 0});
  EXPECT_LT(model.evaluate(x, y).at("loss"), before);
}

TEST(FitTest, LabeledArraysServeAsValidationData) {
  nn::clear_session();
  const data::LabeledArrays all{random_normal({40, 3}, {.seed = 8}),
                                random_normal({40, 2}, {.seed = 9})};
  auto [train, val] = all.split_tail(10);
  Model model = Sequential({layers::Dense(2)}, {.input_shape = {3}});
  model.compile("sgd", "mse");
  History h = model.fit(train.x, train.y,
                        {.batch_size = 10, .epochs = 2, .verbose = 0, .validation_data = val});
  ASSERT_EQ(h.history["val_loss"].size(), 2u);
  EXPECT_NEAR(h.history["val_loss"][1], model.evaluate(val.x, val.y).at("loss"), 1e-6);
  h = model.fit(train.batch(10), {.epochs = 1, .verbose = 0, .validation_data = val});
  EXPECT_EQ(h.history["val_loss"].size(), 1u);
  try {
    const data::LabeledArrays unlabeled{val.x, Tensor()};
    model.fit(train.x, train.y, {.verbose = 0, .validation_data = unlabeled});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("validation_data: labeled arrays need both x and y"),
              std::string::npos);
  }
}

TEST(FitTest, FitBeforeCompileIsAClearError) {
  Model model = Sequential({layers::Dense(2)});
  try {
    model.fit(zeros({4, 3}), zeros({4, 2}));
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("call compile() first"), std::string::npos);
  }
}

// Records which batch indices the fit loop reports to callbacks.
class BatchRecorder : public train::Callback {
 public:
  std::vector<int64_t> begins, ends;
  void on_train_batch_begin(int64_t batch, const Logs&) override { begins.push_back(batch); }
  void on_train_batch_end(int64_t batch, const Logs&) override { ends.push_back(batch); }
};

TEST(FitTest, StepsPerExecutionGroupsCallbacksAndTrainsTheSameSteps) {
  const Tensor x = random_normal({80, 6}, {.seed = 5});
  const Tensor y = random_normal({80, 2}, {.seed = 6});
  auto train_with = [&](int64_t k, const std::shared_ptr<BatchRecorder>& rec) {
    nn::clear_session();
    set_global_seed(7);
    Model model = Sequential({layers::Dense(4, "tanh"), layers::Dense(2)}, {.input_shape = {6}});
    model.compile("adam", "mse", {}, {.steps_per_execution = k});
    // 80 samples / batch 8 = 10 steps per epoch.
    History h = model.fit(
        x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .callbacks = {rec}, .seed = 3});
    return std::make_pair(model.get_weights(), h.history["loss"]);
  };
  auto one = std::make_shared<BatchRecorder>();
  auto four = std::make_shared<BatchRecorder>();
  const auto [w1, loss1] = train_with(1, one);
  const auto [w4, loss4] = train_with(4, four);
  EXPECT_EQ(one->ends.size(), 20u);
  EXPECT_EQ(four->begins, (std::vector<int64_t>{0, 4, 8, 0, 4, 8}));
  EXPECT_EQ(four->ends, (std::vector<int64_t>{3, 7, 9, 3, 7, 9}));
  // Grouping changes only what is reported, never the arithmetic.
  ASSERT_EQ(w1.size(), w4.size());
  for (size_t i = 0; i < w1.size(); ++i) {
    const auto a = w1[i].to_vector<float>();
    const auto b = w4[i].to_vector<float>();
    EXPECT_EQ(a, b) << "weight " << i;
  }
  EXPECT_EQ(loss1, loss4);
}

TEST(FitTest, StepsPerExecutionBelowOneIsAClearError) {
  nn::clear_session();
  Model model = Sequential({layers::Dense(2)}, {.input_shape = {3}});
  try {
    model.compile("sgd", "mse", {}, {.steps_per_execution = 0});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("steps_per_execution must be at least 1. Received: 0"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace osprey
