// quant::quantize on real models (Sequential, nested, Functional) with save/load and a trained
// classifier. It lives in train's tests because it needs both models and quant, which are on the
// same level (neither may include the other); train sees both.
#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/autograd/grad_mode.h"
#include "osprey/io/safetensors.h"
#include "osprey/losses/crossentropy.h"
#include "osprey/models/saving.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/adam.h"
#include "osprey/quant/quantize.h"
#include "osprey/quant/quantized_dense.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::quant {
namespace {

using autograd::Variable;
namespace fs = std::filesystem;

std::shared_ptr<models::Sequential> mlp(int64_t in, int64_t hidden, int64_t classes) {
  auto m = std::make_shared<models::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{
      layers::Dense(hidden, "relu"), layers::Dropout(0.1), layers::Dense(classes)});
  m->build({Shape{-1, in}});
  return m;
}

Tensor predict(models::Network& m, const Tensor& x) {
  autograd::NoGradGuard no_grad;
  return m(Variable(x)).value();
}

fs::path temp_dir(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("osprey_quant_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

// Saves m, loads it back and expects bitwise-identical predictions on x; returns the saved
// tensors for checks of their dtypes and shapes.
io::SafetensorsFile expect_identical_after_save_and_load(models::Network& m, const Tensor& x,
                                                         const std::string& name) {
  const Tensor before = predict(m, x);
  const fs::path dir = temp_dir(name);
  models::save_model(m, dir);
  io::SafetensorsFile file = io::load_safetensors(dir / "model.safetensors");
  register_layers();
  const models::LoadedModel loaded = models::load_model(dir);
  EXPECT_EQ(loaded.model->get_config(), m.get_config());
  EXPECT_EQ(predict(*loaded.model, x).to_vector<float>(), before.to_vector<float>());
  fs::remove_all(dir);
  return file;
}

TEST(QuantizeTest, SwapsEveryDenseKeepingNamesPathsAndOtherLayers) {
  nn::clear_session();
  auto m = mlp(16, 32, 4);
  const std::vector<std::string> paths = quantize(*m, "int8");
  EXPECT_EQ(paths,
            (std::vector<std::string>{"sequential/dense/kernel", "sequential/dense_1/kernel"}));
  const auto layers = m->layers();
  EXPECT_EQ(layers[0]->class_name(), "QuantizedDense");
  EXPECT_EQ(layers[1]->class_name(), "Dropout");
  EXPECT_EQ(layers[2]->class_name(), "QuantizedDense");
  EXPECT_EQ(m->get_layer("dense_1")->class_name(), "QuantizedDense");
  std::vector<std::string> names;
  for (const auto& v : m->variables()) names.push_back(v.name());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "sequential/dense/kernel", "sequential/dense/kernel_scale",
                       "sequential/dense/bias", "sequential/dense_1/kernel",
                       "sequential/dense_1/kernel_scale", "sequential/dense_1/bias"}));
}

TEST(QuantizeTest, NestedSequentialModelsAndNamedLayersAreQuantized) {
  nn::clear_session();
  auto inner = std::make_shared<models::Sequential>(
      std::vector<std::shared_ptr<nn::Layer>>{layers::Dense(8, "relu"), layers::Dense(8, "relu")});
  auto m = std::make_shared<models::Sequential>(
      std::vector<std::shared_ptr<nn::Layer>>{inner, layers::Dense(3)});
  m->build({Shape{-1, 5}});
  const Tensor x = random_normal({4, 5}, {.seed = 1});
  const auto before = predict(*m, x).to_vector<double>();
  EXPECT_EQ(quantize(*m, "int8", {.layers = {"dense_1"}}),
            (std::vector<std::string>{"sequential_1/sequential/dense_1/kernel"}));
  EXPECT_EQ(inner->layers()[0]->class_name(), "Dense");
  EXPECT_EQ(inner->layers()[1]->class_name(), "QuantizedDense");
  quantize(*m, "int8");  // the rest
  EXPECT_EQ(inner->layers()[0]->class_name(), "QuantizedDense");
  EXPECT_EQ(m->layers()[1]->class_name(), "QuantizedDense");
  testing::expect_near_all(predict(*m, x).to_vector<double>(), before, 0.05);
}

TEST(QuantizeTest, SaveThenLoadGivesIdenticalPredictionsFromInt8Tensors) {
  nn::clear_session();
  auto m = mlp(16, 32, 4);
  quantize(*m, "int8");
  const Tensor x = random_normal({64, 16}, {.seed = 2});
  const io::SafetensorsFile file = expect_identical_after_save_and_load(*m, x, "save");
  ASSERT_NE(file.find("sequential/dense/kernel"), nullptr);
  EXPECT_EQ(file.find("sequential/dense/kernel")->dtype(), DType::int8);
  EXPECT_EQ(file.find("sequential/dense/kernel_scale")->dtype(), DType::float32);
  EXPECT_EQ(file.find("sequential/dense_1/kernel")->shape(), (Shape{32, 4}));
}

std::shared_ptr<models::Sequential> small_cnn(const char* first_activation = "relu") {
  auto m = std::make_shared<models::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{
      layers::Conv2D(8, 3, {.activation = first_activation}), layers::MaxPooling2D(2),
      layers::Conv2D(6, 3, {.padding = "same", .activation = "relu"}), layers::Flatten(),
      layers::Dense(3)});
  m->build({Shape{-1, 12, 12, 2}});
  return m;
}

std::vector<std::string> class_names(const models::Network& m) {
  std::vector<std::string> out;
  for (const auto& l : m.layers()) out.push_back(l->class_name());
  return out;
}

// A small CNN: both Conv2D layers and the Dense head become int8, the MaxPooling2D after the
// first convolution is folded into it, Flatten stays, and the saved model (int8 HWIO kernels with
// per-filter scales, the folded pool in the config) loads back to identical predictions.
TEST(QuantizeTest, ACnnWithConv2DSavesAndLoadsToIdenticalPredictions) {
  nn::clear_session();
  auto m = small_cnn();
  const Tensor x = random_normal({16, 12, 12, 2}, {.seed = 5});
  const auto f32 = predict(*m, x).to_vector<double>();
  EXPECT_EQ(quantize(*m, "int8"),
            (std::vector<std::string>{"sequential/conv2d/kernel", "sequential/conv2d_1/kernel",
                                      "sequential/dense/kernel"}));
  EXPECT_EQ(class_names(*m), (std::vector<std::string>{"QuantizedConv2D", "QuantizedConv2D",
                                                       "Flatten", "QuantizedDense"}));
  EXPECT_EQ(m->layers()[0]->get_config()["fused_max_pooling"]["name"], "max_pooling2d");
  testing::expect_near_all(predict(*m, x).to_vector<double>(), f32, 0.05);
  const io::SafetensorsFile file = expect_identical_after_save_and_load(*m, x, "cnn");
  ASSERT_NE(file.find("sequential/conv2d_1/kernel"), nullptr);
  EXPECT_EQ(file.find("sequential/conv2d_1/kernel")->dtype(), DType::int8);
  EXPECT_EQ(file.find("sequential/conv2d_1/kernel")->shape(), (Shape{3, 3, 8, 6}));
  EXPECT_EQ(file.find("sequential/conv2d_1/kernel_scale")->shape(), (Shape{6}));
}

// Folding changes how the pooled values are computed, not what they are: the folded model
// predicts bit for bit what the model quantized with fold_max_pooling = false predicts (its
// MaxPooling2D kept). A pool after a gelu convolution is never folded (gelu is not monotone).
TEST(QuantizeTest, FoldingMaxPoolingKeepsPredictionsBitForBitAndCanBeTurnedOff) {
  nn::clear_session();
  auto folded = small_cnn(), kept = small_cnn();
  kept->set_weights(folded->get_weights());
  const Tensor x = random_normal({16, 12, 12, 2}, {.seed = 6});
  quantize(*folded, "int8");
  quantize(*kept, "int8", {.fold_max_pooling = false});
  EXPECT_EQ(class_names(*kept),
            (std::vector<std::string>{"QuantizedConv2D", "MaxPooling2D", "QuantizedConv2D",
                                      "Flatten", "QuantizedDense"}));
  EXPECT_EQ(folded->layers().size(), 4u);
  EXPECT_EQ(predict(*folded, x).to_vector<float>(), predict(*kept, x).to_vector<float>());
  auto gelu = small_cnn("gelu");
  quantize(*gelu, "int8");
  EXPECT_EQ(class_names(*gelu),
            (std::vector<std::string>{"QuantizedConv2D", "MaxPooling2D", "QuantizedConv2D",
                                      "Flatten", "QuantizedDense"}));
}

TEST(QuantizeTest, OnlySequentialModelsRemoveLayers) {
  nn::clear_session();
  auto m = mlp(4, 8, 2);
  EXPECT_TRUE(m->remove_sublayer("dropout"));
  EXPECT_EQ(class_names(*m), (std::vector<std::string>{"Dense", "Dense"}));
  testing::expect_error<ValueError>([&] { m->remove_sublayer("nope"); }, {"nope"});
  auto in = nn::Input({4});
  auto functional =
      std::make_shared<models::Functional>(std::vector{in}, std::vector{layers::Dense(2)(in)});
  EXPECT_FALSE(functional->remove_sublayer("dense_2"));
  EXPECT_EQ(functional->layers().size(), 1u);
}

// A token model: the Embedding table becomes int8 rows with per-row scales (a quarter of the
// bytes), and quantize -> save -> load gives identical predictions.
TEST(QuantizeTest, AnEmbeddingModelSavesAndLoadsToIdenticalPredictions) {
  nn::clear_session();
  auto m = std::make_shared<models::Sequential>(std::vector<std::shared_ptr<nn::Layer>>{
      layers::Embedding(40, 8), layers::Flatten(), layers::Dense(3)});
  m->build({Shape{-1, 5}});
  std::vector<int64_t> ids(6 * 5);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7) % 40);
  const Tensor x = from_vector<int64_t>(ids, {6, 5});
  const auto f32 = predict(*m, x).to_vector<double>();
  EXPECT_EQ(quantize(*m, "int8"), (std::vector<std::string>{"sequential/embedding/embeddings",
                                                            "sequential/dense/kernel"}));
  EXPECT_EQ(m->layers()[0]->class_name(), "QuantizedEmbedding");
  testing::expect_near_all(predict(*m, x).to_vector<double>(), f32, 0.05);
  const io::SafetensorsFile file = expect_identical_after_save_and_load(*m, x, "embedding");
  ASSERT_NE(file.find("sequential/embedding/embeddings"), nullptr);
  EXPECT_EQ(file.find("sequential/embedding/embeddings")->dtype(), DType::int8);
  EXPECT_EQ(file.find("sequential/embedding/embeddings_scale")->shape(), (Shape{40}));
}

// Four Gaussian blobs in 16-D, trained briefly with Adam; int8 must keep the accuracy within a
// point and agree with the float model on nearly every sample.
TEST(QuantizeTest, ATrainedClassifierLosesAtMostOnePointOfAccuracy) {
  nn::clear_session();
  const int64_t n = 2048, d = 16, c = 4;
  const auto centers = random_normal({c, d}, {.seed = 10, .stddev = 1.0}).to_vector<float>();
  const auto noise = random_normal({n, d}, {.seed = 11}).to_vector<float>();
  std::vector<float> xs(n * d);
  std::vector<int64_t> ys(n);
  for (int64_t i = 0; i < n; ++i) {
    ys[i] = i % c;
    for (int64_t j = 0; j < d; ++j) xs[i * d + j] = centers[ys[i] * d + j] + noise[i * d + j];
  }
  const Tensor x = from_vector<float>(xs, {n, d});
  const Tensor y = from_vector<int64_t>(ys, {n});
  const Tensor x_train = x.slice(0, 0, n / 2), y_train = y.slice(0, 0, n / 2);
  const Tensor x_test = x.slice(0, n / 2, n), y_test = y.slice(0, n / 2, n);
  auto m = mlp(d, 32, c);
  optim::Adam opt({.learning_rate = 0.01});
  losses::SparseCategoricalCrossentropy loss({.from_logits = true});
  for (int step = 0; step < 150; ++step) {
    Variable l = loss(y_train, (*m)(Variable(x_train), true));
    l.backward();
    opt.apply(m->trainable_variables());
    for (auto& v : m->trainable_variables()) v.zero_grad();
  }
  const auto accuracy_and_labels = [&](models::Network& model) {
    const auto pred = argmax(predict(model, x_test), 1).to_vector<int64_t>();
    const auto truth = y_test.to_vector<int64_t>();
    int64_t right = 0;
    for (size_t i = 0; i < pred.size(); ++i) right += pred[i] == truth[i];
    return std::make_pair(static_cast<double>(right) / static_cast<double>(pred.size()), pred);
  };
  const auto [acc_f32, pred_f32] = accuracy_and_labels(*m);
  quantize(*m, "int8");
  const auto [acc_int8, pred_int8] = accuracy_and_labels(*m);
  int64_t agree = 0;
  for (size_t i = 0; i < pred_f32.size(); ++i) agree += pred_f32[i] == pred_int8[i];
  RecordProperty("accuracy_f32", std::to_string(acc_f32));
  RecordProperty("accuracy_int8", std::to_string(acc_int8));
  EXPECT_GT(acc_f32, 0.8);  // the model did learn
  EXPECT_NEAR(acc_int8, acc_f32, 0.01);
  EXPECT_GE(static_cast<double>(agree) / static_cast<double>(pred_f32.size()), 0.98);
}

TEST(QuantizeTest, UnsupportedModesLayersAndStatesAreClearErrors) {
  nn::clear_session();
  auto m = mlp(6, 4, 2);
  testing::expect_error<ValueError>([&] { quantize(*m, "int4"); },
                                    {"unsupported mode \"int4\"", "Supported modes: int8"});
  testing::expect_error<ValueError>(
      [&] { quantize(*m, "int8", {.layers = {"dropout"}}); },
      {"'dropout' is a Dropout",
       "quantizes Dense, Conv2D, MultiHeadAttention and Embedding layers only"});
  testing::expect_error<ValueError>([&] { quantize(*m, "int8", {.layers = {"nope"}}); },
                                    {"no layer named 'nope'"});
  quantize(*m, "int8");
  testing::expect_error<ValueError>(
      [&] { quantize(*m, "int8"); },
      {"no Dense, Conv2D, MultiHeadAttention or Embedding layer left"});
  testing::expect_error<ValueError>([&] { quantize(*m, "int8", {.layers = {"dense"}}); },
                                    {"'dense' is already quantized"});
  auto unbuilt = std::make_shared<models::Sequential>(
      std::vector<std::shared_ptr<nn::Layer>>{layers::Dense(3)});
  testing::expect_error<ValueError>([&] { quantize(*unbuilt, "int8"); }, {"not built"});
}

TEST(QuantizeTest, FunctionalModelsSwapEveryCallOfALayer) {
  nn::clear_session();
  // Two branches and a layer called twice: every call of "dense" must run the int8 layer.
  auto in = nn::Input({6});
  auto shared = layers::Dense(6, "relu");
  auto h = shared(layers::Dense(6, "tanh")(in));
  auto out = layers::Dense(3)(
      layers::Add()(std::vector<nn::SymbolicTensor>{shared(h), layers::Dense(6)(in)}));
  auto m = std::make_shared<models::Functional>(std::vector{in}, std::vector{out});
  const Tensor x = random_normal({32, 6}, {.seed = 3});
  const Tensor before = predict(*m, x);
  EXPECT_EQ(quantize(*m, "int8").size(), 4u);
  for (const auto& l : m->layers()) {
    if (l->name().starts_with("dense")) {
      EXPECT_EQ(l->class_name(), "QuantizedDense") << l->name();
    }
  }
  EXPECT_EQ(m->get_layer(shared->name())->class_name(), "QuantizedDense");
  // int8 products: close to the float32 model, not equal to it.
  const Tensor after = predict(*m, x);
  const double err = max(abs(sub(after, before))).item() / max(abs(before)).item();
  EXPECT_GT(err, 0.0);
  EXPECT_LT(err, 0.05);
  expect_identical_after_save_and_load(*m, x, "functional");
  testing::expect_error<ValueError>([&] { m->replace_sublayer("nope", layers::Dense(2)); },
                                    {"no layer named 'nope'"});
  testing::expect_error<ValueError>([&] { m->replace_sublayer(shared->name(), layers::Dense(2)); },
                                    {"must keep its name"});
}

}  // namespace
}  // namespace osprey::quant
