#include <osprey/osprey.h>
#include <osprey/train/trainer.h>  // model().trainer() in the callback

#include <algorithm>
#include <cstdio>
namespace os = osprey;

// A callback of your own: override the hooks you need; model() is the model being fitted.
struct PrintLearningRate : os::train::Callback {
  void on_epoch_end(int epoch, const os::train::Logs& logs) override {
    std::printf("epoch %d: val_loss %.4f, learning rate %g\n", epoch + 1, logs.at("val_loss"),
                model().trainer().optimizer().learning_rate());
  }
};

int main() {
  os::set_global_seed(1);
  auto data = os::datasets::fashion_mnist::load({.flatten = true});
  auto [train, val] = data.train.slice(0, 7000).split_tail(1000);

  // The functional API: an input, layers called on it, a model from input to output.
  auto inputs = os::Input({784});
  auto x = os::layers::Dense(128, "relu")(inputs);
  x = os::layers::Dropout(0.2)(x);
  auto outputs = os::layers::Dense(10, "softmax", {.dtype = "float32"})(x);
  auto model = os::Functional(inputs, outputs, "classifier");
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  std::printf("%s", model.summary().c_str());

  auto history = model.fit(
      train.x, train.y,
      {.batch_size = 128,
       .epochs = 15,
       .verbose = 0,
       .callbacks = {os::callbacks::ModelCheckpoint("best_model", {.save_best_only = true}),
                     os::callbacks::CSVLogger("training_log.csv"),
                     os::callbacks::TensorBoard("logs"),
                     os::callbacks::LearningRateScheduler(
                         [](int epoch, double lr) { return epoch < 10 ? lr : lr * 0.5; }),
                     std::make_shared<PrintLearningRate>()},
       .validation_data = val});

  // ModelCheckpoint kept the epoch of lowest val_loss: load it and evaluate it again.
  const auto& val_loss = history.history.at("val_loss");
  const auto lowest = std::min_element(val_loss.begin(), val_loss.end());
  auto best = os::load_model("best_model");
  const double reloaded = best.evaluate(val.x, val.y, {.batch_size = 128}).at("loss");
  std::printf("lowest val_loss %.6f at epoch %td, the checkpoint's %.6f: %s\n", *lowest,
              lowest - val_loss.begin() + 1, reloaded,
              reloaded == *lowest ? "the checkpoint is the best epoch" : "they differ");
  return reloaded == *lowest ? 0 : 1;
}
