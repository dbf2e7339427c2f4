#include "osprey/data/text/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "osprey/core/error.h"
#include "osprey/data/file_reader.h"
#include "osprey/tensor/factory.h"

namespace osprey::data::text {

namespace {

// UTF-8 by hand: the standard library has no decoder (codecvt is deprecated) and ICU would be a
// large dependency for two small loops. Strict: overlong forms, surrogates and code points past
// U+10FFFF are invalid, as Python's decoder says.
struct Decoded {
  char32_t code;
  size_t length;  // 0: invalid
};

Decoded decode_one(std::string_view s, size_t at) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[at + i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return {c, 1};
  size_t n = 0;
  char32_t code = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2, code = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, code = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, code = c & 0x07;
  } else {
    return {0, 0};
  }
  if (at + n > s.size()) return {0, 0};
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return {0, 0};
    code = (code << 6) | (b(i) & 0x3F);
  }
  static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kMin[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {0, 0};
  return {code, n};
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// Every code point of `s`; ValueError naming `who` and the byte offset of the first invalid one.
std::vector<char32_t> code_points(std::string_view s, const char* who) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t at = 0; at < s.size();) {
    const Decoded d = decode_one(s, at);
    OSPREY_CHECK(d.length > 0, "{}: the text is not valid UTF-8 at byte {}", who, at);
    out.push_back(d.code);
    at += d.length;
  }
  return out;
}

// A character for an error message: itself when printable ASCII, with its code point.
std::string show(char32_t c) {
  std::string glyph;
  if (c >= 0x20 && c != 0x7F) append_utf8(glyph, c);
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
  const std::vector<char32_t> all = code_points(text, "CharTokenizer");
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
    const Decoded d = decode_one(text, at);
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
    append_utf8(out, chars_[static_cast<size_t>(ids[i])]);
  }
  return out;
}

nlohmann::json CharTokenizer::to_json() const {
  std::string vocab;
  for (char32_t c : chars_) append_utf8(vocab, c);
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
    const Decoded d = decode_one(bytes, at);
    if (d.length == 0) {
      append_utf8(out, 0xFFFD);
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
        code_points(j["vocabulary"].get<std::string>(), "tokenizer 'vocabulary'"));
  }
  OSPREY_THROW(ValueError, "tokenizer: unknown kind '{}'; the kinds are char and byte", kind);
}

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec, std::string_view text) {
  if (spec == "char") return std::make_unique<CharTokenizer>(CharTokenizer::fit(text));
  if (spec == "byte") return std::make_unique<ByteTokenizer>();
  OSPREY_THROW(ValueError, "tokenizer: expected char or byte. Received: '{}'", spec);
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
