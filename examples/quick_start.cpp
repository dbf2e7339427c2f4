#include <osprey/osprey.h>
namespace os = osprey;

int main() {
  auto data = os::datasets::fashion_mnist::load({.flatten = true});  // dataset-fashion-mnist
  auto model = os::Sequential({os::layers::Dense(128, "relu"), os::layers::Dense(10, "softmax")});
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  model.fit(data.train.x, data.train.y, {.batch_size = 128, .epochs = 3, .validation_split = 0.1});
  auto logs = model.evaluate(data.test.x, data.test.y);
  model.save("fmnist_mlp");  // config.json + model.safetensors
  return logs.at("accuracy") > 0.8 ? 0 : 1;
}
