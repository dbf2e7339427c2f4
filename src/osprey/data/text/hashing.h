// Hashing: values to one of num_bins bins with no vocabulary, as keras.layers.Hashing: FarmHash
// Fingerprint64 of the value's string form (an integer hashes as its decimal digits), modulo
// num_bins; with a salt, SipHash-2-4 keyed by it (string_hash.h). With a mask value, the mask
// goes to bin 0 and the rest to 1 + hash % (num_bins - 1). The bins equal Keras's, so a model
// trained on Keras's hashed features takes osprey's.
//   text::Hashing hash({.num_bins = 3});
//   hash({"A", "B", "C", "D", "E"});             // int64 [5]: {1, 0, 1, 1, 2}
//   text::Hashing counts({.num_bins = 4, .output_mode = "count"});
//   counts({{"A", "B", "C", "A"}});              // float32 [1, 4]: {3, 0, 0, 1}
// Shapes as StringLookup's (index_lookup.h's encode_categorical): a flat list is Keras's rank-1
// input.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "osprey/tensor/tensor.h"

namespace osprey::data::text {

struct HashingOptions {
  int64_t num_bins = 0;
  std::optional<std::string> mask_value = std::nullopt;        // an integer mask as its digits: "0"
  std::optional<std::array<uint64_t, 2>> salt = std::nullopt;  // Keras's salt=s is {s, s}
  std::string output_mode = "int";                             // int, one_hot, multi_hot, count
};

class Hashing {
 public:
  explicit Hashing(HashingOptions options);

  // The bin of one value.
  int64_t bin(const std::string& value) const;
  Tensor operator()(const std::vector<std::string>& values) const;
  Tensor operator()(const std::vector<std::vector<std::string>>& rows) const;
  // Integer tensors (rank 1 or 2), hashed as their decimal strings.
  Tensor operator()(const Tensor& values) const;

  const HashingOptions& options() const { return options_; }

 private:
  Tensor encode(const std::vector<std::vector<std::string>>& rows, bool flat) const;
  HashingOptions options_;
};

}  // namespace osprey::data::text
