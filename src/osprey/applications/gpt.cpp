#include "osprey/applications/gpt.h"

namespace osprey::applications {

Model gpt(const models::GPTConfig& config, const std::string& name) {
  return Model(std::make_shared<models::GPT>(config, name));
}

models::GPTConfig gpt_nano_config(int64_t vocab_size) {
  return {.vocab_size = vocab_size, .block_size = 64, .n_layer = 4, .n_head = 4, .n_embd = 128};
}

}  // namespace osprey::applications
