// Language-modelling examples from a stream of token ids (Tokenizer::encode_tensor): each
// element is x = tokens[i, i + T) and y = tokens[i + 1, i + T + 1), the next token at every
// position, as nanoGPT's get_batch. Two ways to pick the windows:
//   - samples_per_epoch > 0: that many offsets drawn uniformly from [0, n - T) each epoch, from
//     the seed and the epoch (nanoGPT's random batches, reproducible);
//   - otherwise every window at `stride` (default T: non-overlapping), in order.
//   Tensor ids = tok.encode_tensor(text);                          // int64 [1115394]
//   auto [train, val] = text::split_tokens(ids, 0.9);              // nanoGPT's 90/10 split
//   auto ds = text::language_model_dataset(train, {.block_size = 64, .samples_per_epoch = 12000,
//                                                  .seed = 1337}).batch(12);
//   for (auto& b : ds) model.train_on_batch(b[0], b[1]);             // [12, 64] and [12, 64]
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "osprey/data/dataset.h"
#include "osprey/tensor/tensor.h"

namespace osprey::data::text {

struct LanguageModelOptions {
  int64_t block_size = 0;         // T, the context length
  int64_t samples_per_epoch = 0;  // > 0: random windows; 0: every window at `stride`
  int64_t stride = 0;             // 0: block_size
  // The random windows' seed; unset: drawn from osprey::next_seed() when the dataset is made.
  std::optional<uint64_t> seed = std::nullopt;
};

// tokens: int64 [n] with n > block_size. ValueError naming the argument otherwise.
Dataset language_model_dataset(const Tensor& tokens, const LanguageModelOptions& options);

// The first `fraction` of the stream and the rest, as views ([0, m) and [m, n), m = n * fraction
// rounded down).
std::pair<Tensor, Tensor> split_tokens(const Tensor& tokens, double fraction);

}  // namespace osprey::data::text
