// The GPT (applications::gpt, nanoGPT's model) trained on Tiny Shakespeare at the character level
// with nanoGPT's recipe, osprey's side of bench/torch_gpt.py: same model, data split, batch
// sampling and schedule (AdamW, betas 0.9/0.99, eps 1e-8, weight decay 0.1 on all but the
// LayerNormalization scales, global clipnorm 1.0, CosineDecay from 0 warming up to the learning
// rate over --warmup steps, then down to --min-lr), through the user's API (compile,
// train_on_batch, test_on_batch). Prints JSON lines; the last one is the summary.
//   bench_gpt --data data/tinyshakespeare.txt [--model gpt|lstm|gru] [--units 512]
//             [--iters 2000] [--threads 2] [--n-layer 4]
//             [--n-head 4] [--n-embd 128] [--block 64] [--batch 12] [--eval-interval 250]
//             [--eval-iters 20] [--time-iters 0] [--save-init FILE] [--losses N]
//   --time-iters N: time N steps after 5 warm-up steps; print tokens/s only.
//   --model lstm|gru: applications::rnn_language_model instead (--n-embd wide embedding,
//     --n-layer layers of --units), against torch_gpt.py --model lstm|gru.
//   --save-init FILE: write the initial weights (safetensors) for torch_gpt.py --init.
//   --losses N: print the first N training losses on the fixed batches torch_gpt.py --losses
//     uses, at a constant learning rate (the agreement check of the two frameworks).
//   --generate N: after --iters steps, time sampling N tokens after a one-token prompt with the
//     key/value cache and without it (best of --reps each); print both rates.
//   --int8: with --generate, then quantize the GPT to int8 (quant::quantize: every projection
//     and the tied embedding/head table) and time both again; the same line adds the int8 rates
//     and int8 / float32 with the cache (figure 5: float32 against int8 weights).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <random>

#include "osprey/applications/language_models.h"
#include "osprey/core/parallel.h"
#include "osprey/core/rng.h"
#include "osprey/data/text/tokenizer.h"
#include "osprey/io/safetensors.h"
#include "osprey/losses/crossentropy.h"
#include "osprey/optim/adam.h"
#include "osprey/optim/schedules.h"
#include "osprey/quant/quantize.h"
#include "osprey/tensor/allocator.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/logs.h"

namespace {

namespace os = osprey;
using Clock = std::chrono::steady_clock;

// nanoGPT's get_batch: `batch` windows at uniform offsets of the split.
struct Batcher {
  const int64_t* data;
  int64_t n, block, batch;
  std::mt19937_64 rng;
  std::pair<os::Tensor, os::Tensor> operator()() {
    os::Tensor x = os::zeros({batch, block}, {.dtype = os::DType::int64});
    os::Tensor y = os::zeros({batch, block}, {.dtype = os::DType::int64});
    std::uniform_int_distribution<int64_t> pick(0, n - block - 1);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t i = pick(rng);
      std::copy_n(data + i, block, x.data<int64_t>() + b * block);
      std::copy_n(data + i + 1, block, y.data<int64_t>() + b * block);
    }
    return {x, y};
  }
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nanoGPT's Shakespeare character model trained with osprey"};
  std::string data_path = "data/tinyshakespeare.txt", save_init, kind = "gpt";
  int64_t units = 512;
  int64_t iters = 2000, n_layer = 4, n_head = 4, n_embd = 128, block = 64, batch = 12;
  int64_t warmup = 100, eval_interval = 250, eval_iters = 20, time_iters = 0, losses = 0;
  int64_t generate_tokens = 0, reps = 3;
  double lr = 1e-3, min_lr = 1e-4;
  int threads = 2;
  bool int8 = false;
  uint64_t seed = 1337;
  app.add_option("--data", data_path);
  app.add_option("--model", kind)->check(CLI::IsMember({"gpt", "lstm", "gru"}));
  app.add_option("--units", units);
  app.add_option("--iters", iters);
  app.add_option("--threads", threads);
  app.add_option("--n-layer", n_layer);
  app.add_option("--n-head", n_head);
  app.add_option("--n-embd", n_embd);
  app.add_option("--block", block);
  app.add_option("--batch", batch);
  app.add_option("--lr", lr);
  app.add_option("--min-lr", min_lr);
  app.add_option("--warmup", warmup);
  app.add_option("--eval-interval", eval_interval);
  app.add_option("--eval-iters", eval_iters);
  app.add_option("--time-iters", time_iters);
  app.add_option("--save-init", save_init);
  app.add_option("--losses", losses);
  app.add_option("--seed", seed);
  app.add_option("--generate", generate_tokens);
  app.add_option("--reps", reps);
  app.add_flag("--int8", int8);
  CLI11_PARSE(app, argc, argv);
  os::set_num_threads(threads);
  os::set_global_seed(seed);

  const std::string text = os::data::text::read_text_file(data_path);
  const auto tok = os::data::text::CharTokenizer::fit(text);
  const std::vector<int64_t> ids = tok.encode(text);
  const int64_t n = static_cast<int64_t>(ids.size()), n_train = n * 9 / 10;
  Batcher train{ids.data(), n_train, block, batch, std::mt19937_64(seed)};
  Batcher val{ids.data() + n_train, n - n_train, block, batch, std::mt19937_64(seed + 1)};

  os::Model model = kind == "gpt"
                        ? os::applications::gpt({.vocab_size = tok.vocab_size(),
                                                 .block_size = block,
                                                 .n_layer = n_layer,
                                                 .n_head = n_head,
                                                 .n_embd = n_embd})
                        : os::applications::rnn_language_model({.vocab_size = tok.vocab_size(),
                                                                .cell = kind,
                                                                .block_size = block,
                                                                .embedding_dim = n_embd,
                                                                .units = units,
                                                                .layers = n_layer});
  if (!save_init.empty()) {
    os::io::NamedTensors w;
    for (const auto& v : model.variables()) w.emplace_back(v.name(), v.value());
    os::io::save_safetensors(save_init, w);
  }
  const os::optim::LearningRate schedule =
      losses > 0 || iters <= warmup
          ? os::optim::LearningRate(lr)
          : os::optim::LearningRate(os::optim::CosineDecay({.initial_learning_rate = 0.0,
                                                            .decay_steps = iters - warmup,
                                                            .alpha = min_lr / lr,
                                                            .warmup_target = lr,
                                                            .warmup_steps = warmup}));
  auto opt = std::make_shared<os::optim::AdamW>(os::optim::AdamWOptions{.learning_rate = schedule,
                                                                        .weight_decay = 0.1,
                                                                        .beta_1 = 0.9,
                                                                        .beta_2 = 0.99,
                                                                        .epsilon = 1e-8,
                                                                        .global_clipnorm = 1.0});
  opt->exclude_from_weight_decay({"gamma"});
  model.compile(opt, std::make_shared<os::losses::SparseCategoricalCrossentropy>(
                         os::losses::SparseCategoricalCrossentropyOptions{.from_logits = true}));
  const std::string head = fmt::format(
      R"("framework": "osprey", "model": "{}", "threads": {}, "n_layer": {}, "n_head": {}, )"
      R"("n_embd": {}, "units": {}, "block": {}, "batch": {})",
      kind, threads, n_layer, n_head, n_embd, units, block, batch);
  const auto loss_of = [](const os::train::Logs& logs) { return logs.at("loss"); };

  if (losses > 0) {  // torch_gpt.py --losses: batch i row j starts at i * block + j * 7
    std::vector<double> out;
    for (int64_t i = 0; i < losses; ++i) {
      os::Tensor x = os::zeros({batch, block}, {.dtype = os::DType::int64});
      os::Tensor y = os::zeros({batch, block}, {.dtype = os::DType::int64});
      for (int64_t j = 0; j < batch; ++j) {
        std::copy_n(ids.data() + i * block + j * 7, block, x.data<int64_t>() + j * block);
        std::copy_n(ids.data() + i * block + j * 7 + 1, block, y.data<int64_t>() + j * block);
      }
      out.push_back(loss_of(model.train_on_batch(x, y)));
    }
    fmt::print("{{{}, \"losses\": [{}]}}\n", head, fmt::join(out, ", "));
    return 0;
  }
  if (time_iters > 0) {
    for (int i = 0; i < 5; ++i) {
      auto [x, y] = train();
      model.train_on_batch(x, y);
    }
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < time_iters; ++i) {
      auto [x, y] = train();
      model.train_on_batch(x, y);
    }
    const double dt = seconds_since(t0);
    // The tensors' own peak (what a step needs) beside the allocator's cache (what it keeps).
    const osprey::AllocatorStats mem = osprey::Allocator::instance().stats();
    fmt::print(
        "{{{}, \"iters\": {}, \"tokens_per_s\": {:.1f}, \"ms_per_step\": {:.2f}, "
        "\"peak_tensor_mib\": {:.0f}, \"cached_mib\": {:.0f}}}\n",
        head, time_iters, static_cast<double>(time_iters * batch * block) / dt,
        1e3 * dt / static_cast<double>(time_iters),
        static_cast<double>(mem.peak_bytes_in_use) / (1 << 20),
        static_cast<double>(mem.bytes_cached) / (1 << 20));
    return 0;
  }
  const auto estimate = [&](Batcher& b) {
    double sum = 0;
    for (int64_t i = 0; i < eval_iters; ++i) {
      auto [x, y] = b();
      sum += loss_of(model.test_on_batch(x, y));
    }
    return sum / static_cast<double>(eval_iters);
  };
  const auto start = Clock::now();
  double train_time = 0;
  for (int64_t it = 0; it <= iters; ++it) {
    if (it % eval_interval == 0 || it == iters) {
      fmt::print(R"({{"iter": {}, "train_loss": {:.4f}, "val_loss": {:.4f}, "elapsed_s": {:.1f}}})"
                 "\n",
                 it, estimate(train), estimate(val), seconds_since(start));
      std::fflush(stdout);
    }
    if (it == iters) break;
    auto [x, y] = train();
    const auto s0 = Clock::now();
    model.train_on_batch(x, y);
    train_time += seconds_since(s0);
  }
  fmt::print(
      "{{{}, \"iters\": {}, \"val_loss\": {:.4f}, \"tokens_per_s\": {:.1f}, \"train_s\": "
      "{:.1f}}}\n",
      head, iters, estimate(val),
      train_time > 0 ? static_cast<double>(iters * batch * block) / train_time : 0.0, train_time);
  if (generate_tokens > 0) {
    auto& gpt = dynamic_cast<os::models::GPT&>(model.network());
    const os::Tensor prompt = os::from_vector<int64_t>({0}, {1, 1});
    const auto rate = [&](bool cached) {
      double best = 1e30;
      for (int64_t r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        os::models::generate(gpt, prompt,
                             {.max_new_tokens = generate_tokens, .seed = 1, .use_cache = cached});
        best = std::min(best, seconds_since(t0));
      }
      return static_cast<double>(generate_tokens) / best;
    };
    const double with_cache = rate(true), without = rate(false);
    std::string int8_fields;
    if (int8) {
      os::quant::quantize(gpt, "int8");
      const double q_cached = rate(true), q_uncached = rate(false);
      int8_fields = fmt::format(
          R"(, "int8_cached_tokens_per_s": {:.1f}, "int8_uncached_tokens_per_s": {:.1f}, )"
          R"("int8_over_float32_cached": {:.2f})",
          q_cached, q_uncached, q_cached / with_cache);
    }
    fmt::print(R"({{{}, "generate_tokens": {}, "cached_tokens_per_s": {:.1f}, )"
               R"("uncached_tokens_per_s": {:.1f}, "speedup": {:.2f}{}}})"
               "\n",
               head, generate_tokens, with_cache, without, with_cache / without, int8_fields);
  }
  return 0;
}
