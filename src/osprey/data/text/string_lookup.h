// StringLookup: strings to vocabulary indices, as keras.layers.StringLookup: OOV values go to the
// OOV indices (one, or several by FarmHash Fingerprint64; SipHash with a salt), an optional mask
// token to 0 (in "int" mode), and invert=true maps indices back to strings.
//   text::StringLookup lookup({.vocabulary = {"a", "b", "c"}});
//   lookup({"a", "q", "c"});                    // int64 [3]: {1, 0, 3} (0 = "[UNK]")
//   lookup({{"a", "c"}, {"b", "b"}});           // int64 [2, 2]
//   text::StringLookup multi({.vocabulary = {"a", "b", "c"}, .output_mode = "multi_hot"});
//   multi({{"a", "c", "c", "q"}, {"b"}});       // float32 [2, 4]: {1, 1, 0, 1}, {0, 0, 1, 0}
// One value per example (a flat list) is Keras's rank-1 input: "int" gives [N], "one_hot"
// [N, depth], and "multi_hot", "count", "tf_idf" encode the whole list as one example [depth].
// A braced list of exactly two strings is ambiguous between the overloads (a std::string can be
// built from two pointers): write std::vector<std::string>{"a", "b"}.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "osprey/data/text/index_lookup.h"
#include "osprey/tensor/tensor.h"

namespace osprey::data::text {

struct StringLookupOptions {
  std::optional<int64_t> max_tokens = std::nullopt;  // with the mask and OOV indices
  int64_t num_oov_indices = 1;
  std::optional<std::string> mask_token = std::nullopt;
  std::string oov_token = "[UNK]";
  std::vector<std::string> vocabulary = {};  // empty: adapt() learns it
  std::vector<float> idf_weights = {};       // tf_idf with a given vocabulary
  bool invert = false;                       // indices -> strings (call with a Tensor)
  std::string output_mode = "int";           // int, one_hot, multi_hot, count, tf_idf
  bool pad_to_max_tokens = false;
  // OOV buckets by SipHash-2-4 keyed with these (Keras's salt; one int s means {s, s}).
  std::optional<std::array<uint64_t, 2>> salt = std::nullopt;
};

class StringLookup {
 public:
  explicit StringLookup(StringLookupOptions options = {});

  // Each value one document (Keras's rank-1 adapt), or each row one.
  void adapt(const std::vector<std::string>& values);
  void adapt(const std::vector<std::vector<std::string>>& rows);
  void set_vocabulary(std::vector<std::string> vocabulary, std::vector<float> idf_weights = {});
  std::vector<std::string> get_vocabulary(bool include_special_tokens = true) const;
  int64_t vocabulary_size() const { return lookup_.vocabulary_size(); }

  Tensor operator()(const std::vector<std::string>& values) const;
  Tensor operator()(const std::vector<std::vector<std::string>>& rows) const;
  // invert=true: an integer tensor of indices -> their strings, row-major (the mask token at 0
  // when there is one, the OOV token for OOV and unknown indices).
  std::vector<std::string> operator()(const Tensor& indices) const;

  nlohmann::json to_json() const { return lookup_.to_json(); }
  static StringLookup from_json(const nlohmann::json& j);

 private:
  explicit StringLookup(detail::IndexLookup<std::string> lookup) : lookup_(std::move(lookup)) {}
  detail::IndexLookup<std::string> lookup_;
};

}  // namespace osprey::data::text
