// Text classifiers on synthetic token ids (length --length, vocabulary --vocab, batch --batch),
// ms per training step, osprey's side of torch_text_classifier.py (issue 43, figure 6):
//   bilstm:      Embedding(vocab, 128) -> Bidirectional(LSTM(64)) -> Dense(1, sigmoid)
//   transformer: Embedding(vocab, 128) + PositionEmbedding -> TransformerEncoder(256, 4)
//                -> GlobalAveragePooling1D -> Dense(1, sigmoid)
// Adam, binary cross-entropy; best of --reps timings of --steps steps after 3 warm-up steps.
//   bench_text_classifier --model bilstm|transformer [--vocab 20000] [--length 200]
//                         [--batch 32] [--steps 10] [--reps 3] [--threads 2]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>

#include "osprey/core/parallel.h"
#include "osprey/core/rng.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace {

namespace os = osprey;
using Clock = std::chrono::steady_clock;

// Adds the learned position vectors to the token embeddings (the functional API's residual).
os::Model transformer(int64_t vocab, int64_t length) {
  auto tokens = os::nn::Input({length}, "tokens", os::DType::int64);
  auto x = os::layers::Embedding(vocab, 128)(tokens);
  auto h = os::layers::Add()(std::vector{x, os::layers::PositionEmbedding(length)(x)});
  h = os::layers::TransformerEncoder(256, 4)(h);
  h = os::layers::GlobalAveragePooling1D()(h);
  return os::Model(std::make_shared<os::models::Functional>(
      std::vector{tokens}, std::vector{os::layers::Dense(1, "sigmoid")(h)}));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"text classifiers: ms per training step"};
  std::string kind = "bilstm";
  int64_t vocab = 20000, length = 200, batch = 32, steps = 10;
  int reps = 3, threads = 2;
  app.add_option("--model", kind)->check(CLI::IsMember({"bilstm", "transformer"}));
  app.add_option("--vocab", vocab);
  app.add_option("--length", length);
  app.add_option("--batch", batch);
  app.add_option("--steps", steps);
  app.add_option("--reps", reps);
  app.add_option("--threads", threads);
  CLI11_PARSE(app, argc, argv);
  os::set_num_threads(threads);
  os::set_global_seed(1);
  os::Model model = kind == "bilstm"
                        ? os::Sequential({os::layers::Embedding(vocab, 128),
                                          os::layers::Bidirectional(os::layers::LSTM(64)),
                                          os::layers::Dense(1, "sigmoid")})
                        : transformer(vocab, length);
  model.compile("adam", "binary_crossentropy");
  const os::Philox rng(7);
  std::vector<int64_t> ids(static_cast<size_t>(batch * length));
  std::vector<float> labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(rng(i)[0] % vocab);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<float>(rng(i, 1)[0] % 2);
  const os::Tensor x = os::from_vector<int64_t>(ids, {batch, length});
  const os::Tensor y = os::from_vector<float>(labels, {batch, 1});
  for (int i = 0; i < 3; ++i) model.train_on_batch(x, y);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < steps; ++i) model.train_on_batch(x, y);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  fmt::print(R"({{"framework": "osprey", "model": "{}", "vocab": {}, "length": {}, "batch": {}, )"
             R"("threads": {}, "ms_per_step": {:.2f}}})"
             "\n",
             kind, vocab, length, batch, threads, 1e3 * best / static_cast<double>(steps));
}
