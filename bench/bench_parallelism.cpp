// Model and pipeline parallelism on 2 virtual devices (issue 22), each figure against its
// reference in the same run:
//   bubble   each schedule's measured idle fraction on 2 stages with m = 1, 2, 4, 8 micro-batches
//            against fill-drain theory, (p-1)/(m+p-1);
//   memory   peak bytes in use while training with GPipe against 1F1B (m = 8);
//   dense    the step time of a model-parallel MLP (Megatron's column/row pair) against the same
//            MLP replicated (MirroredStrategy) on the same 2 devices and global batch;
//   report   ModelParallel::memory_report's prediction against the measured peak.
// The model: 4 x Dense(1024, relu) + Dense(10) on 1024 inputs, batch 256, SGD; the median of
// --repeats runs of --steps steps each.
//   bench_parallelism [--steps 8] [--repeats 5]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <vector>

#include "osprey/distribute/data_parallel/mirrored_strategy.h"
#include "osprey/distribute/model_parallel/model_parallel.h"
#include "osprey/distribute/pipeline/pipeline_parallel.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/allocator.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace os = osprey;
namespace dist = osprey::distribute;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kWidth = 1024, kBatch = 256;

os::Model make_model() {
  os::nn::clear_session();
  std::vector<std::shared_ptr<os::nn::Layer>> layers;
  layers.reserve(5);
  for (int i = 0; i < 4; ++i) layers.push_back(os::layers::Dense(kWidth, "relu"));
  layers.push_back(os::layers::Dense(10));
  return os::Sequential(layers, {.input_shape = {kWidth}});
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Run {
  double step_seconds = 0.0;
  int64_t peak_bytes = 0;        // from before the model was made
  int64_t activation_bytes = 0;  // during the timed steps, above what the warm-up left in use
};

// Compiles a fresh model under `strategy`, trains one warm-up step, then `steps` timed steps.
// peak_bytes: the most bytes in use at once from before the model was made (host copy, device
// shards, gradients, activations; not the data).
Run train(const std::shared_ptr<const os::train::Strategy>& strategy, int steps,
          const dist::PipelineParallel* pipe = nullptr) {
  const os::Tensor x = os::random_normal({kBatch * (steps + 1), kWidth}, {.seed = 1});
  const os::Tensor y = os::random_normal({kBatch * (steps + 1), 10}, {.seed = 2});
  os::Allocator::instance().reset_peak();
  const int64_t before = os::Allocator::instance().stats().bytes_in_use;
  os::Model m = make_model();
  m.compile("sgd", "mse", {}, {.strategy = strategy});
  m.fit(x.narrow(0, 0, kBatch), y.narrow(0, 0, kBatch),
        {.batch_size = kBatch, .epochs = 1, .verbose = 0, .shuffle = false});
  if (pipe != nullptr) pipe->reset_stats();
  const int64_t peak_warm = os::Allocator::instance().stats().peak_bytes_in_use;
  const int64_t resident = os::Allocator::instance().stats().bytes_in_use;
  os::Allocator::instance().reset_peak();
  const Clock::time_point t = Clock::now();
  m.fit(x.narrow(0, kBatch, kBatch * steps), y.narrow(0, kBatch, kBatch * steps),
        {.batch_size = kBatch, .epochs = 1, .verbose = 0, .shuffle = false});
  Run r;
  r.step_seconds = std::chrono::duration<double>(Clock::now() - t).count() / steps;
  const int64_t peak_timed = os::Allocator::instance().stats().peak_bytes_in_use;
  r.peak_bytes = std::max(peak_warm, peak_timed) - before;
  r.activation_bytes = peak_timed - resident;
  return r;
}

std::shared_ptr<dist::PipelineParallel> pipeline(dist::PipelineSchedule schedule, int m) {
  return std::make_shared<dist::PipelineParallel>(dist::PipelineOptions{
      .stages = 2, .micro_batches = m, .schedule = schedule, .split_points = {2}});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"model and pipeline parallelism on 2 virtual devices"};
  int steps = 8, repeats = 5;
  app.add_option("--steps", steps, "timed steps per run");
  app.add_option("--repeats", repeats, "runs per figure (the median is reported)");
  CLI11_PARSE(app, argc, argv);

  fmt::print("bubble fraction on 2 stages (median of {} runs of {} steps)\n", repeats, steps);
  // theory: equal stages; uneven: the same fill-drain bound at the stages' measured busy times
  // per micro-batch, a and b: 1 - m (a + b) / (2 (m + 1) max(a, b)).
  fmt::print("{:<6} {:>3} {:>9} {:>9} {:>9} {:>11} {:>13}\n", "sched", "m", "measured", "theory",
             "uneven", "step ms", "stage 1 / 0");
  for (const auto schedule : {dist::PipelineSchedule::gpipe, dist::PipelineSchedule::one_f_one_b}) {
    for (int m : {1, 2, 4, 8}) {
      std::vector<double> bubbles, uneven, times, ratio;
      for (int r = 0; r < repeats; ++r) {
        auto p = pipeline(schedule, m);
        const Run run = train(p, steps, p.get());
        const dist::PipelineStats st = p->stats();
        const double a = st.busy_seconds[0], b = st.busy_seconds[1];
        bubbles.push_back(st.bubble());
        uneven.push_back(1.0 - m * (a + b) / (2.0 * (m + 1) * std::max(a, b)));
        ratio.push_back(b / a);
        times.push_back(run.step_seconds * 1e3);
      }
      fmt::print("{:<6} {:>3} {:>9.3f} {:>9.3f} {:>9.3f} {:>11.2f} {:>13.2f}\n",
                 dist::to_string(schedule), m, median(bubbles), dist::theoretical_bubble(2, m),
                 median(uneven), median(times), median(ratio));
    }
  }

  fmt::print(
      "\npeak activation memory (bytes in use above the weights, gradients and host copy), "
      "2 stages, m = 8 (median of {} runs)\n",
      repeats);
  double gpipe_peak = 0.0;
  for (const auto schedule : {dist::PipelineSchedule::gpipe, dist::PipelineSchedule::one_f_one_b}) {
    std::vector<double> peaks;
    peaks.reserve(static_cast<size_t>(repeats));
    for (int r = 0; r < repeats; ++r)
      peaks.push_back(static_cast<double>(train(pipeline(schedule, 8), steps).activation_bytes));
    const double p = median(peaks);
    if (schedule == dist::PipelineSchedule::gpipe) gpipe_peak = p;
    fmt::print("{:<6} {:>8.2f} MiB  ({:.2f}x GPipe's)\n", dist::to_string(schedule), p / (1 << 20),
               p / gpipe_peak);
  }

  dist::LayoutMap layout(dist::DeviceMesh({2}, {"model"}));
  // Megatron's pairs: dense column, dense_1 row; dense_2 column, dense_3 row; the head whole.
  layout["sequential/dense(_2)?/kernel"] = {std::nullopt, "model"};
  layout["sequential/dense(_2)?/bias"] = {"model"};
  layout["sequential/dense_[13]/kernel"] = {"model", std::nullopt};
  auto mp = std::make_shared<dist::ModelParallel>(layout);
  auto mirrored =
      std::make_shared<dist::MirroredStrategy>(std::vector<std::string>{"cpu:0", "cpu:1"});
  std::vector<double> mp_ms, rep_ms, mp_peak;
  for (int r = 0; r < repeats; ++r) {
    const Run a = train(mp, steps);
    const Run b = train(mirrored, steps);
    mp_ms.push_back(a.step_seconds * 1e3);
    rep_ms.push_back(b.step_seconds * 1e3);
    mp_peak.push_back(static_cast<double>(a.peak_bytes));
  }
  fmt::print("\nstep time, batch {}, 2 devices (median of {} runs)\n", kBatch, repeats);
  fmt::print("model parallel  {:8.2f} ms\nreplicated      {:8.2f} ms\nratio           {:8.2f}x\n",
             median(mp_ms), median(rep_ms), median(mp_ms) / median(rep_ms));

  os::Model probe = make_model();
  const dist::MemoryReport report = mp->memory_report(probe.network(), kBatch, 0);
  int64_t predicted = 0;
  for (const auto& d : report.devices) predicted += d.total();
  // The host copy (the compiled model, whole) comes on top of the devices' shards.
  const int64_t host = probe.count_params() * static_cast<int64_t>(sizeof(float));
  fmt::print("\nmemory report (SGD, no slots)\n{}", report.to_string());
  fmt::print(
      "predicted: devices {:.2f} MiB + host copy {:.2f} MiB = {:.2f} MiB; measured peak "
      "{:.2f} MiB ({:.2f}x the prediction)\n",
      static_cast<double>(predicted) / (1 << 20), static_cast<double>(host) / (1 << 20),
      static_cast<double>(predicted + host) / (1 << 20), median(mp_peak) / (1 << 20),
      median(mp_peak) / static_cast<double>(predicted + host));
  return 0;
}
