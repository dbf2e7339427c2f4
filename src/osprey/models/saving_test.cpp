// Tests of models/saving.h without train/: a Sequential and a Functional saved and loaded back
// (same architecture, paths and bitwise weights), extras, and the errors that name the file.
#include "osprey/models/saving.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/io/io_test_util.h"
#include "osprey/io/json.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::models {
namespace {

namespace fs = std::filesystem;
using io::testing::TempDir;
using testing::expect_error;

std::vector<std::string> paths(const Network& model) {
  std::vector<std::string> out;
  for (const Variable& v : model.variables()) out.push_back(v.name());
  return out;
}

// Every weight of `b` has the bits of the weight at the same position of `a`.
void expect_same_weights(const Network& a, const Network& b) {
  const std::vector<Tensor> wa = a.get_weights(), wb = b.get_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    EXPECT_EQ(wa[i].dtype(), wb[i].dtype()) << "weight " << i;
    EXPECT_EQ(wa[i].to_vector<float>(), wb[i].to_vector<float>()) << "weight " << i;
  }
}

std::vector<float> outputs(Network& model, const Tensor& x, size_t i = 0) {
  return model.call_all({Variable(x)}, false).at(i).value().to_vector<float>();
}

TEST(SavingTest, ASequentialComesBackWithItsLayersPathsAndBitwiseWeights) {
  nn::clear_session();
  Sequential model({layers::Dense(6, "relu"), layers::Dropout(0.25), layers::Dense(3, "softmax")},
                   {.name = "mlp", .input_shape = {4}});
  TempDir dir;
  save_model(model, dir / "saved");
  EXPECT_EQ(TempDir::list(dir / "saved"),
            (std::vector<std::string>{"config.json", "model.safetensors"}));

  const LoadedModel loaded = load_model(dir / "saved");
  ASSERT_NE(std::dynamic_pointer_cast<Sequential>(loaded.model), nullptr);
  EXPECT_EQ(loaded.config.at("format"), "osprey.model");
  EXPECT_EQ(loaded.model->name(), "mlp");
  EXPECT_TRUE(loaded.model->built());
  std::vector<std::string> classes;
  for (const auto& l : loaded.model->layers()) classes.push_back(l->class_name());
  EXPECT_EQ(classes, (std::vector<std::string>{"Dense", "Dropout", "Dense"}));
  EXPECT_EQ(paths(*loaded.model), paths(model));
  expect_same_weights(model, *loaded.model);
  const Tensor x = random_normal({5, 4}, {.seed = 21});
  EXPECT_EQ(outputs(*loaded.model, x), outputs(model, x));
}

// Issue 43: the wrappers save their inner layers' configs, and the weights keep their paths.
TEST(SavingTest, ASequenceModelWithBidirectionalAndTimeDistributedComesBackTheSame) {
  nn::clear_session();
  Sequential model({layers::Bidirectional(layers::GRU(3, {.return_sequences = true})),
                    layers::TimeDistributed(layers::Dense(2))},
                   {.name = "tagger", .input_shape = {5, 4}});
  TempDir dir;
  save_model(model, dir / "saved");
  const LoadedModel loaded = load_model(dir / "saved");
  EXPECT_EQ(paths(*loaded.model), paths(model));
  EXPECT_EQ(paths(model).front(), "tagger/bidirectional/forward_gru/kernel");
  EXPECT_EQ(paths(model).back(), "tagger/time_distributed/dense/bias");
  expect_same_weights(model, *loaded.model);
  const Tensor x = random_normal({2, 5, 4}, {.seed = 22});
  EXPECT_EQ(outputs(*loaded.model, x), outputs(model, x));
}

TEST(SavingTest, AFunctionalWithASharedLayerAndTwoOutputsComesBackTheSame) {
  nn::clear_session();
  auto in = nn::Input({5}, "features");
  auto shared = layers::Dense(5, "tanh");
  auto h = shared(shared(in));
  Functional model({in}, {layers::Dense(2)(h), layers::Dense(1, "sigmoid")(h)}, "heads");
  TempDir dir;
  save_model(model, dir.path());

  const LoadedModel loaded = load_model(dir.path());
  ASSERT_NE(std::dynamic_pointer_cast<Functional>(loaded.model), nullptr);
  EXPECT_EQ(loaded.model->num_outputs(), 2u);
  EXPECT_EQ(loaded.model->layers().size(), 3u);  // the shared layer once
  EXPECT_EQ(paths(*loaded.model), paths(model));
  expect_same_weights(model, *loaded.model);
  const Tensor x = random_normal({4, 5}, {.seed = 22});
  EXPECT_EQ(outputs(*loaded.model, x, 0), outputs(model, x, 0));
  EXPECT_EQ(outputs(*loaded.model, x, 1), outputs(model, x, 1));
}

TEST(SavingTest, ExtrasAreMergedIntoConfigJsonAndWrittenAsTheirOwnFiles) {
  nn::clear_session();
  Sequential model({layers::Dense(2)}, {.input_shape = {3}});
  TempDir dir;
  SaveExtras extras;
  extras.config["note"] = "kept";
  extras.files.emplace_back("extra.safetensors", io::NamedTensors{{"step", ones({1})}});
  save_model(model, dir.path(), extras);
  EXPECT_EQ(io::read_json_file(dir / "config.json").at("note"), "kept");
  const io::SafetensorsFile extra = io::load_safetensors(dir / "extra.safetensors");
  ASSERT_NE(extra.find("step"), nullptr);
  EXPECT_EQ(extra.find("step")->to_vector<float>(), std::vector<float>{1.0f});
}

TEST(SavingTest, AnUnbuiltModelCannotBeSaved) {
  nn::clear_session();
  Sequential model({layers::Dense(2)}, {.name = "fresh"});
  TempDir dir;
  expect_error<ValueError>([&] { save_model(model, dir / "m"); },
                           {"save_model: fresh is not built yet"});
  EXPECT_FALSE(fs::exists(dir / "m"));
}

// Moved from train/save_test.cpp (it tested load_model through osprey::load_model).
TEST(SavingTest, AMissingDirectoryIsAClearError) {
  expect_error<IoError>([] { load_model("/nonexistent/osprey_model"); },
                        {"/nonexistent/osprey_model/config.json does not exist"});
}

TEST(SavingTest, AMissingWeightsFileIsAnIoErrorNamingIt) {
  nn::clear_session();
  Sequential model({layers::Dense(2)}, {.input_shape = {3}});
  TempDir dir;
  save_model(model, dir.path());
  fs::remove(dir / "model.safetensors");
  expect_error<IoError>([&] { load_model(dir.path()); },
                        {(dir / "model.safetensors").string(), "cannot open for reading"});
}

TEST(SavingTest, AWeightMissingFromTheFileIsReportedByPath) {
  nn::clear_session();
  Sequential a({layers::Dense(2)}, {.name = "a", .input_shape = {3}});
  Sequential b({layers::Dense(2)}, {.name = "b", .input_shape = {3}});
  TempDir dir;
  save_model(a, dir / "a");
  save_model(b, dir / "b");
  fs::copy_file(dir / "b" / "model.safetensors", dir / "a" / "model.safetensors",
                fs::copy_options::overwrite_existing);
  const std::string file = (dir / "a" / "model.safetensors").string();
  expect_error<IoError>([&] { load_model(dir / "a"); },
                        {file, "weight \"a/dense/kernel\" is missing"});
}

// Moved from train/save_test.cpp: the same check, on models/ alone.
TEST(SavingTest, AWeightOfTheWrongShapeIsReportedByName) {
  nn::clear_session();
  Sequential narrow({layers::Dense(4)}, {.input_shape = {3}});
  TempDir dir;
  save_model(narrow, dir / "narrow");
  // Overwrite the weights with a model of another width but the same paths.
  nn::clear_session();
  Sequential wide({layers::Dense(5)}, {.input_shape = {3}});
  save_model(wide, dir / "wide");
  fs::copy_file(dir / "wide" / "model.safetensors", dir / "narrow" / "model.safetensors",
                fs::copy_options::overwrite_existing);
  expect_error<IoError>(
      [&] { load_model(dir / "narrow"); },
      {"weight \"sequential/dense/kernel\" has shape [3, 5], the model expects [3, 4]"});
}

// Issue 27: a config.json that asks for far more than its weights file holds is refused before the
// model is built. The kernel asked for here would take 12 TB; building it first would throw
// bad_alloc (or, under ASan, abort), so only the check before allocation passes this test.
TEST(SavingTest, AConfigThatDoesNotFitItsWeightsIsRefusedBeforeAnythingIsAllocated) {
  nn::clear_session();
  Sequential model({layers::Dense(4)}, {.input_shape = {3}});
  TempDir dir;
  save_model(model, dir.path());
  nlohmann::json config = io::read_json_file(dir / "config.json");
  std::string text = config.dump();
  const std::string units = "\"units\":4";
  ASSERT_NE(text.find(units), std::string::npos) << text;
  text.replace(text.find(units), units.size(), "\"units\":1000000000000");
  io::testing::write_bytes(dir / "config.json", text);
  expect_error<IoError>([&] { load_model(dir.path()); },
                        {(dir / "model.safetensors").string(),
                         "weight \"sequential/dense/kernel\" has shape [3, 4], the model expects "
                         "[3, 1000000000000]"});
}

// A header naming another dtype of the same size (I32 for F32) used to be converted value by
// value into garbage; every field of the header is now checked against the model.
TEST(SavingTest, AWeightOfAnotherDtypeOfTheSameSizeIsRefused) {
  nn::clear_session();
  Sequential model({layers::Dense(2)}, {.input_shape = {3}});
  TempDir dir;
  save_model(model, dir.path());
  std::string bytes = io::testing::read_bytes(dir / "model.safetensors");
  const size_t at = bytes.find("\"F32\"");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 5, "\"I32\"");
  io::testing::write_bytes(dir / "model.safetensors", bytes);
  const std::string file = (dir / "model.safetensors").string();
  // The first tensor in the header (sorted by name) is the bias.
  expect_error<IoError>(
      [&] { load_model(dir.path()); },
      {file, "weight \"sequential/dense/bias\" has dtype int32, the model expects float32"});
  // The same file loaded into a model built another way: the same refusal, and the weights are
  // left as they were.
  const std::vector<float> before = model.get_weights()[0].to_vector<float>();
  expect_error<IoError>(
      [&] { load_weights(model, file); },
      {file, "weight \"sequential/dense/bias\" has dtype int32, the model expects float32"});
  EXPECT_EQ(model.get_weights()[0].to_vector<float>(), before);
}

TEST(SavingTest, AWeightsFileWithATensorTheModelLacksIsRefused) {
  nn::clear_session();
  Sequential one({layers::Dense(2)}, {.input_shape = {3}});
  Sequential two({layers::Dense(3), layers::Dense(2)}, {.input_shape = {3}});
  TempDir dir;
  save_model(one, dir / "one");
  save_model(two, dir / "two");
  // two's file holds a kernel [3, 3] where one expects [3, 2]: keep one's tensors and add an
  // extra one, so only the extra tensor is wrong.
  io::NamedTensors tensors;
  for (const Variable& v : one.variables()) tensors.emplace_back(v.name(), v.value());
  tensors.emplace_back("sequential/dense_9/kernel", two.get_weights()[0]);
  io::save_safetensors(dir / "one" / "model.safetensors", tensors);
  expect_error<IoError>([&] { load_model(dir / "one"); },
                        {(dir / "one" / "model.safetensors").string(),
                         "holds \"sequential/dense_9/kernel\", which the model has no weight for "
                         "(2 weights expected)"});
}

}  // namespace
}  // namespace osprey::models
