#include "osprey/data/text/index_lookup.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "osprey/core/error.h"
#include "osprey/data/text/string_hash.h"

namespace osprey::data::text::detail {
namespace {

std::string show(const std::string& s) { return fmt::format("\"{}\"", s); }
std::string show(int64_t v) { return std::to_string(v); }

template <class Key>
std::string show_all(const std::vector<Key>& keys) {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const Key& k : keys) out.push_back(show(k));
  return fmt::format("[{}]", fmt::join(out, ", "));
}

// Which OOV index (of n) a value falls in: strings by FarmHash Fingerprint64 (SipHash with a
// salt), as tf.strings.to_hash_bucket_fast/strong; integers by floormod, Keras's default
// oov_method.
int64_t oov_bucket(const std::string& value, int64_t n,
                   const std::optional<std::array<uint64_t, 2>>& salt) {
  const uint64_t h = salt ? siphash64(value, *salt) : fingerprint64(value);
  return static_cast<int64_t>(h % static_cast<uint64_t>(n));
}
int64_t oov_bucket(int64_t value, int64_t n, const std::optional<std::array<uint64_t, 2>>&) {
  return ((value % n) + n) % n;
}

const nlohmann::json& saved_field(const nlohmann::json& j, const std::string& layer,
                                  const char* name) {
  OSPREY_CHECK(j.is_object() && j.contains(name), "{}: the saved state has no \"{}\" field", layer,
               name);
  return j.at(name);
}

}  // namespace

void check_output_mode(const std::string& layer, const std::string& mode,
                       const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), mode) != choices.end()) return;
  std::vector<std::string> quoted;
  quoted.reserve(choices.size());
  for (const auto& c : choices) quoted.push_back(show(c));
  OSPREY_THROW(ValueError, "{}: output_mode must be one of {}. Received: output_mode=\"{}\"", layer,
               fmt::join(quoted, ", "), mode);
}

Tensor encode_categorical(const std::vector<std::vector<int64_t>>& ids, const EncodeSpec& spec) {
  const auto n = static_cast<int64_t>(ids.size());
  int64_t longest = 0;
  for (const auto& r : ids) longest = std::max(longest, static_cast<int64_t>(r.size()));
  if (spec.output_mode == "int") {
    const int64_t len = spec.flat ? 1 : spec.length.value_or(longest);
    for (size_t i = 0; i < ids.size() && !spec.pad_ragged; ++i)
      OSPREY_CHECK(static_cast<int64_t>(ids[i].size()) == longest,
                   "{}: every example must have as many values in output_mode \"int\"; "
                   "example {} has {}, example 0 has {}",
                   spec.layer, i, ids[i].size(), ids[0].size());
    Tensor out = Tensor::empty(spec.flat ? Shape{n} : Shape{n, len}, {DType::int64});
    int64_t* p = out.data<int64_t>();
    std::fill(p, p + out.numel(), int64_t{0});
    for (int64_t i = 0; i < n; ++i) {
      const auto& r = ids[static_cast<size_t>(i)];
      std::copy_n(r.begin(), std::min<int64_t>(len, static_cast<int64_t>(r.size())), p + i * len);
    }
    return out;
  }
  const int64_t d = spec.depth;
  if (spec.output_mode == "one_hot") {
    const int64_t len = spec.flat ? 1 : longest;
    for (const auto& r : ids)
      OSPREY_CHECK(static_cast<int64_t>(r.size()) == len,
                   "{}: every example must have as many values in output_mode \"one_hot\"",
                   spec.layer);
    Tensor out = Tensor::empty(len == 1 ? Shape{n, d} : Shape{n, len, d}, {DType::float32});
    float* p = out.data<float>();
    std::fill(p, p + out.numel(), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < len; ++j) {
        const int64_t k = ids[static_cast<size_t>(i)][static_cast<size_t>(j)];
        if (k >= 0 && k < d) p[(i * len + j) * d + k] = 1.0f;
      }
    return out;
  }
  OSPREY_ASSERT(spec.output_mode == "multi_hot" || spec.output_mode == "count" ||
                    spec.output_mode == "tf_idf",
                "mode {}", spec.output_mode);
  const int64_t rows = spec.flat ? 1 : n;
  Tensor out = Tensor::empty(spec.flat ? Shape{d} : Shape{n, d}, {DType::float32});
  float* p = out.data<float>();
  std::fill(p, p + out.numel(), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float* row = p + (spec.flat ? 0 : i) * d;
    for (int64_t k : ids[static_cast<size_t>(i)]) {
      if (k < 0 || k >= d) continue;
      row[k] = spec.output_mode == "multi_hot" ? 1.0f : row[k] + 1.0f;
    }
  }
  if (spec.output_mode == "tf_idf") {
    OSPREY_ASSERT(spec.idf && static_cast<int64_t>(spec.idf->size()) >= d, "idf for {}", d);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < d; ++k) p[i * d + k] *= (*spec.idf)[static_cast<size_t>(k)];
  }
  return out;
}

std::vector<std::vector<int64_t>> integer_rows(const Tensor& values, const char* layer,
                                               bool& flat) {
  OSPREY_CHECK(
      values.defined() && (values.dtype() == DType::int64 || values.dtype() == DType::int32),
      "{}: inputs must be an int32 or int64 tensor. Received: {}", layer,
      values.defined() ? values.describe() : "an undefined tensor");
  OSPREY_CHECK(values.ndim() == 1 || values.ndim() == 2,
               "{}: inputs must have rank 1 or 2. Received: {}", layer, values.describe());
  const std::vector<int64_t> v = values.to(DType::int64).contiguous().to_vector<int64_t>();
  flat = values.ndim() == 1;
  const int64_t cols = flat ? 1 : values.size(1);
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(values.size(0)));
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i].assign(v.begin() + static_cast<int64_t>(i) * cols,
                   v.begin() + static_cast<int64_t>(i + 1) * cols);
  return rows;
}

template <class Key>
IndexLookup<Key>::IndexLookup(LookupConfig<Key> config, std::vector<Key> vocabulary,
                              std::vector<float> idf_weights)
    : config_(std::move(config)) {
  const LookupConfig<Key>& c = config_;
  check_output_mode(c.layer, c.output_mode, {"int", "one_hot", "multi_hot", "count", "tf_idf"});
  OSPREY_CHECK(!c.max_tokens || *c.max_tokens > 1,
               "{}: max_tokens must be greater than 1 (it counts the mask and OOV indices). "
               "Received: max_tokens={}",
               c.layer, c.max_tokens.value_or(0));
  OSPREY_CHECK(!c.pad_to_max_tokens || c.max_tokens,
               "{}: pad_to_max_tokens=true needs max_tokens. Received: max_tokens unset", c.layer);
  OSPREY_CHECK(c.num_oov_indices >= 0,
               "{}: num_oov_indices must be >= 0. Received: num_oov_indices={}", c.layer,
               c.num_oov_indices);
  OSPREY_CHECK(!c.invert || c.output_mode == "int",
               "{}: invert=true needs output_mode \"int\". Received: output_mode=\"{}\"", c.layer,
               c.output_mode);
  OSPREY_CHECK(idf_weights.empty() || c.output_mode == "tf_idf",
               "{}: idf_weights are only for output_mode \"tf_idf\". Received: output_mode=\"{}\"",
               c.layer, c.output_mode);
  OSPREY_CHECK(c.output_mode != "tf_idf" || vocabulary.empty() || !idf_weights.empty(),
               "{}: a vocabulary given for output_mode \"tf_idf\" needs its idf_weights too",
               c.layer);
  if (!vocabulary.empty()) set_vocabulary(std::move(vocabulary), std::move(idf_weights));
}

template <class Key>
int64_t IndexLookup<Key>::oov_start() const {
  return config_.mask_token && config_.output_mode == "int" ? 1 : 0;
}

template <class Key>
int64_t IndexLookup<Key>::token_start() const {
  return oov_start() + config_.num_oov_indices;
}

template <class Key>
int64_t IndexLookup<Key>::vocabulary_size() const {
  return token_start() + static_cast<int64_t>(tokens_.size());
}

template <class Key>
int64_t IndexLookup<Key>::depth() const {
  return config_.pad_to_max_tokens ? *config_.max_tokens : vocabulary_size();
}

template <class Key>
void IndexLookup<Key>::index_tokens() {
  index_.clear();
  index_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i)
    index_.emplace(tokens_[i], token_start() + static_cast<int64_t>(i));
}

template <class Key>
void IndexLookup<Key>::set_vocabulary(std::vector<Key> vocabulary, std::vector<float> idf) {
  const LookupConfig<Key>& c = config_;
  OSPREY_CHECK(!vocabulary.empty(), "{}: cannot set an empty vocabulary", c.layer);
  OSPREY_CHECK(c.output_mode != "tf_idf" || !idf.empty(),
               "{}: idf_weights must be set for output_mode \"tf_idf\"", c.layer);
  OSPREY_CHECK(idf.empty() || c.output_mode == "tf_idf",
               "{}: idf_weights are only for output_mode \"tf_idf\". Received: output_mode=\"{}\"",
               c.layer, c.output_mode);
  OSPREY_CHECK(idf.empty() || idf.size() == vocabulary.size(),
               "{}: idf_weights must be as long as the vocabulary. Received: {} weights for {} "
               "terms",
               c.layer, idf.size(), vocabulary.size());
  // A vocabulary may start with the reserved tokens (as get_vocabulary() returns it).
  std::vector<Key> special(static_cast<size_t>(oov_start()), c.mask_token.value_or(Key{}));
  special.insert(special.end(), static_cast<size_t>(c.num_oov_indices), c.oov_token);
  const bool found_special = vocabulary.size() >= special.size() &&
                             std::equal(special.begin(), special.end(), vocabulary.begin());
  std::vector<Key> tokens(vocabulary.begin() + (found_special ? special.size() : 0),
                          vocabulary.end());
  std::unordered_set<Key> seen;
  std::vector<Key> repeated;
  for (const Key& t : tokens)
    if (!seen.insert(t).second && std::find(repeated.begin(), repeated.end(), t) == repeated.end())
      repeated.push_back(t);
  OSPREY_CHECK(repeated.empty(), "{}: the vocabulary repeats terms: {}", c.layer,
               show_all(repeated));
  OSPREY_CHECK(!c.mask_token || !seen.count(*c.mask_token),
               "{}: the mask token {} is in the vocabulary; leave it out, or give the reserved "
               "tokens first, in this order: {}",
               c.layer, show(c.mask_token.value_or(Key{})), show_all(special));
  OSPREY_CHECK(!c.invert || !seen.count(c.oov_token),
               "{}: the OOV token {} is in the vocabulary; leave it out, or give the reserved "
               "tokens first, in this order: {}",
               c.layer, show(c.oov_token), show_all(special));
  const int64_t size = token_start() + static_cast<int64_t>(tokens.size());
  OSPREY_CHECK(!c.max_tokens || size <= *c.max_tokens,
               "{}: the vocabulary ({} indices with the reserved ones) is larger than "
               "max_tokens={}",
               c.layer, size, c.max_tokens.value_or(0));
  tokens_ = std::move(tokens);
  has_input_vocabulary_ = true;
  index_tokens();
  idf_.clear();
  if (c.output_mode == "tf_idf") {
    // Keras: the reserved indices get the mean weight unless they were given; padding gets 0.
    const double mean =
        std::accumulate(idf.begin(), idf.end(), 0.0) / static_cast<double>(idf.size());
    if (!found_special) idf_.assign(static_cast<size_t>(token_start()), static_cast<float>(mean));
    idf_.insert(idf_.end(), idf.begin(), idf.end());
    if (c.pad_to_max_tokens) idf_.resize(static_cast<size_t>(*c.max_tokens), 0.0f);
  }
}

template <class Key>
void IndexLookup<Key>::adapt(const std::vector<std::vector<Key>>& documents) {
  const LookupConfig<Key>& c = config_;
  OSPREY_CHECK(!has_input_vocabulary_,
               "{}: cannot adapt after a vocabulary was given (the vocabulary option or "
               "set_vocabulary)",
               c.layer);
  std::unordered_map<Key, std::pair<int64_t, int64_t>> counts;  // token -> {count, documents}
  for (const auto& doc : documents) {
    std::unordered_set<Key> in_doc;
    for (const Key& t : doc) {
      auto& [n, docs] = counts[t];
      ++n;
      if (in_doc.insert(t).second) ++docs;
    }
  }
  if (c.mask_token) counts.erase(*c.mask_token);
  counts.erase(c.oov_token);
  OSPREY_CHECK(!counts.empty(), "{}: adapt found no tokens in {} documents", c.layer,
               documents.size());
  std::vector<std::pair<Key, std::pair<int64_t, int64_t>>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.first != b.second.first ? a.second.first > b.second.first : a.first > b.first;
  });
  if (c.max_tokens) {
    const auto keep = static_cast<size_t>(std::max<int64_t>(*c.max_tokens - token_start(), 0));
    if (sorted.size() > keep) sorted.resize(keep);
  }
  tokens_.clear();
  for (const auto& s : sorted) tokens_.push_back(s.first);
  index_tokens();
  idf_.clear();
  if (c.output_mode == "tf_idf") {
    const auto n = static_cast<double>(documents.size());
    std::vector<float> idf;
    float sum = 0.0f;  // TensorFlow's reduce_mean: a float32 sum
    for (const auto& s : sorted) {
      idf.push_back(
          static_cast<float>(std::log(1.0 + n / (1.0 + static_cast<double>(s.second.second)))));
      sum += idf.back();
    }
    idf_.assign(static_cast<size_t>(token_start()), sum / static_cast<float>(idf.size()));
    idf_.insert(idf_.end(), idf.begin(), idf.end());
    if (c.pad_to_max_tokens) idf_.resize(static_cast<size_t>(*c.max_tokens), 0.0f);
  }
}

template <class Key>
std::vector<Key> IndexLookup<Key>::get_vocabulary(bool include_special_tokens) const {
  std::vector<Key> out;
  if (include_special_tokens) {
    if (oov_start() == 1) out.push_back(*config_.mask_token);
    out.insert(out.end(), static_cast<size_t>(config_.num_oov_indices), config_.oov_token);
  }
  out.insert(out.end(), tokens_.begin(), tokens_.end());
  return out;
}

template <class Key>
int64_t IndexLookup<Key>::index_of(const Key& value) const {
  const LookupConfig<Key>& c = config_;
  if (c.mask_token && value == *c.mask_token) return c.output_mode == "int" ? 0 : -1;
  if (auto it = index_.find(value); it != index_.end()) return it->second;
  OSPREY_CHECK(c.num_oov_indices > 0,
               "{}: {} is not in the vocabulary, and num_oov_indices=0 allows no OOV values "
               "(set num_oov_indices=1)",
               c.layer, show(value));
  if (c.num_oov_indices == 1) return oov_start();
  return oov_start() + oov_bucket(value, c.num_oov_indices, c.salt);
}

template <class Key>
Key IndexLookup<Key>::token_at(int64_t index) const {
  if (config_.mask_token && index == 0) return *config_.mask_token;
  const int64_t i = index - token_start();
  if (i >= 0 && i < static_cast<int64_t>(tokens_.size())) return tokens_[static_cast<size_t>(i)];
  return config_.oov_token;
}

template <class Key>
std::vector<std::vector<int64_t>> IndexLookup<Key>::indices(
    const std::vector<std::vector<Key>>& rows) const {
  std::vector<std::vector<int64_t>> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    out[i].reserve(rows[i].size());
    for (const Key& v : rows[i]) out[i].push_back(index_of(v));
  }
  return out;
}

template <class Key>
Tensor IndexLookup<Key>::encode(const std::vector<std::vector<Key>>& rows, bool flat,
                                std::optional<int64_t> length) const {
  const std::string& mode = config_.output_mode;
  OSPREY_CHECK(mode == "int" || config_.pad_to_max_tokens || !tokens_.empty(),
               "{}: output_mode \"{}\" needs a vocabulary first (adapt, or the vocabulary "
               "option), or pad_to_max_tokens with max_tokens",
               config_.layer, mode);
  return encode_categorical(indices(rows), {.layer = config_.layer.c_str(),
                                            .output_mode = mode,
                                            .depth = depth(),
                                            .flat = flat,
                                            .length = length,
                                            .pad_ragged = length.has_value(),
                                            .idf = &idf_});
}

template <class Key>
nlohmann::json IndexLookup<Key>::to_json() const {
  const LookupConfig<Key>& c = config_;
  nlohmann::json j = {{"max_tokens", nullptr},
                      {"num_oov_indices", c.num_oov_indices},
                      {"mask_token", nullptr},
                      {"oov_token", c.oov_token},
                      {"output_mode", c.output_mode},
                      {"pad_to_max_tokens", c.pad_to_max_tokens},
                      {"invert", c.invert},
                      {"salt", nullptr},
                      {"has_input_vocabulary", has_input_vocabulary_},
                      {"vocabulary", tokens_},
                      {"idf_weights", idf_}};
  if (c.max_tokens) j["max_tokens"] = *c.max_tokens;
  if (c.mask_token) j["mask_token"] = *c.mask_token;
  if (c.salt) j["salt"] = *c.salt;
  return j;
}

template <class Key>
IndexLookup<Key> IndexLookup<Key>::from_json(const nlohmann::json& j, const std::string& layer) {
  IndexLookup<Key> out;
  LookupConfig<Key>& c = out.config_;
  c.layer = layer;
  try {
    if (!saved_field(j, layer, "max_tokens").is_null())
      c.max_tokens = saved_field(j, layer, "max_tokens").get<int64_t>();
    c.num_oov_indices = saved_field(j, layer, "num_oov_indices").get<int64_t>();
    if (!saved_field(j, layer, "mask_token").is_null())
      c.mask_token = saved_field(j, layer, "mask_token").get<Key>();
    c.oov_token = saved_field(j, layer, "oov_token").get<Key>();
    c.output_mode = saved_field(j, layer, "output_mode").get<std::string>();
    c.pad_to_max_tokens = saved_field(j, layer, "pad_to_max_tokens").get<bool>();
    c.invert = saved_field(j, layer, "invert").get<bool>();
    if (!saved_field(j, layer, "salt").is_null())
      c.salt = saved_field(j, layer, "salt").get<std::array<uint64_t, 2>>();
    out.has_input_vocabulary_ = saved_field(j, layer, "has_input_vocabulary").get<bool>();
    out.tokens_ = saved_field(j, layer, "vocabulary").get<std::vector<Key>>();
    out.idf_ = saved_field(j, layer, "idf_weights").get<std::vector<float>>();
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "{}: malformed saved state: {}", layer, e.what());
  }
  // The checks the constructor makes, on what was read.
  IndexLookup<Key> check(c, {}, {});
  out.index_tokens();
  OSPREY_CHECK(c.output_mode != "tf_idf" || out.tokens_.empty() ||
                   static_cast<int64_t>(out.idf_.size()) == out.depth(),
               "{}: the saved state has {} idf_weights for {} output indices", layer,
               out.idf_.size(), out.depth());
  return out;
}

template class IndexLookup<std::string>;
template class IndexLookup<int64_t>;

}  // namespace osprey::data::text::detail
