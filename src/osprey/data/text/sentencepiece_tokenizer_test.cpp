#include "osprey/data/text/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"

namespace osprey::data::text {
namespace {

using osprey::testing::error_of;

const std::string kShakespeare = std::string(OSPREY_SOURCE_DIR) + "/data/tinyshakespeare.txt";

const std::string& shakespeare() {
  static const std::string text = read_text_file(kShakespeare);
  return text;
}

// One fit of each kind on the whole of Tiny Shakespeare, shared by the tests (about 4 s).
const SentencePieceTokenizer& fitted(const std::string& model_type) {
  if (model_type == "bpe") {
    static const SentencePieceTokenizer bpe =
        SentencePieceTokenizer::fit(shakespeare(), 512, "bpe");
    return bpe;
  }
  static const SentencePieceTokenizer unigram =
      SentencePieceTokenizer::fit(shakespeare(), 512, "unigram");
  return unigram;
}

class SentencePieceKindTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SentencePieceKindTest, TinyShakespeareRoundTripsExactlyInFewerTokens) {
  const SentencePieceTokenizer& tok = fitted(GetParam());
  EXPECT_EQ(tok.kind(), GetParam());
  EXPECT_EQ(tok.vocab_size(), 512);
  // The fixed ids: <unk>, the newline, then the 256 bytes.
  EXPECT_EQ(tok.piece(0), "<unk>");
  EXPECT_EQ(tok.piece(1), "\n");
  EXPECT_EQ(tok.piece(2), "<0x00>");
  EXPECT_EQ(tok.piece(257), "<0xFF>");
  const std::vector<int64_t> ids = tok.encode(shakespeare());
  EXPECT_EQ(tok.decode(ids), shakespeare());  // every newline and run of spaces kept
  // Subwords: well under one token per character (1,115,394 characters; about 0.55 per).
  EXPECT_LT(ids.size(), shakespeare().size() * 6 / 10);
  EXPECT_EQ(tok.encode_tensor(shakespeare()).shape(), (Shape{static_cast<int64_t>(ids.size())}));
}

TEST_P(SentencePieceKindTest, CommonWordsAreSinglePiecesWithTheirSpace) {
  const SentencePieceTokenizer& tok = fitted(GetParam());
  const std::vector<int64_t> the = tok.encode(" the");
  ASSERT_EQ(the.size(), 1U);
  EXPECT_EQ(tok.piece(the[0]), "\xE2\x96\x81the");  // "▁the"
  EXPECT_LT(tok.encode("ROMEO:\nWhat say you?").size(),
            std::string("ROMEO:\nWhat say you?").size());
  EXPECT_EQ(tok.encode("\n\n"), (std::vector<int64_t>{1, 1}));
}

TEST_P(SentencePieceKindTest, AnyTextRoundTripsThroughBytesWhereThePiecesEnd) {
  const SentencePieceTokenizer& tok = fitted(GetParam());
  for (const std::string text :
       {"  two  spaces,\ttab\r\nand trailing  ", " \n \n", "naïve café — 日本 🙂", "x"}) {
    EXPECT_EQ(tok.decode(tok.encode(text)), text);
  }
  // 日 is not in Tiny Shakespeare: its three UTF-8 bytes, each the id 2 + byte.
  EXPECT_EQ(tok.encode("日"), (std::vector<int64_t>{2 + 0xE6, 2 + 0x97, 2 + 0xA5}));
  // Half a character decodes as U+FFFD, as the byte tokenizer's.
  const std::vector<int64_t> half{2 + 0xE6, 2 + 0x97};
  EXPECT_EQ(tok.decode(half), "\xEF\xBF\xBD\xEF\xBF\xBD");
  // SentencePiece writes a space as "▁" (U+2581), so a literal one comes back a space.
  EXPECT_EQ(tok.decode(tok.encode("a\xE2\x96\x81"
                                  "b")),
            "a b");
}

TEST_P(SentencePieceKindTest, JsonRebuildsTheSameTokenizer) {
  const SentencePieceTokenizer& tok = fitted(GetParam());
  const nlohmann::json j = tok.to_json();
  EXPECT_EQ(j["kind"], GetParam());
  EXPECT_EQ(j["vocab_size"], 512);
  const std::unique_ptr<Tokenizer> back = tokenizer_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back->kind(), GetParam());
  EXPECT_EQ(back->vocab_size(), 512);
  const std::string sample = shakespeare().substr(0, 20000) + "日本 🙂";
  EXPECT_EQ(back->encode(sample), tok.encode(sample));
  EXPECT_EQ(back->to_json(), j);
}

TEST_P(SentencePieceKindTest, TheSameTextGivesTheSameModelTwice) {
  const std::string text = shakespeare().substr(0, 100000);
  const SentencePieceTokenizer a = SentencePieceTokenizer::fit(text, 400, GetParam());
  const SentencePieceTokenizer b = SentencePieceTokenizer::fit(text, 400, GetParam());
  EXPECT_EQ(a.to_json(), b.to_json());
  EXPECT_EQ(a.encode(text), b.encode(text));
  // And make_tokenizer's spec is the same fit.
  EXPECT_EQ(make_tokenizer(GetParam() + ":400", text)->to_json(), a.to_json());
}

INSTANTIATE_TEST_SUITE_P(Kinds, SentencePieceKindTest, ::testing::Values("bpe", "unigram"),
                         [](const auto& info) { return info.param; });

TEST(SentencePieceTokenizerTest, BpeMergesAreLearnedInOrder) {
  const SentencePieceTokenizer& tok = fitted("bpe");
  // After the 258 fixed ids, BPE's first merges: Tiny Shakespeare's commonest pairs.
  EXPECT_EQ(tok.piece(258), "\xE2\x96\x81t");  // "▁t"
  EXPECT_EQ(tok.piece(259), "he");
  std::vector<std::string> pieces;
  for (int64_t id : tok.encode(" the king")) pieces.push_back(tok.piece(id));
  EXPECT_EQ(pieces, (std::vector<std::string>{"\xE2\x96\x81the", "\xE2\x96\x81k", "ing"}));
}

TEST(SentencePieceTokenizerTest, LinesPastSentencePiecesLimitAreCutNotSkipped) {
  // One 16,000-byte line: SentencePiece alone would skip it (past 4,192 bytes) and learn nothing.
  std::string text;
  for (int i = 0; i < 2000; ++i) text += i % 2 ? "abc def " : "ghi jkl ";
  const SentencePieceTokenizer tok = SentencePieceTokenizer::fit(text, 280, "bpe");
  EXPECT_EQ(tok.vocab_size(), 280);
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
  EXPECT_LT(tok.encode(text).size(), text.size() / 2);  // merged: 7,000 pieces
}

TEST(SentencePieceTokenizerTest, BadSpecsNameTheSpec) {
  const std::string& text = shakespeare();
  for (const std::string spec : {"bpe:", "bpe:x", "bpe:0", "bpe:12x", "bpe:99999999999"}) {
    EXPECT_EQ(error_of<ValueError>([&] { make_tokenizer(spec, text); }),
              "tokenizer: the vocabulary size N of bpe:N must be a positive integer. Received: '" +
                  spec + "'");
  }
  EXPECT_EQ(error_of<ValueError>([&] { make_tokenizer("unigram:-5", text); }),
            "tokenizer: the vocabulary size N of unigram:N must be a positive integer. Received: "
            "'unigram:-5'");
  EXPECT_EQ(error_of<ValueError>([&] { make_tokenizer("wordpiece:100", text); }),
            "tokenizer: expected char, byte, bpe:N or unigram:N (N: the vocabulary size). "
            "Received: 'wordpiece:100'");
  EXPECT_EQ(error_of<ValueError>([&] { make_tokenizer("bpe100", text); }),
            "tokenizer: expected char, byte, bpe:N or unigram:N (N: the vocabulary size). "
            "Received: 'bpe100'");
  EXPECT_EQ(error_of<ValueError>([&] { make_tokenizer("bpe:100", text); }),
            "tokenizer 'bpe:100': SentencePieceTokenizer (bpe): vocab_size must be more than 258: "
            "<unk>, the newline and the 256 bytes come first, then the text's characters and "
            "subwords. Received: 100");
  // Tiny Shakespeare's 64 characters besides the newline need 258 + 64 ids.
  EXPECT_EQ(error_of<ValueError>([&] { make_tokenizer("bpe:300", text); }),
            "tokenizer 'bpe:300': SentencePieceTokenizer (bpe): SentencePiece cannot train 300 "
            "pieces on this text: Vocabulary size is smaller than required_chars. 300 vs 322. "
            "Increase vocab_size or decrease character_coverage with --character_coverage "
            "option.");
  EXPECT_EQ(
      error_of<ValueError>([&] { make_tokenizer("unigram:5000", "hello world\nhello there\n"); }),
      "tokenizer 'unigram:5000': SentencePieceTokenizer (unigram): SentencePiece cannot "
      "train 5000 pieces on this text: Vocabulary size too high (5000). Please set it to a "
      "value <= 268.");
  EXPECT_EQ(error_of<ValueError>([&] { make_tokenizer("bpe:300", "\n\n\n"); }),
            "tokenizer 'bpe:300': SentencePieceTokenizer (bpe): the text has nothing but newlines "
            "to learn from");
  EXPECT_EQ(error_of<ValueError>([&] { make_tokenizer("bpe:300", "ab\xC3\n"); }),
            "tokenizer 'bpe:300': SentencePieceTokenizer (bpe): the text is not valid UTF-8 at "
            "byte 2");
  EXPECT_EQ(error_of<ValueError>([&] { SentencePieceTokenizer::fit(text, 512, "word"); }),
            "SentencePieceTokenizer: model_type must be bpe or unigram. Received: 'word'");
  EXPECT_EQ(parse_tokenizer_spec("unigram:512").kind, "unigram");
  EXPECT_EQ(parse_tokenizer_spec("unigram:512").vocab_size, 512);
  EXPECT_EQ(parse_tokenizer_spec("char").vocab_size, 0);
}

TEST(SentencePieceTokenizerTest, BadIdsAndTextNameThePosition) {
  const SentencePieceTokenizer& tok = fitted("bpe");
  const std::vector<int64_t> ids{5, 512};
  EXPECT_EQ(error_of<ValueError>([&] { tok.decode(ids); }),
            "SentencePieceTokenizer (bpe): token id 512 at position 1 is outside the vocabulary "
            "[0, 512)");
  const std::vector<int64_t> negative{-1};
  EXPECT_EQ(error_of<ValueError>([&] { fitted("unigram").decode(negative); }),
            "SentencePieceTokenizer (unigram): token id -1 at position 0 is outside the "
            "vocabulary [0, 512)");
  EXPECT_EQ(error_of<ValueError>([&] { tok.encode("ab\xC3 x"); }),
            "SentencePieceTokenizer (bpe): the text is not valid UTF-8 at byte 2");
}

TEST(SentencePieceTokenizerTest, CorruptedJsonNamesTheField) {
  const nlohmann::json good = fitted("bpe").to_json();
  const std::string model = good["model"];
  auto with = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json j = good;
    j[key] = value;
    return j;
  };
  auto without = [&](const char* key) {
    nlohmann::json j = good;
    j.erase(key);
    return j;
  };
  EXPECT_EQ(error_of<ValueError>([&] { tokenizer_from_json(without("model")); }),
            "tokenizer: a bpe tokenizer needs its 'model' as a string (the SentencePiece model "
            "in base64)");
  EXPECT_EQ(error_of<ValueError>([&] { tokenizer_from_json(with("model", 7)); }),
            "tokenizer: a bpe tokenizer needs its 'model' as a string (the SentencePiece model "
            "in base64)");
  EXPECT_EQ(error_of<ValueError>([&] { tokenizer_from_json(without("vocab_size")); }),
            "tokenizer: a bpe tokenizer needs its 'vocab_size' as an integer");
  EXPECT_EQ(error_of<ValueError>([&] { tokenizer_from_json(with("model", model.substr(0, 10))); }),
            "tokenizer: the bpe tokenizer's 'model' is not base64: its length 10 is not a "
            "multiple of 4");
  EXPECT_EQ(error_of<ValueError>([&] { tokenizer_from_json(with("model", "AAA!" + model)); }),
            "tokenizer: the bpe tokenizer's 'model' is not base64: '!' at character 3");
  // Cut short: the protocol buffer does not parse.
  EXPECT_EQ(error_of<ValueError>(
                [&] { tokenizer_from_json(with("model", model.substr(0, model.size() / 8 * 4))); }),
            "tokenizer: the bpe tokenizer's 'model' is not a SentencePiece model");
  EXPECT_EQ(error_of<ValueError>([&] { tokenizer_from_json(with("vocab_size", 500)); }),
            "tokenizer: the bpe tokenizer's 'model' holds 512 pieces; its 'vocab_size' says 500");
  // The unigram kind reads the same fields.
  EXPECT_EQ(error_of<ValueError>([&] {
              tokenizer_from_json({{"kind", "unigram"}, {"vocab_size", 512}});
            }),
            "tokenizer: a unigram tokenizer needs its 'model' as a string (the SentencePiece "
            "model in base64)");
}

}  // namespace
}  // namespace osprey::data::text
