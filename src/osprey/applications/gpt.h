// The GPT language model (models/gpt.h) as a Model ready to compile, as keras_hub's presets hand
// over a model: `osprey train --model gpt`, bench_gpt and the guide's example build it here, so
// "the GPT" means one network everywhere. Weights are drawn from the global seed.
//   os::Model model = os::applications::gpt({.vocab_size = 65, .block_size = 64});
//   model.compile(os::optim::AdamW({.learning_rate = 1e-3}),
//                 os::losses::SparseCategoricalCrossentropy({.from_logits = true}));
#pragma once

#include "osprey/models/gpt.h"
#include "osprey/train/model.h"

namespace osprey::applications {

Model gpt(const models::GPTConfig& config, const std::string& name = "");

// nanoGPT's shakespeare_char CPU configuration (4 layers, 4 heads, n_embd 128, block 64,
// dropout 0, no biases) over a vocabulary of vocab_size.
models::GPTConfig gpt_nano_config(int64_t vocab_size);

}  // namespace osprey::applications
