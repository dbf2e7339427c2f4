// osprey side of bench/compare_torch: trains or runs the built-in Fashion-MNIST models with the
// same data, protocol and batch as bench/torch_train.py and prints one JSON line. Each call is its
// own process so that peak RSS belongs to one framework and one model.
//   bench_train --model mlp|cnn --mode train|predict|accuracy|gemm [--samples N] [--epochs N]
//               [--batch-size N] [--seed N] [--threads N] [--data DIR] [--policy NAME]
// --policy sets the global dtype policy before the model is built (mixed_bfloat16: float32
// master weights, bfloat16 compute). Training also reports "activation_mib": the memory the
// forward pass of one batch holds until backward (allocator bytes in use with the graph alive,
// minus before the forward), the figure torch_train.py measures with saved-tensor hooks.
// "gemm" times the eight matrix products of one MLP training step (3 forward, 3 weight
// gradients, 2 input gradients; the first layer's input needs none) back to back through
// osprey::matmul, which is within 2.4% of the bare oneDNN primitive: the ceiling the MLP's
// achieved GFLOP/s is compared against.
#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>

#include "osprey/applications/fashion_mnist_models.h"
#include "osprey/core/parallel.h"
#include "osprey/core/rng.h"
#include "osprey/data/fashion_mnist.h"
#include "osprey/precision/dtype_policy.h"
#include "osprey/tensor/allocator.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace os = osprey;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

os::Model compiled_model(const std::string& kind) {
  os::Model model = os::applications::fashion_mnist_model(kind);
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});  // Adam 1e-3, eps 1e-7
  return model;
}

// Mean seconds per MLP training step spent in its eight GEMMs at batch `b`.
double gemm_step_seconds(int64_t b) {
  const int64_t dims[] = {784, 512, 256, 10};
  std::vector<os::Tensor> w, act, grad;
  for (int i = 0; i < 3; ++i) {
    w.push_back(os::random_normal({dims[i], dims[i + 1]}, {.seed = 1}));
    grad.push_back(os::random_normal({b, dims[i + 1]}, {.seed = 2}));
  }
  for (int i = 0; i < 4; ++i) act.push_back(os::random_normal({b, dims[i]}, {.seed = 3}));
  auto step = [&] {
    for (int i = 0; i < 3; ++i) (void)os::matmul(act[i], w[i]);
    for (int i = 0; i < 3; ++i) (void)os::matmul(act[i].transpose(0, 1), grad[i]);
    for (int i = 1; i < 3; ++i) (void)os::matmul(grad[i], w[i].transpose(0, 1));
  };
  for (int i = 0; i < 20; ++i) step();
  const int reps = 300;
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) step();
  return seconds_since(t0) / reps;
}

// MiB the forward pass and loss of one training batch hold for backward.
double activation_mib(os::Model& model, const os::Tensor& x, const os::Tensor& y) {
  const int64_t before = os::Allocator::instance().stats().bytes_in_use;
  os::autograd::Variable pred = model(os::autograd::Variable(x), true);
  os::autograd::Variable loss = model.trainer().loss()(y, pred);
  const int64_t held = os::Allocator::instance().stats().bytes_in_use - before;
  return static_cast<double>(held) / (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"osprey side of bench/compare_torch"};
  std::string model_kind = "mlp", mode = "train", data_dir, policy = "float32";
  int64_t samples = 60000, batch = 128;
  int epochs = 3, threads = 2;
  uint64_t seed = 42;
  app.add_option("--model", model_kind)->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--mode", mode)->check(CLI::IsMember({"train", "predict", "accuracy", "gemm"}));
  app.add_option("--samples", samples);
  app.add_option("--epochs", epochs);
  app.add_option("--batch-size", batch);
  app.add_option("--seed", seed);
  app.add_option("--threads", threads);
  app.add_option("--data", data_dir);
  app.add_option("--policy", policy);
  CLI11_PARSE(app, argc, argv);

  try {
    os::set_num_threads(threads);
    os::set_global_seed(seed);
    os::config::set_dtype_policy(policy);
    std::string extra;
    if (mode == "gemm") {
      const double step = gemm_step_seconds(batch);
      const double flops = 2.0 * batch * (784 * 512 + 512 * 256 + 256 * 10) * 2 +
                           2.0 * batch * (512 * 256 + 256 * 10);
      extra = fmt::format(R"("gemm_gflops": {:.1f}, "samples_per_s": {:.1f})", flops / step * 1e-9,
                          batch / step);
    } else {
      auto data = os::datasets::fashion_mnist::load({.directory = data_dir});
      os::Model model = compiled_model(model_kind);
      if (mode == "train") {
        const os::Tensor x = data.train.x.narrow(0, 0, samples),
                         y = data.train.y.narrow(0, 0, samples);
        model.fit(x.narrow(0, 0, 20 * batch), y.narrow(0, 0, 20 * batch),
                  {.batch_size = batch, .verbose = 0});
        const auto t0 = Clock::now();
        model.fit(x, y, {.batch_size = batch, .epochs = 1, .verbose = 0});
        const double per_s = static_cast<double>(samples) / seconds_since(t0);
        extra = fmt::format(R"("samples_per_s": {:.1f}, "activation_mib": {:.2f})", per_s,
                            activation_mib(model, x.narrow(0, 0, batch), y.narrow(0, 0, batch)));
      } else if (mode == "predict") {
        const os::Tensor x =
            data.test.x.narrow(0, 0, std::min<int64_t>(samples, data.test.x.size(0)));
        (void)model.predict(x.narrow(0, 0, 4 * batch), {.batch_size = batch});
        const int reps = 3;
        const auto t0 = Clock::now();
        for (int i = 0; i < reps; ++i) (void)model.predict(x, {.batch_size = batch});
        extra = fmt::format(R"("samples_per_s": {:.1f})",
                            reps * static_cast<double>(x.size(0)) / seconds_since(t0));
      } else {
        model.fit(data.train.x, data.train.y,
                  {.batch_size = batch, .epochs = epochs, .verbose = 0, .seed = seed});
        const auto logs = model.evaluate(data.test.x, data.test.y, {.batch_size = 256});
        extra = fmt::format(R"("test_accuracy": {:.4f})", logs.at("accuracy"));
      }
    }
    fmt::print(
        R"({{"framework": "osprey", "model": "{}", "mode": "{}", "policy": "{}", {}, "peak_rss_mib": {:.1f}}})"
        "\n",
        model_kind, mode, policy, extra, peak_rss_mib());
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_train: {}\n", e.what());
    return 1;
  }
  return 0;
}
