// int8 vs float32 inference of a Fashion-MNIST model (applications::fashion_mnist_model: "mlp",
// 784-512-256-10, or "cnn", two Conv2D + Dense) at one batch size, in one process, printed as one
// JSON line like bench_train: samples/s of predict() before and after model.quantize("int8"), and
// with --epochs > 0 the test accuracy of both after that much float32 training.
//   bench_quant [--model mlp] [--batch-size 256] [--epochs 0] [--threads 2] [--reps 5] [--data DIR]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>

#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/core/parallel.h"
#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/ops.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace os = osprey;

// Best of `reps` passes over x (the least disturbed by the other processes on the machine).
double predict_samples_per_s(os::Model& model, const os::Tensor& x, int64_t batch, int reps) {
  (void)model.predict(x.narrow(0, 0, 4 * batch), {.batch_size = batch});  // primitives, buffers
  double best = 0.0;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    (void)model.predict(x, {.batch_size = batch});
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, static_cast<double>(x.size(0)) / s);
  }
  return best;
}

double accuracy(os::Model& model, const os::Tensor& x, const os::Tensor& y, int64_t batch) {
  const auto pred = os::argmax(model.predict(x, {.batch_size = batch}), 1).to_vector<int64_t>();
  const auto truth = y.to(os::DType::int64).to_vector<int64_t>();
  int64_t right = 0;
  for (size_t i = 0; i < pred.size(); ++i) right += pred[i] == truth[i];
  return static_cast<double>(right) / static_cast<double>(pred.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"int8 vs float32 predict of the Fashion-MNIST MLP or CNN"};
  std::string data_dir, model_name = "mlp";
  int64_t batch = 256;
  int epochs = 0, threads = 2, reps = 5;
  uint64_t seed = 42;
  app.add_option("--model", model_name)->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--batch-size", batch);
  app.add_option("--epochs", epochs);
  app.add_option("--threads", threads);
  app.add_option("--reps", reps);
  app.add_option("--seed", seed);
  app.add_option("--data", data_dir);
  CLI11_PARSE(app, argc, argv);
  try {
    os::set_num_threads(threads);
    os::set_global_seed(seed);
    auto data = os::datasets::fashion_mnist::load({.directory = data_dir});
    os::Model model = os::applications::fashion_mnist_model(model_name);
    model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
    if (epochs > 0) {
      model.fit(data.train.x, data.train.y,
                {.batch_size = 128, .epochs = epochs, .verbose = 0, .seed = seed});
    }
    const os::Tensor& x = data.test.x;
    const double f32 = predict_samples_per_s(model, x, batch, reps);
    const double acc_f32 = epochs > 0 ? accuracy(model, x, data.test.y, batch) : 0.0;
    model.quantize("int8");
    const double int8 = predict_samples_per_s(model, x, batch, reps);
    const double acc_int8 = epochs > 0 ? accuracy(model, x, data.test.y, batch) : 0.0;
    std::string extra;
    if (epochs > 0)
      extra =
          fmt::format(R"(, "f32_accuracy": {:.4f}, "int8_accuracy": {:.4f})", acc_f32, acc_int8);
    fmt::print(
        R"({{"framework": "osprey", "model": "{}", "batch": {}, "threads": {}, "f32_samples_per_s": {:.1f}, )"
        R"("int8_samples_per_s": {:.1f}, "int8_speedup": {:.2f}, "int8_gemm_impl": "{}"{}}})"
        "\n",
        model_name, batch, threads, f32, int8, int8 / f32,
        os::cpu::int8_matmul_impl(batch, 784, 512), extra);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_quant: {}\n", e.what());
    return 1;
  }
  return 0;
}
