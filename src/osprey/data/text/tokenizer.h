// Tokenizers: text to the integer ids a model embeds, and back. A tokenizer is saved with the
// model that was trained on its ids (to_json / tokenizer_from_json), so that generation decodes
// with the same vocabulary. Two need no library:
//   - characters: the distinct Unicode code points of a training text, sorted by code point (as
//     nanoGPT's shakespeare_char: 65 ids for Tiny Shakespeare, "\n" = 0, " " = 1, "a" = 39);
//   - bytes: the UTF-8 bytes, 256 ids, nothing to fit, any text.
//   auto tok = text::CharTokenizer::fit(text::read_text_file("data/tinyshakespeare.txt"));
//   std::vector<int64_t> ids = tok.encode("hii there");   // {46, 47, 47, 1, 58, 46, 43, 56, 43}
//   tok.decode(ids) == "hii there";
// Subwords (BPE, unigram) are SentencePiece's: sentencepiece_tokenizer.h.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "osprey/tensor/tensor.h"

namespace osprey::data::text {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string kind() const = 0;  // "char", "byte", "bpe", "unigram"
  virtual int64_t vocab_size() const = 0;
  // Throws ValueError naming the tokenizer, what is wrong and where (byte offset, position).
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  virtual std::string decode(std::span<const int64_t> ids) const = 0;
  // {"kind": ..., ...}: what tokenizer_from_json needs to rebuild it.
  virtual nlohmann::json to_json() const = 0;

  // The ids of `text` as an int64 tensor [n] (the stream language_model_dataset windows).
  Tensor encode_tensor(std::string_view text) const;
};

class CharTokenizer final : public Tokenizer {
 public:
  // The vocabulary: the distinct code points of `text`, sorted. ValueError for an empty text or
  // text that is not valid UTF-8.
  static CharTokenizer fit(std::string_view text);
  // The vocabulary given in order (each a code point); ValueError for a repeated one.
  explicit CharTokenizer(std::vector<char32_t> vocabulary);

  std::string kind() const override { return "char"; }
  int64_t vocab_size() const override { return static_cast<int64_t>(chars_.size()); }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int64_t> ids) const override;
  nlohmann::json to_json() const override;
  const std::vector<char32_t>& vocabulary() const { return chars_; }

 private:
  std::vector<char32_t> chars_;  // id -> code point, ascending
};

class ByteTokenizer final : public Tokenizer {
 public:
  std::string kind() const override { return "byte"; }
  int64_t vocab_size() const override { return 256; }
  std::vector<int64_t> encode(std::string_view text) const override;
  // Bytes that do not form valid UTF-8 (a sampled sequence may cut a character) come back as
  // U+FFFD, as Python's bytes.decode(errors="replace").
  std::string decode(std::span<const int64_t> ids) const override;
  nlohmann::json to_json() const override { return {{"kind", "byte"}}; }
};

// Rebuilds what to_json wrote; ValueError naming the field when it is malformed.
std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& j);

// A `spec` as `osprey train --tokenizer` takes it: "char", "byte", "bpe:N" or "unigram:N" (a
// SentencePiece vocabulary of N pieces) -> {kind, N}, N = 0 for char and byte. ValueError
// naming the spec when it is none of these.
struct TokenizerSpec {
  std::string kind;
  int64_t vocab_size = 0;
};
TokenizerSpec parse_tokenizer_spec(const std::string& spec);

// The tokenizer `spec` names, fitted on `text` (char, bpe, unigram); ValueError naming the spec
// when it is malformed or cannot be fitted on the text.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec, std::string_view text);

// The whole of a text file (gzip or not); IoError naming the file when it cannot be read or is
// empty.
std::string read_text_file(const std::string& path);

}  // namespace osprey::data::text
