// Tests of models/network.h without train/: Sequential (add, pop, get_layer, paths, summary,
// replace/remove), Functional (shared layers, several outputs, replace_sublayer) and the
// get_weights/set_weights checks every Network shares.
#include "osprey/models/network.h"

#include <gtest/gtest.h>

#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::models {
namespace {

using Layers = std::vector<std::shared_ptr<nn::Layer>>;
using Names = std::vector<std::string>;
using testing::expect_error;

// A Dense layer with a name of its own.
nn::LayerRef<nn::Dense> dense(int64_t units, const std::string& name) {
  return layers::Dense(units, {}, {.name = name});
}

// The summary's row for one layer, as Network::summary prints it.
std::string summary_row(const std::string& layer, const std::string& shape, int64_t params) {
  return fmt::format(" {:<28}{:<26}{:<9}\n", layer, shape, params);
}

Names paths(const nn::Layer& layer) {
  Names out;
  for (const Variable& v : layer.variables()) out.push_back(v.name());
  return out;
}

Names names(const Layers& layers) {
  Names out;
  for (const auto& l : layers) out.push_back(l->name());
  return out;
}

// What every Network's replace_sublayer checks (Network::adopt_replacement): an unknown name is
// refused with the model's layers listed, and so are a null layer and one with another name.
void expect_replace_checks(Network& model, const std::string& layer, const std::string& listed) {
  const std::string m = model.name();
  expect_error<ValueError>([&] { model.replace_sublayer("nope", dense(2, "nope")); },
                           {m + ": no layer named 'nope'. Layers: " + listed});
  expect_error<ValueError>([&] { model.replace_sublayer(layer, nullptr); },
                           {m + ": replace_sublayer('" + layer + "') received a null layer"});
  expect_error<ValueError>(
      [&] { model.replace_sublayer(layer, dense(2, "other")); },
      {m + ": the layer replacing '" + layer + "' must keep its name", "Received: 'other'"});
}

// Moved from train/fit_test.cpp: a models/ concern, tested without the train::Model handle.
TEST(SequentialTest, WeightPathsFollowTheModel) {
  nn::clear_session();
  Sequential model({layers::Dense(4, "relu"), layers::Dense(2)}, {.input_shape = {3}});
  EXPECT_EQ(paths(model), (Names{"sequential/dense/kernel", "sequential/dense/bias",
                                 "sequential/dense_1/kernel", "sequential/dense_1/bias"}));
  EXPECT_EQ(model.count_params(), 3 * 4 + 4 + 4 * 2 + 2);
  EXPECT_NE(model.summary().find("dense_1 (Dense)"), std::string::npos);
}

TEST(SequentialTest, AddAppendsAndPopRemovesTheLastLayer) {
  nn::clear_session();
  Sequential model({}, {.name = "stack"});
  model.add(dense(3, "a"));
  model.add(dense(2, "b"));
  EXPECT_EQ(names(model.layers()), (Names{"a", "b"}));
  EXPECT_EQ(model.get_layer("b")->path(), "stack/b");
  model.pop();
  EXPECT_EQ(names(model.layers()), (Names{"a"}));
  model.pop();
  EXPECT_TRUE(model.layers().empty());
  expect_error<ValueError>([&] { model.pop(); }, {"stack: pop() on a model without layers"});
  const Variable row(ones({1, 3}));
  expect_error<ValueError>([&] { model(row); }, {"stack: the model has no layers"});
}

TEST(SequentialTest, AddRejectsADuplicateNameANullLayerAndTheModelItself) {
  nn::clear_session();
  auto model =
      std::make_shared<Sequential>(Layers{dense(2, "head")}, SequentialOptions{.name = "m"});
  expect_error<ValueError>(
      [&] { model->add(dense(3, "head")); },
      {"m: all layers must have unique names; 'head' is already in the model"});
  expect_error<ValueError>([&] { model->add(nullptr); }, {"m: cannot add a null layer"});
  expect_error<ValueError>([&] { model->add(model); }, {"m: a model cannot contain itself"});
  EXPECT_EQ(model->layers().size(), 1u);
}

TEST(SequentialTest, GetLayerOfAnUnknownNameListsTheLayers) {
  nn::clear_session();
  Sequential model({layers::Dense(4), layers::Dropout(0.5)});
  EXPECT_EQ(model.get_layer("dropout")->class_name(), "Dropout");
  expect_error<ValueError>([&] { model.get_layer("dense_9"); },
                           {"sequential: no layer named 'dense_9'. Layers: dense, dropout"});
}

TEST(SequentialTest, RunsItsLayersInOrderAndBuildsFromTheFirstCall) {
  nn::clear_session();
  auto first = layers::Dense(5, "relu");
  auto second = layers::Dense(2);
  Sequential model({first, second});
  EXPECT_FALSE(model.built());
  const Tensor x = random_normal({4, 3}, {.seed = 11});
  const std::vector<float> got = model(Variable(x)).value().to_vector<float>();
  EXPECT_TRUE(model.built());
  EXPECT_EQ(model.compute_output_shape({{-1, 3}}), (Shape{-1, 2}));
  const std::vector<float> want = second(first(Variable(x))).value().to_vector<float>();
  EXPECT_EQ(got, want);
}

TEST(SequentialTest, ANestedModelPutsItsLayersUnderItsOwnPath) {
  nn::clear_session();
  auto inner =
      std::make_shared<Sequential>(Layers{layers::Dense(3)}, SequentialOptions{.name = "inner"});
  Sequential outer({inner, layers::Dense(1)}, {.name = "outer", .input_shape = {2}});
  EXPECT_EQ(paths(outer), (Names{"outer/inner/dense/kernel", "outer/inner/dense/bias",
                                 "outer/dense_1/kernel", "outer/dense_1/bias"}));
}

TEST(SequentialTest, SummaryListsEachLayerWithItsOutputShapeAndParameters) {
  nn::clear_session();
  Sequential model({layers::Dense(4, "relu"), layers::Dense(2)},
                   {.name = "mlp", .input_shape = {3}});
  const std::string s = model.summary();
  EXPECT_NE(s.find("Model: \"mlp\""), std::string::npos) << s;
  EXPECT_NE(s.find(summary_row("dense (Dense)", "(None, 4)", 16)), std::string::npos) << s;
  EXPECT_NE(s.find(summary_row("dense_1 (Dense)", "(None, 2)", 10)), std::string::npos) << s;
  EXPECT_NE(s.find("Total params: 26 (104.00 B)"), std::string::npos) << s;
  EXPECT_NE(s.find("Trainable params: 26 (104.00 B)"), std::string::npos) << s;
  EXPECT_NE(s.find("Non-trainable params: 0 (0.00 B)"), std::string::npos) << s;
}

TEST(SequentialTest, SummaryOfAnUnbuiltModelShowsUnknownShapes) {
  nn::clear_session();
  Sequential model({layers::Dense(4)});
  const std::vector<Network::LayerRow> rows = model.summary_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].output_shape.ndim(), 0);
  EXPECT_EQ(rows[0].params, 0);
  EXPECT_NE(model.summary().find(summary_row("dense (Dense)", "?", 0)), std::string::npos)
      << model.summary();
}

TEST(SequentialTest, ReplaceAndRemoveSublayerCheckTheName) {
  nn::clear_session();
  Sequential model({dense(3, "a"), dense(2, "b")}, {.name = "m", .input_shape = {4}});
  expect_replace_checks(model, "b", "a, b");
  auto fresh = dense(2, "b");
  model.replace_sublayer("b", fresh);
  EXPECT_EQ(model.get_layer("b"), fresh.ptr());
  EXPECT_EQ(fresh->path(), "m/b");
  expect_error<ValueError>([&] { model.remove_sublayer("c"); },
                           {"m: no layer named 'c'. Layers: a, b"});
  EXPECT_TRUE(model.remove_sublayer("a"));
  EXPECT_EQ(names(model.layers()), (Names{"b"}));
}

TEST(FunctionalTest, ASharedLayerIsOneLayerWithOneSetOfWeights) {
  nn::clear_session();
  auto in = nn::Input({4});
  auto shared = layers::Dense(4, "tanh");
  auto head = layers::Dense(1);
  Functional model({in}, {head(shared(shared(in)))}, "twice");
  EXPECT_EQ(names(model.layers()), (Names{"dense", "dense_1"}));
  EXPECT_EQ(paths(model), (Names{"twice/dense/kernel", "twice/dense/bias", "twice/dense_1/kernel",
                                 "twice/dense_1/bias"}));
  const Tensor x = random_normal({3, 4}, {.seed = 12});
  const std::vector<float> got = model(Variable(x)).value().to_vector<float>();
  const std::vector<float> want = head(shared(shared(Variable(x)))).value().to_vector<float>();
  EXPECT_EQ(got, want);
  // The summary lists the shared layer once.
  ASSERT_EQ(model.summary_rows().size(), 3u);  // the input, dense, dense_1
}

TEST(FunctionalTest, SeveralOutputsComeBackFromCallAllInOrder) {
  nn::clear_session();
  auto in = nn::Input({6}, "features");
  auto trunk = layers::Dense(8, "relu")(in);
  Functional model({in}, {layers::Dense(3)(trunk), layers::Dense(1)(trunk)}, "two_heads");
  EXPECT_EQ(model.num_inputs(), 1u);
  EXPECT_EQ(model.num_outputs(), 2u);
  const Variable x(random_normal({5, 6}, {.seed = 13}));
  const std::vector<Variable> out = model.call_all({x}, false);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{5, 3}));
  EXPECT_EQ(out[1].shape(), (Shape{5, 1}));
  expect_error<ValueError>([&] { model(x); },
                           {"two_heads: the model has 2 outputs; use call_all()"});
}

TEST(FunctionalTest, InputsOfTheWrongCountOrShapeAreRejected) {
  nn::clear_session();
  auto in = nn::Input({6}, "features");
  Functional model({in}, {layers::Dense(2)(in)}, "f");
  expect_error<ValueError>([&] { model.call_all({}, false); },
                           {"f: expected 1 input(s), received 0"});
  const Variable too_wide(zeros({5, 7}));
  expect_error<ValueError>(
      [&] { model(too_wide); },
      {"f: input 0 ('features') expects shape [-1, 6] (batch first), received [5, 7]"});
}

TEST(FunctionalTest, OutputsThatNeedAnInputNotGivenAreRejected) {
  nn::clear_session();
  auto a = nn::Input({2}, "a");
  auto b = nn::Input({2}, "b");
  auto sum = layers::Add()(std::vector<nn::SymbolicTensor>{a, b});
  expect_error<ValueError>(
      [&] { Functional({a}, {sum}, "f"); },
      {"f: the outputs depend on input 'b', which is not among the model's inputs"});
}

TEST(FunctionalTest, ReplaceSublayerSwapsEveryCallOfASharedLayer) {
  nn::clear_session();
  auto in = nn::Input({3});
  auto shared = dense(3, "s");
  Functional model({in}, {shared(shared(in))}, "f");
  expect_replace_checks(model, "s", "s");
  auto identity = layers::Dense(3, {}, {.use_bias = false, .name = "s"});
  identity->build({{-1, 3}});
  Tensor kernel = identity->kernel().value();
  kernel.copy_(from_vector<float>({1, 0, 0, 0, 1, 0, 0, 0, 1}, {3, 3}));
  model.replace_sublayer("s", identity);
  EXPECT_EQ(model.layers().size(), 1u);
  EXPECT_EQ(identity->path(), "f/s");
  const Tensor x = random_normal({2, 3}, {.seed = 14});
  EXPECT_EQ(model(Variable(x)).value().to_vector<float>(), x.to_vector<float>());
}

TEST(NetworkWeightsTest, GetWeightsCopiesAndSetWeightsWritesInPlace) {
  nn::clear_session();
  Sequential model({layers::Dense(2)}, {.input_shape = {3}});
  const Variable kernel = model.variables()[0];
  std::vector<Tensor> w = model.get_weights();
  ASSERT_EQ(w.size(), 2u);
  const std::vector<float> before = kernel.value().to_vector<float>();
  w[0].fill_(0.5);
  EXPECT_EQ(kernel.value().to_vector<float>(), before);  // a copy, not a view
  model.set_weights(w);
  EXPECT_EQ(kernel.value().to_vector<float>(), std::vector<float>(6, 0.5f));  // same Variable
}

TEST(NetworkWeightsTest, SetWeightsChecksTheCountAndEachShape) {
  nn::clear_session();
  Sequential model({layers::Dense(2)}, {.name = "m", .input_shape = {3}});
  const std::vector<Tensor> kernel_only{zeros({3, 2})};
  expect_error<ValueError>([&] { model.set_weights(kernel_only); },
                           {"m: set_weights expected 2 arrays, received 1"});
  const std::vector<Tensor> wrong_bias{zeros({3, 2}), zeros({3})};
  expect_error<ValueError>([&] { model.set_weights(wrong_bias); },
                           {"m: set_weights: weight 1 (m/dense/bias) has shape [2], received [3]"});
  // Nothing was written by the rejected call.
  EXPECT_NE(model.get_weights()[0].to_vector<float>(), std::vector<float>(6, 0.0f));
}

}  // namespace
}  // namespace osprey::models
