#include "osprey/applications/fashion_mnist_models.h"

#include <memory>
#include <string>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"
#include "osprey/optim/factory.h"

namespace osprey::applications {

Model fashion_mnist_model(std::string_view kind) {
  if (kind == "mlp") {
    return Sequential({layers::Flatten(), layers::Dense(512, "relu"), layers::Dense(256, "relu"),
                       layers::Dense(10, "softmax")},
                      {.input_shape = {28, 28}});
  }
  OSPREY_CHECK(kind == "cnn", "fashion_mnist_model: unknown model '{}' (choose mlp or cnn)", kind);
  return Sequential({layers::Reshape({28, 28, 1}), layers::Conv2D(32, 3, {.activation = "relu"}),
                     layers::MaxPooling2D(2), layers::Conv2D(64, 3, {.activation = "relu"}),
                     layers::MaxPooling2D(2), layers::Flatten(), layers::Dense(128, "relu"),
                     layers::Dense(10, "softmax")},
                    {.input_shape = {28, 28}});
}

tune::HyperParameters fashion_mnist_mlp_space() {
  tune::HyperParameters hp;
  hp.Int("units", 64, 512, {.step = 64, .default_value = 256});
  hp.Int("layers", 1, 3, {.default_value = 2});
  hp.Float("dropout", 0.0, 0.5, {.step = 0.1});
  hp.Float("learning_rate", 1e-4, 1e-2, {.sampling = "log", .default_value = 1e-3});
  hp.Choice("optimizer", {"adam", "rmsprop", "sgd"});
  return hp;
}

Model fashion_mnist_tunable_mlp(tune::HyperParameters& hp, const tune::HyperParameters& space) {
  for (const tune::HyperParameter& h : space.space()) hp.retrieve(h);
  const int64_t units = hp.get("units").as_int();
  const int64_t num_layers = hp.get("layers").as_int();
  const double dropout = hp.get("dropout").as_double();
  const double learning_rate = hp.get("learning_rate").as_double();
  const std::string optimizer = hp.get("optimizer").as_string();
  std::vector<std::shared_ptr<nn::Layer>> stack = {layers::Flatten()};
  for (int64_t i = 0; i < num_layers; ++i) {
    stack.push_back(layers::Dense(units, "relu"));
    if (dropout > 0) stack.push_back(layers::Dropout(dropout));
  }
  stack.push_back(layers::Dense(10, "softmax"));
  Model model = Sequential(stack, {.input_shape = {28, 28}});
  std::shared_ptr<optim::Optimizer> opt = optim::get(optimizer);
  opt->set_learning_rate(learning_rate);
  model.compile(opt, "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

}  // namespace osprey::applications
