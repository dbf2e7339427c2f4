// float8 (emulated) vs float32 training of a Fashion-MNIST model
// (applications::fashion_mnist_model: "mlp" 784-512-256-10 or "cnn"), in one process, printed
// as one JSON line like bench_quant: the test accuracy of both after the same seed, data and
// schedule (model.quantize("float8") before compile for the float8 one), and training samples/s
// measured afterwards in `reps` interleaved rounds of `steps` train_on_batch calls per mode
// (medians, and the median of the per-round ratios, so a noisy machine disturbs both modes
// alike). On CPU float8 is an emulation (quantize/dequantize around float32 kernels): the ratio
// is its overhead, not a float8 speedup.
//   bench_float8 [--model mlp] [--epochs 5] [--batch-size 128] [--train-samples 60000]
//                [--threads 2] [--reps 5] [--steps 50] [--data DIR]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <vector>

#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/core/parallel.h"
#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/nn/layer.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace os = osprey;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

os::Model trained_model(const std::string& kind, bool float8,
                        const os::datasets::fashion_mnist::Data& data, int64_t samples, int epochs,
                        int64_t batch, uint64_t seed) {
  os::nn::clear_session();
  os::set_global_seed(seed);
  os::Model model = os::applications::fashion_mnist_model(kind);
  if (float8) model.quantize("float8");
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  model.fit(data.train.x.narrow(0, 0, samples), data.train.y.narrow(0, 0, samples),
            {.batch_size = batch, .epochs = epochs, .verbose = 0, .seed = seed});
  return model;
}

double train_seconds(os::Model& model, const os::Tensor& x, const os::Tensor& y, int64_t batch,
                     int steps) {
  const int64_t batches = x.size(0) / batch;
  const auto t0 = Clock::now();
  for (int s = 0; s < steps; ++s) {
    const int64_t b = (s % batches) * batch;
    (void)model.train_on_batch(x.narrow(0, b, batch), y.narrow(0, b, batch));
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"float8 (emulated) vs float32 training of a Fashion-MNIST model"};
  std::string data_dir, kind = "mlp";
  int64_t batch = 128, samples = 60000;
  int epochs = 5, threads = 2, reps = 5, steps = 50;
  uint64_t seed = 42;
  app.add_option("--model", kind)->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--epochs", epochs);
  app.add_option("--batch-size", batch);
  app.add_option("--train-samples", samples);
  app.add_option("--threads", threads);
  app.add_option("--reps", reps);
  app.add_option("--steps", steps);
  app.add_option("--seed", seed);
  app.add_option("--data", data_dir);
  CLI11_PARSE(app, argc, argv);
  try {
    os::set_num_threads(threads);
    auto data = os::datasets::fashion_mnist::load({.directory = data_dir});
    samples = std::min(samples, data.train.x.size(0));
    os::Model f32 = trained_model(kind, false, data, samples, epochs, batch, seed);
    os::Model f8 = trained_model(kind, true, data, samples, epochs, batch, seed);
    const double acc_f32 =
        f32.evaluate(data.test.x, data.test.y, {.batch_size = 500}).at("accuracy");
    const double acc_f8 = f8.evaluate(data.test.x, data.test.y, {.batch_size = 500}).at("accuracy");

    const os::Tensor& x = data.train.x;
    const os::Tensor& y = data.train.y;
    train_seconds(f32, x, y, batch, 5);  // warm-up: primitives and buffers
    train_seconds(f8, x, y, batch, 5);
    std::vector<double> sps_f32, sps_f8, ratios;
    for (int r = 0; r < reps; ++r) {
      const double t32 = train_seconds(f32, x, y, batch, steps);
      const double t8 = train_seconds(f8, x, y, batch, steps);
      sps_f32.push_back(static_cast<double>(steps * batch) / t32);
      sps_f8.push_back(static_cast<double>(steps * batch) / t8);
      ratios.push_back(t32 / t8);
    }
    fmt::print(
        R"({{"framework": "osprey", "model": "{}", "batch": {}, "threads": {}, "epochs": {}, )"
        R"("train_samples": {}, "f32_accuracy": {:.4f}, "float8_accuracy": {:.4f}, )"
        R"("float8_minus_f32_points": {:.2f}, "f32_train_samples_per_s": {:.1f}, )"
        R"("float8_train_samples_per_s": {:.1f}, "float8_over_f32_speed": {:.3f}, "reps": {}}})"
        "\n",
        kind, batch, threads, epochs, samples, acc_f32, acc_f8, 100.0 * (acc_f8 - acc_f32),
        median(sps_f32), median(sps_f8), median(ratios), reps);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_float8: {}\n", e.what());
    return 1;
  }
  return 0;
}
