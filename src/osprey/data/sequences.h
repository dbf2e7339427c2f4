// Keras's sequence utilities: pad_sequences (lists of token ids of different lengths into one
// [n, maxlen] tensor) and timeseries_dataset_from_array (sliding windows over a series).
//   Tensor x = data::pad_sequences({{1, 2, 3}, {4}}, {.maxlen = 4});   // [[0, 1, 2, 3], [0, 0, 0,
//   4]] auto ds = data::timeseries_dataset_from_array(series, targets,
//                                                 {.sequence_length = 120, .sampling_rate = 6});
//   for (auto& b : ds) ...                        // b[0] [128, 120, features], b[1] [128, ...]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "osprey/data/dataset.h"
#include "osprey/tensor/tensor.h"

namespace osprey::data {

struct PadSequencesOptions {
  int64_t maxlen = 0;              // 0: the longest sequence's length
  std::string padding = "pre";     // "pre" (values before the sequence) or "post"
  std::string truncating = "pre";  // longer sequences lose their start ("pre") or end ("post")
  int64_t value = 0;
};

// int64 [sequences.size(), maxlen]. ValueError naming the option for a bad padding/truncating.
Tensor pad_sequences(const std::vector<std::vector<int64_t>>& sequences,
                     const PadSequencesOptions& options = {});

struct TimeseriesOptions {
  int64_t sequence_length = 0;
  int64_t sequence_stride = 1;  // between the starts of consecutive windows
  int64_t sampling_rate = 1;    // between the steps of one window
  int64_t batch_size = 128;     // 0: unbatched elements
  // A new order of the windows every epoch, from the seed and the epoch (Keras shuffles the
  // window starts once, with NumPy, then locally; the windows are the same, their order is not).
  bool shuffle = false;
  std::optional<uint64_t> seed = std::nullopt;        // unset: osprey::next_seed() at creation
  std::optional<int64_t> start_index = std::nullopt;  // rows of data used: [start, end)
  std::optional<int64_t> end_index = std::nullopt;
};

// Window i (start position p = i * sequence_stride) is data[start + p + k * sampling_rate] for
// k < sequence_length, and its target targets[start + p], as keras.utils.
// timeseries_dataset_from_array. targets may be undefined (elements are then the windows alone).
// ValueError naming the argument, as Keras's checks.
Dataset timeseries_dataset_from_array(const Tensor& data, const Tensor& targets,
                                      const TimeseriesOptions& options);

}  // namespace osprey::data
