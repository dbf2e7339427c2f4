#include <osprey/osprey.h>
namespace os = osprey;

int main() {
  os::config::set_dtype_policy("mixed_bfloat16");  // f32 weights, bf16 compute
  os::distribute::MirroredStrategy strategy(os::distribute::virtual_devices(2));
  const int64_t global_batch = 64 * strategy.num_replicas_in_sync();  // 64 per replica
  // 1e-3 scaled linearly with the replicas, reached by a 200-step warmup.
  const auto lr = os::distribute::warmup_to_scaled_learning_rate(1e-3, strategy, 200);

  auto data = os::datasets::fashion_mnist::load({.flatten = true});
  auto [train, val] = data.train.split_tail(10000);
  os::Model model;
  {
    auto scope = strategy.scope();  // build and compile inside the scope
    model = os::Sequential(
        {os::layers::Dense(256, "relu"), os::layers::Dense(10, "softmax", {.dtype = "float32"})});
    model.compile(std::make_shared<os::optim::Adam>(os::optim::AdamOptions{.learning_rate = lr}),
                  "sparse_categorical_crossentropy", {"accuracy"});
  }
  auto history = model.fit(train.batch(global_batch).prefetch(os::data::kAutotune),
                           {.epochs = 2, .validation_data = val});
  return history.history.at("val_accuracy").back() > 0.8 ? 0 : 1;
}
