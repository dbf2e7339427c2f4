#include <osprey/osprey.h>

#include <algorithm>
#include <cstdio>
namespace os = osprey;

// Listing 18.1's model, with the two hyperparameters the tuner would sample passed in.
os::Model build_model(int64_t units, const std::string& optimizer) {
  auto model = os::Sequential({os::layers::Dense(units, "relu"), os::layers::Dense(10, "softmax")});
  model.compile(optimizer, "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

int main() {
  os::set_global_seed(1);
  auto data = os::datasets::fashion_mnist::load({.flatten = true});
  // A slice keeps the run short: 6,000 images to train on, 1,000 to validate, 2,000 to test.
  auto train_full = data.train.slice(0, 7000);
  auto [train, val] = train_full.split_tail(1000);
  auto test = data.test.slice(0, 2000);

  // get_best_epoch: many epochs, and EarlyStopping ends the run once val_loss stops improving.
  auto model = build_model(64, "rmsprop");
  auto early_stopping =
      os::callbacks::EarlyStopping({.monitor = "val_loss", .patience = 3, .mode = "min"});
  auto history = model.fit(
      train.x, train.y,
      {.batch_size = 128, .epochs = 100, .callbacks = {early_stopping}, .validation_data = val});
  const auto& val_loss = history.history.at("val_loss");
  const auto best_epoch =
      static_cast<int>(std::min_element(val_loss.begin(), val_loss.end()) - val_loss.begin()) + 1;
  std::printf("early stopping after epoch %d of 100, best epoch %d\n",
              early_stopping->stopped_epoch() + 1, best_epoch);

  // get_best_trained_model: a fresh model on train + val, for 20% more epochs, then the test set.
  auto best = build_model(64, "rmsprop");
  best.fit(train_full.x, train_full.y,
           {.batch_size = 128, .epochs = static_cast<int>(best_epoch * 1.2), .verbose = 0});
  auto logs = best.evaluate(test.x, test.y);
  std::printf("test accuracy: %.4f\n", logs.at("accuracy"));
  return logs.at("accuracy") > 0.75 ? 0 : 1;
}
