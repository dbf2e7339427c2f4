#include <osprey/metrics/accuracy.h>
#include <osprey/osprey.h>

#include <cstdio>
namespace os = osprey;
using os::autograd::Variable;

os::Model build_model() {
  os::set_global_seed(7);  // the same seed gives the same initial weights
  return os::Sequential({os::layers::Dense(64, "relu"), os::layers::Dense(10, "softmax")},
                        {.input_shape = {784}});
}

int main() {
  auto data = os::datasets::fashion_mnist::load({.flatten = true});
  auto batches = data.train.slice(0, 6000).batch(128);  // not shuffled: fit sees the same batches

  // The loop that fit runs, written out: forward, loss, gradients, update, metrics.
  auto model = build_model();
  os::optim::Adam optimizer;
  os::losses::SparseCategoricalCrossentropy loss_fn;
  os::metrics::Mean loss_tracker("loss");
  os::metrics::SparseCategoricalAccuracy accuracy;
  for (int epoch = 0; epoch < 3; ++epoch) {
    loss_tracker.reset_state();
    accuracy.reset_state();
    for (auto& batch : batches) {
      const os::Tensor &x = batch[0], &y = batch[1];
      Variable predictions = model(Variable(x), /*training=*/true);  // records the graph
      Variable loss = loss_fn(y, predictions);
      auto weights = model.trainable_variables();
      for (auto& w : weights) w.zero_grad();
      loss.backward();           // tape.gradient: each weight's grad()
      optimizer.apply(weights);  // apply_gradients: updates every weight from its grad()
      loss_tracker.update_state(loss.item(), static_cast<double>(x.size(0)));
      accuracy.update_state(y, predictions.value());
    }
    std::printf("epoch %d: loss %.6f, accuracy %.4f\n", epoch + 1, loss_tracker.result(),
                accuracy.result());
  }

  // fit on a twin model: same initial weights, same batches, same optimizer.
  auto twin = build_model();
  twin.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  auto history = twin.fit(batches, {.epochs = 3, .verbose = 0});
  const double fit_loss = history.history.at("loss").back();
  const double fit_accuracy = history.history.at("accuracy").back();
  std::printf("fit:     loss %.6f, accuracy %.4f\n", fit_loss, fit_accuracy);
  const bool same =
      fit_loss == loss_tracker.result() && fit_accuracy == accuracy.result() &&
      twin.get_weights()[0].to_vector<float>() == model.get_weights()[0].to_vector<float>();
  std::printf("%s\n", same ? "the loop and fit agree: same loss, accuracy and weights" : "FAILED");
  return same ? 0 : 1;
}
