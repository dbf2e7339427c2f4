#include "osprey/data/text/text_vectorization.h"

#include <algorithm>
#include <fstream>
#include <utility>

#include "osprey/core/error.h"

namespace osprey::data::text {
namespace {

constexpr const char* kLayer = "TextVectorization";

void check_choice(const std::optional<std::string>& value, const char* field,
                  std::initializer_list<const char*> choices) {
  if (!value) return;
  for (const char* c : choices)
    if (*value == c) return;
  std::vector<std::string> quoted;
  for (const char* c : choices) quoted.push_back(fmt::format("\"{}\"", c));
  OSPREY_THROW(ValueError, "{}: {} must be one of {} or none. Received: {}=\"{}\"", kLayer, field,
               fmt::join(quoted, ", "), field, *value);
}

detail::LookupConfig<std::string> lookup_config(const TextVectorizationOptions& o) {
  detail::check_output_mode(kLayer, o.output_mode, {"int", "multi_hot", "count", "tf_idf"});
  detail::LookupConfig<std::string> c;
  c.layer = kLayer;
  c.max_tokens = o.max_tokens;
  c.num_oov_indices = 1;
  c.mask_token = "";
  c.oov_token = "[UNK]";
  c.output_mode = o.output_mode;
  c.pad_to_max_tokens = o.pad_to_max_tokens;
  return c;
}

const TextVectorizationOptions& checked(const TextVectorizationOptions& o) {
  check_choice(o.standardize, "standardize",
               {"lower_and_strip_punctuation", "lower", "strip_punctuation"});
  check_choice(o.split, "split", {"whitespace", "character"});
  OSPREY_CHECK(!o.ngrams || *o.ngrams >= 1, "{}: ngrams must be positive. Received: ngrams={}",
               kLayer, o.ngrams.value_or(0));
  OSPREY_CHECK(!o.output_sequence_length || o.output_mode == "int",
               "{}: output_sequence_length is only for output_mode \"int\". Received: "
               "output_mode=\"{}\"",
               kLayer, o.output_mode);
  OSPREY_CHECK(!o.output_sequence_length || *o.output_sequence_length >= 0,
               "{}: output_sequence_length must be >= 0. Received: output_sequence_length={}",
               kLayer, o.output_sequence_length.value_or(0));
  return o;
}

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Keras's regex [!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']: the 32 ASCII punctuation marks.
bool is_ascii_punct(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 33 && u <= 47) || (u >= 58 && u <= 64) || (u >= 91 && u <= 96) ||
         (u >= 123 && u <= 126);
}

// The UTF-8 characters of s; a byte that starts no valid character becomes U+FFFD, as
// tf.strings.unicode_split's errors="replace".
std::vector<std::string> utf8_characters(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok) {
      out.push_back(s.substr(i, n));
      i += n;
    } else {
      out.emplace_back("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

int64_t longest_row(const std::vector<std::vector<std::string>>& rows) {
  size_t n = 0;
  for (const auto& r : rows) n = std::max(n, r.size());
  return static_cast<int64_t>(n);
}

}  // namespace

TextVectorization::TextVectorization(TextVectorizationOptions options)
    : options_(checked(options)),
      lookup_(lookup_config(options_), options_.vocabulary, options_.idf_weights) {}

TextVectorization::TextVectorization(TextVectorizationOptions options,
                                     detail::IndexLookup<std::string> lookup)
    : options_(std::move(options)), lookup_(std::move(lookup)) {}

std::vector<std::string> TextVectorization::tokens(const std::string& text) const {
  std::string s;
  s.reserve(text.size());
  const std::string standardize = options_.standardize.value_or("");
  const bool lower = standardize == "lower" || standardize == "lower_and_strip_punctuation";
  const bool strip =
      standardize == "strip_punctuation" || standardize == "lower_and_strip_punctuation";
  for (char c : text) {
    if (strip && is_ascii_punct(c)) continue;
    s.push_back(lower && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  std::vector<std::string> words;
  if (!options_.split) {
    words.push_back(std::move(s));
  } else if (*options_.split == "character") {
    words = utf8_characters(s);
  } else {  // whitespace: runs of it separate, and none is a token
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_ascii_space(s[i])) ++i;
      const size_t start = i;
      while (i < s.size() && !is_ascii_space(s[i])) ++i;
      if (i > start) words.push_back(s.substr(start, i - start));
    }
  }
  if (!options_.ngrams) return words;
  // tf.strings.ngrams with widths 1..N: all 1-grams, then all 2-grams, ...
  std::vector<std::string> out;
  for (int64_t w = 1; w <= *options_.ngrams; ++w) {
    for (size_t i = 0; i + static_cast<size_t>(w) <= words.size(); ++i) {
      std::string g = words[i];
      for (size_t k = 1; k < static_cast<size_t>(w); ++k) g += " " + words[i + k];
      out.push_back(std::move(g));
    }
  }
  return out;
}

void TextVectorization::adapt(const std::vector<std::string>& texts) {
  OSPREY_CHECK(!texts.empty(), "{}: adapt needs at least one text. Received: 0 texts", kLayer);
  std::vector<std::vector<std::string>> docs;
  docs.reserve(texts.size());
  for (const auto& t : texts) docs.push_back(tokens(t));
  lookup_.adapt(docs);
}

void TextVectorization::set_vocabulary(std::vector<std::string> vocabulary,
                                       std::vector<float> idf_weights) {
  lookup_.set_vocabulary(std::move(vocabulary), std::move(idf_weights));
}

std::vector<std::string> TextVectorization::get_vocabulary(bool include_special_tokens) const {
  return lookup_.get_vocabulary(include_special_tokens);
}

Tensor TextVectorization::operator()(const std::vector<std::string>& texts) const {
  std::vector<std::vector<std::string>> docs;
  docs.reserve(texts.size());
  for (const auto& t : texts) docs.push_back(tokens(t));
  if (options_.output_mode != "int") return lookup_.encode(docs, /*flat=*/false);
  // Ragged rows pad to the longest (or are cut to output_sequence_length).
  return lookup_.encode(docs, /*flat=*/false,
                        options_.output_sequence_length.value_or(longest_row(docs)));
}

nlohmann::json TextVectorization::to_json() const {
  const TextVectorizationOptions& o = options_;
  const auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"class_name", kLayer},
          {"config",
           {{"max_tokens", opt(o.max_tokens)},
            {"standardize", opt(o.standardize)},
            {"split", opt(o.split)},
            {"ngrams", opt(o.ngrams)},
            {"output_mode", o.output_mode},
            {"output_sequence_length", opt(o.output_sequence_length)},
            {"pad_to_max_tokens", o.pad_to_max_tokens}}},
          {"lookup", lookup_.to_json()}};
}

TextVectorization TextVectorization::from_json(const nlohmann::json& j) {
  OSPREY_CHECK(j.is_object() && j.contains("config") && j.contains("lookup"),
               "{}: the saved state needs \"config\" and \"lookup\" fields", kLayer);
  TextVectorizationOptions o;
  try {
    const nlohmann::json& c = j.at("config");
    const auto opt = [&](const char* name, auto& field) {
      const nlohmann::json& v = c.at(name);
      if (v.is_null()) {
        field.reset();
      } else {
        field = v.get<typename std::decay_t<decltype(field)>::value_type>();
      }
    };
    opt("max_tokens", o.max_tokens);
    opt("standardize", o.standardize);
    opt("split", o.split);
    opt("ngrams", o.ngrams);
    o.output_mode = c.at("output_mode").get<std::string>();
    opt("output_sequence_length", o.output_sequence_length);
    o.pad_to_max_tokens = c.at("pad_to_max_tokens").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "{}: malformed saved config: {}", kLayer, e.what());
  }
  checked(o);
  auto lookup = detail::IndexLookup<std::string>::from_json(j.at("lookup"), kLayer);
  OSPREY_CHECK(lookup.config().output_mode == o.output_mode,
               "{}: the saved config's output_mode \"{}\" differs from its lookup's \"{}\"", kLayer,
               o.output_mode, lookup.config().output_mode);
  return TextVectorization(std::move(o), std::move(lookup));
}

void TextVectorization::save(const std::string& path) const {
  std::ofstream out(path);
  out << to_json().dump(1) << "\n";
  out.close();
  OSPREY_CHECK_T(IoError, out.good(), "{}: cannot write '{}'", kLayer, path);
}

TextVectorization TextVectorization::load(const std::string& path) {
  std::ifstream in(path);
  OSPREY_CHECK_T(IoError, in.good(), "{}: cannot open '{}'", kLayer, path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(IoError, "{}: '{}' is not JSON: {}", kLayer, path, e.what());
  }
  return from_json(j);
}

}  // namespace osprey::data::text
