#include <osprey/osprey.h>

#include <cstdio>
namespace os = osprey;

// The same MLP from the same seed, in float32 or in float8.
os::Model mlp(bool float8) {
  os::set_global_seed(11);
  auto model = os::Sequential({os::layers::Dense(256, "relu"), os::layers::Dense(10, "softmax")},
                              {.input_shape = {784}});  // built: quantize needs the shapes
  if (float8) model.quantize("float8");                 // every Dense becomes a Float8Dense
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

int main() {
  auto data = os::datasets::fashion_mnist::load({.flatten = true});
  auto [train, val] = data.train.slice(0, 15000).split_tail(5000);
  const os::train::FitOptions options{
      .batch_size = 128, .epochs = 2, .verbose = 0, .validation_data = val};
  const double f32 = mlp(false).fit(train.x, train.y, options).history.at("val_accuracy").back();
  auto model = mlp(true);
  const double f8 = model.fit(train.x, train.y, options).history.at("val_accuracy").back();

  // The scales and amax histories are weights of their own: they save and load with the model.
  model.save("fmnist_float8");
  auto loaded = os::load_model("fmnist_float8");
  const double reloaded = loaded.evaluate(val.x, val.y).at("accuracy");
  const auto first = loaded.layers()[0];
  std::printf("%s, non-trainable:", first->class_name().c_str());
  for (const auto& v : first->non_trainable_variables()) std::printf(" %s", v.name().c_str());
  std::printf("\n");

  const bool close = f8 >= f32 - 0.01 && reloaded == f8;  // at most a point below
  std::printf("val_accuracy: float32 %.4f, float8 %.4f, float8 reloaded %.4f: %s\n", f32, f8,
              reloaded, close ? "float8 at most a point below float32" : "float8 fell behind");
  return close ? 0 : 1;
}
