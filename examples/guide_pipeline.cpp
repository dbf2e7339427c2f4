// The pipeline guide's listing (docs/guide/model_parallel.md): an MLP cut into 2 stages on 2
// virtual devices, each global batch cut into 4 micro-batches, under the 1F1B schedule; then the
// same with PipeDream's asynchronous schedule. 1F1B updates once per step, so it must end where
// one device ends.
#include <osprey/osprey.h>

#include <cmath>
#include <cstdio>

namespace os = osprey;
namespace dist = osprey::distribute;

os::Model build_model() {
  os::nn::clear_session();
  return os::Sequential(
      {os::layers::Dense(64, "relu"), os::layers::Dense(64, "relu"), os::layers::Dense(8)},
      {.input_shape = {16}});
}

int main() {
  const os::Tensor x = os::random_normal({256, 16}, {.seed = 1});
  const os::Tensor y = os::random_normal({256, 8}, {.seed = 2});
  const std::vector<os::Tensor> initial = build_model().get_weights();
  const os::train::FitOptions fit{.batch_size = 32, .epochs = 2, .verbose = 0, .shuffle = false};

  // Stage 0 holds dense; stage 1 dense_1 and dense_2 (split_points: each later stage's first
  // layer; leave it empty to balance the stages by measured layer times).
  auto pipeline = std::make_shared<dist::PipelineParallel>(
      dist::PipelineOptions{.stages = 2,
                            .micro_batches = 4,
                            .schedule = dist::PipelineSchedule::one_f_one_b,
                            .split_points = {1}});
  os::Model model = build_model();
  model.set_weights(initial);
  model.compile("adam", "mse", {}, {.strategy = pipeline});
  model.fit(x, y, fit);
  const dist::PipelineStats st = pipeline->stats();
  std::printf("1f1b: %lld steps, bubble %.2f (theory %.2f), activations held: %d and %d\n",
              static_cast<long long>(st.steps), st.bubble(), dist::theoretical_bubble(2, 4),
              st.max_live_activations[0], st.max_live_activations[1]);

  os::Model single = build_model();
  single.set_weights(initial);
  single.compile("adam", "mse");
  single.fit(x, y, fit);
  double worst = 0.0;
  const auto a = model.get_weights(), b = single.get_weights();
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::fmax(worst, os::max(os::abs(os::sub(a[i], b[i]))).item());
  std::printf("largest difference from one device: %.2g\n", worst);

  // PipeDream: every stage updates after each micro-batch; a micro-batch's backward uses the
  // weight version its forward used (weight stashing), at most stages - 1 versions behind.
  auto pipedream = std::make_shared<dist::PipelineParallel>(
      dist::PipelineOptions{.stages = 2,
                            .micro_batches = 4,
                            .schedule = dist::PipelineSchedule::pipedream,
                            .split_points = {1}});
  os::Model async = build_model();
  async.set_weights(initial);
  async.compile("sgd", "mse", {}, {.strategy = pipedream});
  const auto history = async.fit(x, y, fit);
  std::printf("pipedream: loss %.4f -> %.4f, largest version gap %lld\n",
              history.history.at("loss").front(), history.history.at("loss").back(),
              static_cast<long long>(pipedream->stats().max_version_gap));
  return worst < 1e-5 && pipedream->stats().max_version_gap == 1 ? 0 : 1;
}
