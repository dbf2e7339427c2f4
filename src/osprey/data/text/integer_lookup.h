// IntegerLookup: integer values (ids, codes) to vocabulary indices, as keras.layers.IntegerLookup:
// OOV values go to the OOV indices (one, or several by floormod, Keras's default oov_method), an
// optional mask value to 0, and invert=true maps indices back to values.
//   text::IntegerLookup lookup({.vocabulary = {12, 36, 42}});
//   lookup(ids);              // ids int64 [2, 3] -> int64 [2, 3] indices, 0 for OOV (-1's slot)
//   text::IntegerLookup back({.vocabulary = {12, 36, 42}, .invert = true});
//   back(indices);            // int64 indices -> the values, -1 for OOV
// Inputs are integer tensors of rank 1 or 2 (int32 or int64). As Keras: rank 1 gives [N] ("int"),
// [N, depth] ("one_hot") or one [depth] example ("multi_hot", "count", "tf_idf"); rank 2
// [N, L], [N, L, depth] and [N, depth].
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "osprey/data/text/index_lookup.h"
#include "osprey/tensor/tensor.h"

namespace osprey::data::text {

struct IntegerLookupOptions {
  std::optional<int64_t> max_tokens = std::nullopt;  // with the mask and OOV indices
  int64_t num_oov_indices = 1;
  std::optional<int64_t> mask_token = std::nullopt;
  int64_t oov_token = -1;
  std::vector<int64_t> vocabulary = {};  // empty: adapt() learns it
  std::vector<float> idf_weights = {};   // tf_idf with a given vocabulary
  bool invert = false;                   // indices -> values
  std::string output_mode = "int";       // int, one_hot, multi_hot, count, tf_idf
  bool pad_to_max_tokens = false;
};

class IntegerLookup {
 public:
  explicit IntegerLookup(IntegerLookupOptions options = {});

  // Rank 1: each value one document; rank 2: each row one.
  void adapt(const Tensor& values);
  void set_vocabulary(std::vector<int64_t> vocabulary, std::vector<float> idf_weights = {});
  std::vector<int64_t> get_vocabulary(bool include_special_tokens = true) const;
  int64_t vocabulary_size() const { return lookup_.vocabulary_size(); }

  Tensor operator()(const Tensor& values) const;

  nlohmann::json to_json() const { return lookup_.to_json(); }
  static IntegerLookup from_json(const nlohmann::json& j);

 private:
  explicit IntegerLookup(detail::IndexLookup<int64_t> lookup) : lookup_(std::move(lookup)) {}
  detail::IndexLookup<int64_t> lookup_;
};

}  // namespace osprey::data::text
