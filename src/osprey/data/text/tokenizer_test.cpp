#include "osprey/data/text/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"
#include "osprey/data/text/language_model_dataset.h"

namespace osprey::data::text {
namespace {

using osprey::testing::error_of;

const std::string kShakespeare = std::string(OSPREY_SOURCE_DIR) + "/data/tinyshakespeare.txt";

// nanoGPT's data/shakespeare_char/prepare.py on the same file prints the 65 characters, and
// Karpathy's "Let's build GPT" encodes "hii there" as below; its 90/10 split gives 1,003,854
// training and 111,540 validation tokens.
TEST(CharTokenizerTest, TinyShakespeareGivesNanoGptsVocabulary) {
  const CharTokenizer tok = CharTokenizer::fit(read_text_file(kShakespeare));
  EXPECT_EQ(tok.vocab_size(), 65);
  std::string all;
  for (char32_t c : tok.vocabulary()) all += static_cast<char>(c);
  EXPECT_EQ(all, "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
  const std::vector<int64_t> ids = tok.encode("hii there");
  EXPECT_EQ(ids, (std::vector<int64_t>{46, 47, 47, 1, 58, 46, 43, 56, 43}));
  EXPECT_EQ(tok.decode(ids), "hii there");
  const Tensor stream = tok.encode_tensor(read_text_file(kShakespeare));
  EXPECT_EQ(stream.shape(), (Shape{1115394}));
  const auto [train, val] = split_tokens(stream, 0.9);
  EXPECT_EQ(train.size(0), 1003854);
  EXPECT_EQ(val.size(0), 111540);
}

TEST(CharTokenizerTest, CodePointsNotBytesAndTheJsonRoundTrip) {
  const CharTokenizer tok = CharTokenizer::fit("naïve café — 日本");
  // Sorted code points: ' ', a, c, e, f, n, v, é (U+E9), ï (U+EF), — (U+2014), 日, 本.
  EXPECT_EQ(tok.vocab_size(), 12);
  EXPECT_EQ(tok.encode("café"), (std::vector<int64_t>{2, 1, 4, 7}));
  const std::string text = "日本 café";
  const auto back = tokenizer_from_json(tok.to_json());
  EXPECT_EQ(back->kind(), "char");
  EXPECT_EQ(back->encode(text), tok.encode(text));
  EXPECT_EQ(back->decode(tok.encode(text)), text);
}

TEST(CharTokenizerTest, BadInputNamesWhatAndWhere) {
  const CharTokenizer tok = CharTokenizer::fit("abc\n");
  EXPECT_EQ(error_of<ValueError>([&] { tok.encode("cab!"); }),
            "CharTokenizer: '!' (U+0021) at byte 3 is not in the vocabulary of 4 characters "
            "fitted on the training text");
  EXPECT_EQ(error_of<ValueError>([&] { tok.encode("a\tb"); }),
            "CharTokenizer: U+0009 at byte 1 is not in the vocabulary of 4 characters fitted on "
            "the training text");
  EXPECT_EQ(error_of<ValueError>([&] { tok.encode("ab\xC3"); }),
            "CharTokenizer: the text is not valid UTF-8 at byte 2");
  const std::vector<int64_t> ids{0, 4};
  EXPECT_EQ(error_of<ValueError>([&] { tok.decode(ids); }),
            "CharTokenizer: token id 4 at position 1 is outside the vocabulary [0, 4)");
  EXPECT_EQ(error_of<ValueError>([] { CharTokenizer::fit(""); }),
            "CharTokenizer: cannot fit a vocabulary on an empty text");
  EXPECT_EQ(
      error_of<ValueError>([] { CharTokenizer::fit("ok \xED\xA0\x80"); }),  // a UTF-8 surrogate
      "CharTokenizer: the text is not valid UTF-8 at byte 3");
  EXPECT_EQ(error_of<ValueError>([] {
              CharTokenizer(std::vector<char32_t>{'a', 'b', 'a'});
            }),
            "CharTokenizer: the vocabulary holds 'a' (U+0061) twice");
  EXPECT_EQ(error_of<ValueError>([] {
              tokenizer_from_json({{"kind", "words"}});
            }),
            "tokenizer: unknown kind 'words'; the kinds are char, byte, bpe and unigram");
  EXPECT_EQ(error_of<ValueError>([] { make_tokenizer("words", "x"); }),
            "tokenizer: expected char, byte, bpe:N or unigram:N (N: the vocabulary size). "
            "Received: 'words'");
}

TEST(ByteTokenizerTest, Utf8BytesAndAReplacementForCutCharacters) {
  const ByteTokenizer tok;
  EXPECT_EQ(tok.vocab_size(), 256);
  EXPECT_EQ(tok.encode("é!"), (std::vector<int64_t>{195, 169, 33}));
  const std::vector<int64_t> ids{104, 195, 169, 195};  // "hé" and half of another é
  EXPECT_EQ(tok.decode(ids), "hé\xEF\xBF\xBD");
  EXPECT_EQ(tokenizer_from_json(tok.to_json())->kind(), "byte");
  const std::vector<int64_t> bad{104, 256};
  EXPECT_EQ(error_of<ValueError>([&] { tok.decode(bad); }),
            "ByteTokenizer: token id 256 at position 1 is outside the vocabulary [0, 256)");
}

TEST(ReadTextFileTest, MissingAndEmptyFilesAreClearErrors) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "osprey_text_test";
  std::filesystem::create_directories(dir);
  const std::string empty = (dir / "empty.txt").string();
  std::ofstream(empty).close();
  EXPECT_EQ(error_of<IoError>([&] { read_text_file(empty); }), empty + ": the text file is empty");
  const std::string missing = (dir / "missing.txt").string();
  EXPECT_EQ(error_of<IoError>([&] { read_text_file(missing); }),
            "text file '" + missing + "': no such file");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace osprey::data::text
