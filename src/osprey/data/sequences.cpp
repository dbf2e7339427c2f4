#include "osprey/data/sequences.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"
#include "osprey/tensor/factory.h"

namespace osprey::data {

Tensor pad_sequences(const std::vector<std::vector<int64_t>>& sequences,
                     const PadSequencesOptions& o) {
  OSPREY_CHECK(o.padding == "pre" || o.padding == "post",
               "pad_sequences: padding must be 'pre' or 'post'. Received: padding='{}'", o.padding);
  OSPREY_CHECK(o.truncating == "pre" || o.truncating == "post",
               "pad_sequences: truncating must be 'pre' or 'post'. Received: truncating='{}'",
               o.truncating);
  OSPREY_CHECK(o.maxlen >= 0, "pad_sequences: maxlen must not be negative. Received: maxlen={}",
               o.maxlen);
  int64_t len = o.maxlen;
  if (len == 0) {
    for (const auto& s : sequences) len = std::max(len, static_cast<int64_t>(s.size()));
  }
  const auto n = static_cast<int64_t>(sequences.size());
  std::vector<int64_t> out(static_cast<size_t>(n * len), o.value);
  for (int64_t i = 0; i < n; ++i) {
    const auto& s = sequences[static_cast<size_t>(i)];
    const int64_t keep = std::min(len, static_cast<int64_t>(s.size()));
    const auto from =
        s.begin() + (o.truncating == "pre" ? static_cast<int64_t>(s.size()) - keep : 0);
    const int64_t at = i * len + (o.padding == "pre" ? len - keep : 0);
    std::copy(from, from + keep, out.begin() + at);
  }
  return from_vector<int64_t>(out, {n, len});
}

Dataset timeseries_dataset_from_array(const Tensor& data, const Tensor& targets,
                                      const TimeseriesOptions& o) {
  OSPREY_CHECK(data.defined() && data.ndim() >= 1,
               "timeseries_dataset_from_array: data needs a time axis (axis 0). Received: {}",
               data.defined() ? data.shape().to_string() : std::string("undefined"));
  const int64_t n = data.size(0);
  const int64_t start = o.start_index.value_or(0), end = o.end_index.value_or(n);
  OSPREY_CHECK(o.sequence_length > 0,
               "timeseries_dataset_from_array: sequence_length must be positive. Received: {}",
               o.sequence_length);
  OSPREY_CHECK(o.sampling_rate > 0 && o.sequence_stride > 0,
               "timeseries_dataset_from_array: sampling_rate and sequence_stride must be "
               "positive. Received: sampling_rate={}, sequence_stride={}",
               o.sampling_rate, o.sequence_stride);
  OSPREY_CHECK(start >= 0 && start < end && end <= n,
               "timeseries_dataset_from_array: expected 0 <= start_index < end_index <= {} (the "
               "length of data). Received: start_index={}, end_index={}",
               n, start, end);
  OSPREY_CHECK(o.batch_size >= 0,
               "timeseries_dataset_from_array: batch_size must not be negative. Received: {}",
               o.batch_size);
  int64_t windows = end - start - (o.sequence_length - 1) * o.sampling_rate;
  if (targets.defined()) {
    OSPREY_CHECK(targets.ndim() >= 1 && targets.size(0) == n,
                 "timeseries_dataset_from_array: targets must have one row per step of data "
                 "({}). Received: {}",
                 n, targets.shape().to_string());
    windows = std::min(windows, targets.size(0) - start);
  }
  OSPREY_CHECK(windows > 0,
               "timeseries_dataset_from_array: no window of {} steps (sampling_rate {}) fits in "
               "the {} steps from start_index {} to end_index {}",
               o.sequence_length, o.sampling_rate, end - start, start, end);
  const int64_t count = (windows - 1) / o.sequence_stride + 1;
  const Tensor series = data.contiguous();
  const Tensor labels = targets.defined() ? targets.contiguous() : Tensor();
  const uint64_t seed = o.shuffle ? o.seed.value_or(next_seed()) : 0;
  const int64_t length = o.sequence_length, rate = o.sampling_rate, stride = o.sequence_stride;
  const bool shuffle = o.shuffle;
  Dataset ds = Dataset::from_generator(
      [=](uint64_t epoch) -> Generator {
        auto order = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(count));
        std::iota(order->begin(), order->end(), int64_t{0});
        if (shuffle) {  // Fisher-Yates from (seed, epoch): the same order on any machine
          const Philox rng(seed);
          for (int64_t i = count - 1; i > 0; --i) {
            const auto w = rng(static_cast<uint64_t>(i), epoch);
            const auto j = std::min(static_cast<int64_t>(Philox::to_unit_double(w[0], w[1]) *
                                                         static_cast<double>(i + 1)),
                                    i);
            std::swap((*order)[static_cast<size_t>(i)], (*order)[static_cast<size_t>(j)]);
          }
        }
        auto k = std::make_shared<int64_t>(0);
        return [=]() -> std::optional<Element> {
          if (*k == count) return std::nullopt;
          const int64_t p = start + (*order)[static_cast<size_t>((*k)++)] * stride;
          Element e{series.slice(0, p, p + (length - 1) * rate + 1, rate)};
          if (labels.defined()) e.push_back(labels.slice(0, p, p + 1).squeeze(0));
          return e;
        };
      },
      count);
  return o.batch_size > 0 ? ds.batch(o.batch_size) : ds;
}

}  // namespace osprey::data
