#include "osprey/data/text/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "osprey/core/error.h"
#include "osprey/data/file_reader.h"
#include "osprey/data/text/sentencepiece_tokenizer.h"
#include "osprey/data/text/utf8.h"
#include "osprey/tensor/factory.h"

namespace osprey::data::text {

namespace {

// A character for an error message: itself when printable ASCII, with its code point.
std::string show(char32_t c) {
  std::string glyph;
  if (c >= 0x20 && c != 0x7F) detail::append_utf8(glyph, c);
  return glyph.empty() ? fmt::format("U+{:04X}", static_cast<uint32_t>(c))
                       : fmt::format("'{}' (U+{:04X})", glyph, static_cast<uint32_t>(c));
}

}  // namespace

Tensor Tokenizer::encode_tensor(std::string_view text) const {
  const std::vector<int64_t> ids = encode(text);
  return from_vector<int64_t>(ids, {static_cast<int64_t>(ids.size())});
}

CharTokenizer CharTokenizer::fit(std::string_view text) {
  OSPREY_CHECK(!text.empty(), "CharTokenizer: cannot fit a vocabulary on an empty text");
  const std::vector<char32_t> all = detail::code_points(text, "CharTokenizer");
  const std::set<char32_t> distinct(all.begin(), all.end());
  return CharTokenizer(std::vector<char32_t>(distinct.begin(), distinct.end()));
}

CharTokenizer::CharTokenizer(std::vector<char32_t> vocabulary) : chars_(std::move(vocabulary)) {
  OSPREY_CHECK(!chars_.empty(), "CharTokenizer: the vocabulary is empty");
  std::vector<char32_t> sorted = chars_;
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  OSPREY_CHECK(dup == sorted.end(), "CharTokenizer: the vocabulary holds {} twice", show(*dup));
  OSPREY_CHECK(sorted == chars_, "CharTokenizer: the vocabulary must be sorted by code point");
}

std::vector<int64_t> CharTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const detail::Decoded d = detail::decode_one(text, at);
    OSPREY_CHECK(d.length > 0, "CharTokenizer: the text is not valid UTF-8 at byte {}", at);
    const auto it = std::lower_bound(chars_.begin(), chars_.end(), d.code);
    OSPREY_CHECK(it != chars_.end() && *it == d.code,
                 "CharTokenizer: {} at byte {} is not in the vocabulary of {} characters "
                 "fitted on the training text",
                 show(d.code), at, chars_.size());
    ids.push_back(it - chars_.begin());
    at += d.length;
  }
  return ids;
}

std::string CharTokenizer::decode(std::span<const int64_t> ids) const {
  std::string out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    OSPREY_CHECK(ids[i] >= 0 && ids[i] < vocab_size(),
                 "CharTokenizer: token id {} at position {} is outside the vocabulary [0, {})",
                 ids[i], i, vocab_size());
    detail::append_utf8(out, chars_[static_cast<size_t>(ids[i])]);
  }
  return out;
}

nlohmann::json CharTokenizer::to_json() const {
  std::string vocab;
  for (char32_t c : chars_) detail::append_utf8(vocab, c);
  return {{"kind", "char"}, {"vocabulary", vocab}};
}

std::vector<int64_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids(text.size());
  std::transform(text.begin(), text.end(), ids.begin(),
                 [](char c) { return static_cast<int64_t>(static_cast<unsigned char>(c)); });
  return ids;
}

std::string ByteTokenizer::decode(std::span<const int64_t> ids) const {
  std::string bytes;
  bytes.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    OSPREY_CHECK(ids[i] >= 0 && ids[i] < 256,
                 "ByteTokenizer: token id {} at position {} is outside the vocabulary [0, 256)",
                 ids[i], i);
    bytes += static_cast<char>(ids[i]);
  }
  std::string out;
  out.reserve(bytes.size());
  for (size_t at = 0; at < bytes.size();) {
    const detail::Decoded d = detail::decode_one(bytes, at);
    if (d.length == 0) {
      detail::append_utf8(out, 0xFFFD);
      ++at;
    } else {
      out.append(bytes, at, d.length);
      at += d.length;
    }
  }
  return out;
}

std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& j) {
  OSPREY_CHECK(j.is_object() && j.contains("kind") && j["kind"].is_string(),
               "tokenizer: expected an object with a string 'kind'. Received: {}", j.dump());
  const std::string kind = j["kind"];
  if (kind == "byte") return std::make_unique<ByteTokenizer>();
  if (kind == "char") {
    OSPREY_CHECK(j.contains("vocabulary") && j["vocabulary"].is_string(),
                 "tokenizer: a char tokenizer needs its 'vocabulary' as a string");
    return std::make_unique<CharTokenizer>(
        detail::code_points(j["vocabulary"].get<std::string>(), "tokenizer 'vocabulary'"));
  }
  if (kind == "bpe" || kind == "unigram") {
    return std::make_unique<SentencePieceTokenizer>(SentencePieceTokenizer::from_json(j));
  }
  OSPREY_THROW(ValueError,
               "tokenizer: unknown kind '{}'; the kinds are char, byte, bpe and unigram", kind);
}

TokenizerSpec parse_tokenizer_spec(const std::string& spec) {
  if (spec == "char" || spec == "byte") return {spec, 0};
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  OSPREY_CHECK(colon != std::string::npos && (kind == "bpe" || kind == "unigram"),
               "tokenizer: expected char, byte, bpe:N or unigram:N (N: the vocabulary size). "
               "Received: '{}'",
               spec);
  const std::string_view n = std::string_view(spec).substr(colon + 1);
  int vocab_size = 0;  // SentencePiece's vocab_size is an int32
  const auto [end, error] = std::from_chars(n.data(), n.data() + n.size(), vocab_size);
  OSPREY_CHECK(!n.empty() && error == std::errc() && end == n.data() + n.size() && vocab_size > 0,
               "tokenizer: the vocabulary size N of {}:N must be a positive integer. Received: "
               "'{}'",
               kind, spec);
  return {kind, vocab_size};
}

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec, std::string_view text) {
  const TokenizerSpec s = parse_tokenizer_spec(spec);
  if (s.kind == "char") return std::make_unique<CharTokenizer>(CharTokenizer::fit(text));
  if (s.kind == "byte") return std::make_unique<ByteTokenizer>();
  try {
    return std::make_unique<SentencePieceTokenizer>(
        SentencePieceTokenizer::fit(text, s.vocab_size, s.kind));
  } catch (const ValueError& e) {
    OSPREY_THROW(ValueError, "tokenizer '{}': {}", spec, e.what());
  }
}

std::string read_text_file(const std::string& path) {
  FileReader f(path, "text file");
  std::string text;
  char buf[1 << 16];
  for (size_t n; (n = f.read(buf, sizeof buf)) > 0;) text.append(buf, n);
  OSPREY_CHECK_T(IoError, !text.empty(), "{}: the text file is empty", path);
  return text;
}

}  // namespace osprey::data::text
