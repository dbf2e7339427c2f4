// Weak scaling of the Fashion-MNIST MLP (784-512-256-10, Adam) under MultiWorkerMirroredStrategy
// (issue 19): each worker keeps its per-worker batch, so the global batch grows with the workers.
//   bench/weak_scaling.sh      runs it under mpirun -np 1 and -np 2, alternately, and prints the
//                              median samples/s of each and the efficiency
//   mpirun -np W ./build/bench/bench_multi_worker [--per-worker-batch 128] [--steps 200]
//                            [--compression none|bf16] [--bucket-bytes 0]
// Rank 0 prints one line: workers, global batch, seconds, samples/s and the time per step.
//   --target-accuracy A [--max-epochs E]: instead, trains whole epochs of the 60,000 training
//   images until the test accuracy reaches A, and prints the epochs and seconds it took
//   (time-to-accuracy; evaluation time excluded).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>

#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/distribute/data_parallel/multi_worker_mirrored_strategy.h"
#include "osprey/train/model.h"

int main(int argc, char** argv) {
  namespace os = osprey;
  CLI::App app{"weak scaling of the Fashion-MNIST MLP"};
  int64_t per_worker = 128, steps = 200, bucket_bytes = 0;
  std::string compression = "none";
  double target = 0.0;
  int max_epochs = 10, epochs = 1;
  app.add_option("--epochs", epochs, "Passes over the --steps batches (for longer timings)");
  app.add_option("--target-accuracy", target);
  app.add_option("--max-epochs", max_epochs);
  app.add_option("--per-worker-batch", per_worker);
  app.add_option("--steps", steps);
  app.add_option("--compression", compression);
  app.add_option("--bucket-bytes", bucket_bytes, "0: measured at start-up");
  CLI11_PARSE(app, argc, argv);

  os::distribute::MultiWorkerMirroredStrategy strategy(
      {}, {.compression = compression, .bucket_bytes = bucket_bytes});
  const int64_t global = per_worker * strategy.num_replicas_in_sync();
  auto data = os::datasets::fashion_mnist::load();
  if (target > 0.0) {
    os::Model model = os::applications::fashion_mnist_model("mlp");
    model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"},
                  {.strategy = strategy.clone()});
    double seconds = 0.0, accuracy = 0.0;
    int epoch = 0;
    while (epoch < max_epochs && accuracy < target) {
      const auto start = std::chrono::steady_clock::now();
      model.fit(data.train.x, data.train.y,
                {.batch_size = global, .epochs = 1, .verbose = 0, .seed = 7});
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      accuracy = model.evaluate(data.test.x, data.test.y, {.batch_size = 1000}).at("accuracy");
      ++epoch;
    }
    if (strategy.is_chief()) {
      fmt::print(
          "workers {} global_batch {} compression {} epochs {} accuracy {:.4f} seconds {:.2f} "
          "reached {}\n",
          strategy.num_workers(), global, compression, epoch, accuracy, seconds,
          accuracy >= target);
    }
    return 0;
  }
  const int64_t rows = global * (steps + 20);  // 20 warm-up steps
  OSPREY_CHECK(rows <= data.train.x.size(0),
               "bench_multi_worker: {} steps of {} rows exceed the training set", steps, global);
  const os::Tensor x = data.train.x.narrow(0, 0, rows), y = data.train.y.narrow(0, 0, rows);
  os::Model model = os::applications::fashion_mnist_model("mlp");
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"},
                {.strategy = strategy.clone()});
  model.fit(x.narrow(0, 0, 20 * global), y.narrow(0, 0, 20 * global),
            {.batch_size = global, .epochs = 1, .verbose = 0, .shuffle = false});
  const auto start = std::chrono::steady_clock::now();
  model.fit(x.narrow(0, 20 * global, steps * global), y.narrow(0, 20 * global, steps * global),
            {.batch_size = global, .epochs = epochs, .verbose = 0, .shuffle = false});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (strategy.is_chief()) {
    fmt::print(
        "workers {} global_batch {} seconds {:.3f} samples_per_s {:.0f} ms_per_step {:.3f} "
        "bucket_kib {}\n",
        strategy.num_workers(), global, seconds,
        static_cast<double>(steps * epochs * global) / seconds,
        seconds / static_cast<double>(steps * epochs) * 1e3, strategy.bucket_bytes() >> 10);
  }
  return 0;
}
