#include "osprey/data/text/language_model_dataset.h"

#include <memory>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"

namespace osprey::data::text {

namespace {

void check_tokens(const Tensor& tokens, const char* who) {
  OSPREY_CHECK(
      tokens.defined() && tokens.ndim() == 1 && tokens.dtype() == DType::int64,
      "{}: tokens must be an int64 stream [n]. Received: {} {}", who,
      tokens.defined() ? std::string(dtype_name(tokens.dtype())) : std::string("undefined"),
      tokens.defined() ? tokens.shape().to_string() : std::string());
}

}  // namespace

Dataset language_model_dataset(const Tensor& tokens, const LanguageModelOptions& o) {
  check_tokens(tokens, "language_model_dataset");
  const int64_t n = tokens.size(0), t = o.block_size;
  OSPREY_CHECK(t > 0, "language_model_dataset: block_size must be positive. Received: {}", t);
  OSPREY_CHECK(n > t,
               "language_model_dataset: the stream of {} tokens is too short for block_size {} "
               "(a window needs block_size + 1 tokens)",
               n, t);
  OSPREY_CHECK(o.samples_per_epoch >= 0 && o.stride >= 0,
               "language_model_dataset: samples_per_epoch and stride must not be negative. "
               "Received: {} and {}",
               o.samples_per_epoch, o.stride);
  const Tensor stream = tokens.contiguous();
  const auto window = [stream, t](int64_t i) {
    return Element{stream.slice(0, i, i + t), stream.slice(0, i + 1, i + t + 1)};
  };
  if (o.samples_per_epoch > 0) {
    const uint64_t seed = o.seed ? *o.seed : next_seed();
    const int64_t count = o.samples_per_epoch, choices = n - t;
    return Dataset::from_generator(
        [=](uint64_t epoch) -> Generator {
          auto k = std::make_shared<int64_t>(0);
          const Philox rng(seed);
          return [=]() -> std::optional<Element> {
            if (*k == count) return std::nullopt;
            const auto w = rng(static_cast<uint64_t>((*k)++), epoch);
            const double u = Philox::to_unit_double(w[0], w[1]);
            const auto i =
                std::min(static_cast<int64_t>(u * static_cast<double>(choices)), choices - 1);
            return window(i);
          };
        },
        count);
  }
  const int64_t stride = o.stride > 0 ? o.stride : t;
  const int64_t count = (n - t - 1) / stride + 1;
  return Dataset::from_generator(
      [=](uint64_t) -> Generator {
        auto k = std::make_shared<int64_t>(0);
        return [=]() -> std::optional<Element> {
          if (*k == count) return std::nullopt;
          return window((*k)++ * stride);
        };
      },
      count);
}

std::pair<Tensor, Tensor> split_tokens(const Tensor& tokens, double fraction) {
  check_tokens(tokens, "split_tokens");
  OSPREY_CHECK(fraction > 0 && fraction < 1,
               "split_tokens: fraction must be between 0 and 1. Received: {}", fraction);
  const int64_t n = tokens.size(0);
  const auto m = static_cast<int64_t>(static_cast<double>(n) * fraction);
  return {tokens.slice(0, 0, m), tokens.slice(0, m, n)};
}

}  // namespace osprey::data::text
