// The vocabulary behind TextVectorization, StringLookup and IntegerLookup (Keras's IndexLookup):
// a list of tokens mapped to indices after the reserved ones (a mask index 0 in "int" mode,
// then the OOV indices), learned by adapt() or given, with Keras's encodings of a batch. Not a
// public layer: the three classes wrap it and name themselves in its messages.
//   Index layout ("int", mask ""):   0 = mask, 1 = OOV "[UNK]", 2... = tokens by frequency
//   Index layout (other modes):      0 = OOV, 1... = tokens (the mask has no index: dropped)
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "osprey/tensor/tensor.h"

namespace osprey::data::text::detail {

template <class Key>
struct LookupConfig {
  std::string layer;                  // "StringLookup", ...: the name errors start with
  std::optional<int64_t> max_tokens;  // including the mask and OOV indices
  int64_t num_oov_indices = 1;
  std::optional<Key> mask_token;
  Key oov_token{};
  std::string output_mode = "int";  // int, one_hot, multi_hot, count, tf_idf
  bool pad_to_max_tokens = false;
  bool invert = false;
  std::optional<std::array<uint64_t, 2>> salt;  // strings: SipHash for OOV buckets
};

// The config of a StringLookupOptions or IntegerLookupOptions: their fields share Keras's names.
template <class Key, class Options>
LookupConfig<Key> lookup_config(std::string layer, const Options& o,
                                std::optional<std::array<uint64_t, 2>> salt) {
  return {.layer = std::move(layer),
          .max_tokens = o.max_tokens,
          .num_oov_indices = o.num_oov_indices,
          .mask_token = o.mask_token,
          .oov_token = o.oov_token,
          .output_mode = o.output_mode,
          .pad_to_max_tokens = o.pad_to_max_tokens,
          .invert = o.invert,
          .salt = salt};
}

template <class Key>
class IndexLookup {
 public:
  // Validates the config as Keras's IndexLookup.__init__ (ValueError naming the field), then
  // sets `vocabulary` (and `idf_weights`) when it is not empty.
  IndexLookup(LookupConfig<Key> config, std::vector<Key> vocabulary,
              std::vector<float> idf_weights);

  const LookupConfig<Key>& config() const { return config_; }
  // Learns the vocabulary from documents (each a list of tokens): the tokens by count,
  // descending, ties by the token, descending (Keras's np.lexsort order), cut to max_tokens;
  // "tf_idf" also learns idf = log(1 + documents / (1 + documents holding the token)).
  void adapt(const std::vector<std::vector<Key>>& documents);
  void set_vocabulary(std::vector<Key> vocabulary, std::vector<float> idf_weights);
  std::vector<Key> get_vocabulary(bool include_special_tokens = true) const;
  int64_t vocabulary_size() const;
  // The idf of every output index (tf_idf only; the OOV indices hold the mean).
  const std::vector<float>& idf_weights() const { return idf_; }

  // The index of one value; -1 for the mask outside "int" mode (dropped from encodings).
  // ValueError for an OOV value when num_oov_indices is 0.
  int64_t index_of(const Key& value) const;
  // The value at an index (invert): the mask token at 0 (when there is one), the OOV token for
  // OOV and unknown indices.
  Key token_at(int64_t index) const;
  // The width of the non-int encodings: max_tokens when padded to it, else vocabulary_size().
  int64_t depth() const;
  // Each row's indices (mask: 0 in "int" mode, -1 otherwise).
  std::vector<std::vector<int64_t>> indices(const std::vector<std::vector<Key>>& rows) const;
  // rows of values in this lookup's output_mode (encode_categorical's shapes).
  Tensor encode(const std::vector<std::vector<Key>>& rows, bool flat,
                std::optional<int64_t> length = std::nullopt) const;

  // Config, learned vocabulary and idf weights; from_json rebuilds exactly this state.
  nlohmann::json to_json() const;
  static IndexLookup from_json(const nlohmann::json& j, const std::string& layer);

 private:
  IndexLookup() = default;
  int64_t oov_start() const;
  int64_t token_start() const;
  void index_tokens();

  LookupConfig<Key> config_;
  bool has_input_vocabulary_ = false;  // given, not learned: adapt() is refused
  std::vector<Key> tokens_;            // the learned or given tokens, without reserved ones
  std::unordered_map<Key, int64_t> index_;
  std::vector<float> idf_;  // tf_idf: one weight per output index
};

extern template class IndexLookup<std::string>;
extern template class IndexLookup<int64_t>;

// Integer ids (from a lookup or a hash) in Keras's encodings. `flat`: the input was one value
// per example (rank 1) and each row holds one id. Shapes, for n rows of length L:
//   int        flat: int64 [n]; else int64 [n, length or the longest row], 0 after short rows
//              (ragged rows need `pad_ragged`, else ValueError)
//   one_hot    float32 [n, depth] (flat, or L == 1); else [n, L, depth]
//   multi_hot, count, tf_idf   float32 [n, depth], a row per example; flat: [depth], the whole
//              input as one example, as Keras treats a rank-1 input
// Ids < 0 (a dropped mask) and >= depth are left out of the non-int encodings.
struct EncodeSpec {
  const char* layer;
  std::string output_mode;
  int64_t depth = 0;
  bool flat = false;
  std::optional<int64_t> length = std::nullopt;
  bool pad_ragged = false;
  const std::vector<float>* idf = nullptr;  // tf_idf: one weight per id
};
Tensor encode_categorical(const std::vector<std::vector<int64_t>>& ids, const EncodeSpec& spec);

// An integer tensor (int32 or int64, rank 1 or 2) as rows of values: rank 1 gives one row per
// value (flat = true). ValueError naming the layer for another dtype or rank.
std::vector<std::vector<int64_t>> integer_rows(const Tensor& values, const char* layer, bool& flat);

// The output modes lookups take, and the check that names the field and the choices.
void check_output_mode(const std::string& layer, const std::string& mode,
                       const std::vector<std::string>& choices);

}  // namespace osprey::data::text::detail
