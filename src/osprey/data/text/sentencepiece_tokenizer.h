// Subword tokenizers trained and applied with SentencePiece (Debian's libsentencepiece-dev):
// byte-pair encoding ("bpe", GPT-2's kind of vocabulary) and the unigram language model
// ("unigram", T5's and ALBERT's). Set up for raw text, so that decode(encode(text)) == text: no
// normalization, every space kept (as SentencePiece's "▁"), a newline is a piece of its own, and a
// character the training text lacked encodes as its UTF-8 bytes (byte fallback). Ids 0-257 are
// <unk>, "\n" and the 256 bytes; the text's characters and the learned subwords follow.
//   auto tok = text::SentencePieceTokenizer::fit(text::read_text_file("data/tinyshakespeare.txt"),
//                                                512, "bpe");
//   tok.encode(" the king");   // {269, 345, 300}: "▁the", "▁k", "ing"
//   tok.decode(tok.encode(s)) == s;   // for any valid UTF-8 s without a literal "▁" (U+2581)
// SentencePiece runs in a module of its own, libosprey_sentencepiece.so, that the first use loads
// (internal/sentencepiece_api.h says why); OSPREY_SENTENCEPIECE_MODULE names it if it has moved.
#pragma once

#include <memory>
#include <string>

#include "osprey/data/text/tokenizer.h"

namespace osprey::data::text {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Trains a `model_type` ("bpe" or "unigram") vocabulary of `vocab_size` pieces on the lines of
  // `text` (2 MiB of them at most, evenly spaced through a longer text, so that a fit takes
  // seconds), deterministically. ValueError for a vocab_size of 258 or less, one too small for
  // the text's characters, or one too large for what the text holds.
  static SentencePieceTokenizer fit(std::string_view text, int64_t vocab_size,
                                    const std::string& model_type);
  // A trained model: the serialized SentencePiece ModelProto that fit made. ValueError naming
  // `who` when it does not parse.
  SentencePieceTokenizer(std::string model_type, std::string model_proto,
                         const std::string& who = "SentencePieceTokenizer");
  // From to_json's {"kind", "vocab_size", "model" (the model proto in base64)}; ValueError naming
  // the field that is missing or malformed.
  static SentencePieceTokenizer from_json(const nlohmann::json& j);

  std::string kind() const override { return model_type_; }
  int64_t vocab_size() const override;
  std::vector<int64_t> encode(std::string_view text) const override;
  // Byte pieces that do not form valid UTF-8 come back as U+FFFD, as ByteTokenizer's.
  std::string decode(std::span<const int64_t> ids) const override;
  nlohmann::json to_json() const override;
  // The piece of an id, "▁the" say (tests and inspection).
  std::string piece(int64_t id) const;

 private:
  std::string model_type_;
  std::string model_proto_;
  std::shared_ptr<void> processor_;  // SentencePiece's processor (immutable: copies share it)
};

}  // namespace osprey::data::text
