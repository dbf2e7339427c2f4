// Every expected value below was printed by Keras 3.15.1 (TensorFlow 2.21 backend) for the same
// input: keras.layers.TextVectorization(...).adapt(texts), get_vocabulary(), and the call.
#include "osprey/data/text/text_vectorization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"

namespace osprey::data::text {
namespace {

using Strings = std::vector<std::string>;

const Strings kTexts = {"The cat sat.", "the DOG sat!", "a cat, a dog; a bird?", "Zebra"};

using osprey::testing::error_of;

std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }
std::vector<float> floats(const Tensor& t) { return t.to_vector<float>(); }

TEST(TextVectorizationTest, AdaptOrdersByCountThenTokenDescending) {
  TextVectorization tv;
  tv.adapt(kTexts);
  EXPECT_EQ(tv.get_vocabulary(),
            (Strings{"", "[UNK]", "a", "the", "sat", "dog", "cat", "zebra", "bird"}));
  EXPECT_EQ(tv.vocabulary_size(), 9);
  const Tensor x = tv(kTexts);
  EXPECT_EQ(x.dtype(), DType::int64);
  EXPECT_EQ(x.shape(), (Shape{4, 6}));  // padded to the longest text
  EXPECT_EQ(ints(x), (std::vector<int64_t>{3, 6, 4, 0, 0, 0, 3, 5, 4, 0, 0, 0,  //
                                           2, 6, 2, 5, 2, 8, 7, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ints(tv({"the cow", ""})), (std::vector<int64_t>{3, 1, 0, 0}));  // OOV = 1
  // Ties in count go to the larger token: c, b, a (2 each), then d.
  TextVectorization ties;
  ties.adapt({"b a c", "B A C d"});
  EXPECT_EQ(ties.get_vocabulary(), (Strings{"", "[UNK]", "c", "b", "a", "d"}));
  EXPECT_EQ(ties.get_vocabulary(false), (Strings{"c", "b", "a", "d"}));
}

TEST(TextVectorizationTest, MaxTokensAndOutputSequenceLengthCutAndPad) {
  TextVectorization tv({.max_tokens = 5, .output_sequence_length = 3});
  tv.adapt(kTexts);
  EXPECT_EQ(tv.get_vocabulary(), (Strings{"", "[UNK]", "a", "the", "sat"}));
  const Tensor x = tv(kTexts);
  EXPECT_EQ(x.shape(), (Shape{4, 3}));
  EXPECT_EQ(ints(x), (std::vector<int64_t>{3, 1, 4, 3, 1, 4, 2, 1, 2, 1, 0, 0}));
}

TEST(TextVectorizationTest, NgramsAreAllUnigramsThenAllBigrams) {
  TextVectorization tv({.ngrams = 2});
  tv.adapt({"a b c", "b c d"});
  EXPECT_EQ(tv.get_vocabulary(), (Strings{"", "[UNK]", "c", "b c", "b", "d", "c d", "a b", "a"}));
  EXPECT_EQ(tv.tokens("a b c d"), (Strings{"a", "b", "c", "d", "a b", "b c", "c d"}));
  EXPECT_EQ(ints(tv({"a b c d"})), (std::vector<int64_t>{8, 4, 2, 5, 7, 3, 6}));
}

TEST(TextVectorizationTest, MultiHotAndCountPutOovAtIndexZero) {
  TextVectorization multi({.output_mode = "multi_hot"});
  multi.adapt(kTexts);
  EXPECT_EQ(multi.get_vocabulary(),
            (Strings{"[UNK]", "a", "the", "sat", "dog", "cat", "zebra", "bird"}));
  const Tensor m = multi({"a a cat zz", "dog"});
  EXPECT_EQ(m.dtype(), DType::float32);
  EXPECT_EQ(m.shape(), (Shape{2, 8}));
  EXPECT_EQ(floats(m), (std::vector<float>{1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}));

  TextVectorization count({.max_tokens = 10, .output_mode = "count", .pad_to_max_tokens = true});
  count.adapt(kTexts);
  const Tensor c = count({"a a cat zz zz", "dog"});
  EXPECT_EQ(c.shape(), (Shape{2, 10}));
  EXPECT_EQ(floats(c), (std::vector<float>{2, 2, 0, 0, 0, 1, 0, 0, 0, 0,  //
                                           0, 0, 0, 0, 1, 0, 0, 0, 0, 0}));
}

TEST(TextVectorizationTest, TfIdfUsesKerasIdfAndTheMeanForOov) {
  TextVectorization tv({.output_mode = "tf_idf"});
  tv.adapt(kTexts);
  // idf = log(1 + 4 / (1 + df)): "a" is in 1 of 4 texts, "the" in 2; OOV gets the mean.
  const float a = std::log(1.0f + 4.0f / 2.0f), the = std::log(1.0f + 4.0f / 3.0f);
  const float oov = (3 * a + 4 * the) / 7;
  EXPECT_FLOAT_EQ(a, 1.0986123085021973f);
  EXPECT_FLOAT_EQ(the, 0.8472978472709656f);
  EXPECT_FLOAT_EQ(oov, 0.955004096031189f);
  const std::vector<float> got = floats(tv({"a a cat zz", "dog"}));
  const std::vector<float> want = {0.955004096031189f,
                                   2.1972246170043945f,
                                   0,
                                   0,
                                   0,
                                   0.8472978472709656f,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0.8472978472709656f,
                                   0,
                                   0,
                                   0};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << i;

  TextVectorization given(
      {.output_mode = "tf_idf", .vocabulary = {"cat", "dog"}, .idf_weights = {0.5f, 2.0f}});
  EXPECT_EQ(given.get_vocabulary(), (Strings{"[UNK]", "cat", "dog"}));
  EXPECT_EQ(floats(given({"dog cat cat bird"})), (std::vector<float>{1.25f, 1.0f, 2.0f}));
}

TEST(TextVectorizationTest, StandardizeIsAsciiOnlyAsTensorFlows) {
  const std::string text = "Hello, World! hello world ÀB àb";
  TextVectorization lower({.standardize = "lower"});
  lower.adapt({text});
  EXPECT_EQ(lower.get_vocabulary(),
            (Strings{"", "[UNK]", "àb", "Àb", "world!", "world", "hello,", "hello"}));
  TextVectorization strip({.standardize = "strip_punctuation"});
  strip.adapt({text});
  EXPECT_EQ(strip.get_vocabulary(),
            (Strings{"", "[UNK]", "àb", "ÀB", "world", "hello", "World", "Hello"}));
  TextVectorization none({.standardize = std::nullopt});
  none.adapt({text});
  EXPECT_EQ(none.get_vocabulary(),
            (Strings{"", "[UNK]", "àb", "ÀB", "world", "hello", "World!", "Hello,"}));
  // ASCII whitespace splits; U+00A0 does not.
  TextVectorization ws({.standardize = std::nullopt});
  ws.adapt({"  a\tb\nc\vd\fe\rf  g\u00a0h"});
  EXPECT_EQ(ws.get_vocabulary(), (Strings{"", "[UNK]", "g\u00a0h", "f", "e", "d", "c", "b", "a"}));
}

TEST(TextVectorizationTest, CharacterAndNoSplit) {
  TextVectorization chars({.standardize = std::nullopt, .split = "character"});
  chars.adapt({"abca", "日本"});
  EXPECT_EQ(chars.get_vocabulary(), (Strings{"", "[UNK]", "a", "本", "日", "c", "b"}));
  EXPECT_EQ(ints(chars({"ab日x"})), (std::vector<int64_t>{2, 6, 4, 1}));

  TextVectorization whole({.split = std::nullopt});
  whole.adapt({"Hello World", "hello world", "b"});
  EXPECT_EQ(whole.get_vocabulary(), (Strings{"", "[UNK]", "hello world", "b"}));
  const Tensor x = whole({"HELLO WORLD", "x"});
  EXPECT_EQ(x.shape(), (Shape{2, 1}));  // Keras: [2]
  EXPECT_EQ(ints(x), (std::vector<int64_t>{2, 1}));
}

TEST(TextVectorizationTest, GivenVocabularyAndTheJsonRoundTrip) {
  TextVectorization given({.vocabulary = {"cat", "dog"}});
  EXPECT_EQ(given.get_vocabulary(), (Strings{"", "[UNK]", "cat", "dog"}));
  EXPECT_EQ(given.vocabulary_size(), 4);
  EXPECT_EQ(ints(given({"dog cat bird", "cat"})), (std::vector<int64_t>{3, 2, 1, 2, 0, 0}));
  EXPECT_EQ(error_of<ValueError>([&] { given.adapt(kTexts); }),
            "TextVectorization: cannot adapt after a vocabulary was given (the vocabulary "
            "option or set_vocabulary)");

  TextVectorization tv(
      {.max_tokens = 6, .ngrams = 2, .output_mode = "tf_idf", .pad_to_max_tokens = true});
  tv.adapt(kTexts);
  const std::string path = ::testing::TempDir() + "/osprey_text_vectorization.json";
  tv.save(path);
  const TextVectorization back = TextVectorization::load(path);
  std::filesystem::remove(path);
  EXPECT_EQ(back.get_vocabulary(), tv.get_vocabulary());
  EXPECT_EQ(back.to_json(), tv.to_json());
  const Strings probe = {"the cat sat on a dog", "zebra"};
  EXPECT_EQ(floats(back(probe)), floats(tv(probe)));
  EXPECT_EQ(back(probe).shape(), (Shape{2, 6}));
  EXPECT_EQ(error_of<IoError>([] { TextVectorization::load("/nonexistent/tv.json"); }),
            "TextVectorization: cannot open '/nonexistent/tv.json'");
}

TEST(TextVectorizationTest, BadOptionsNameTheFieldAndTheChoices) {
  EXPECT_EQ(error_of<ValueError>([] { TextVectorization({.output_mode = "onehot"}); }),
            "TextVectorization: output_mode must be one of \"int\", \"multi_hot\", \"count\", "
            "\"tf_idf\". Received: output_mode=\"onehot\"");
  EXPECT_EQ(error_of<ValueError>([] { TextVectorization({.max_tokens = 1}); }),
            "TextVectorization: max_tokens must be greater than 1 (it counts the mask and OOV "
            "indices). Received: max_tokens=1");
  EXPECT_EQ(error_of<ValueError>([] { TextVectorization({.standardize = "upper"}); }),
            "TextVectorization: standardize must be one of \"lower_and_strip_punctuation\", "
            "\"lower\", \"strip_punctuation\" or none. Received: standardize=\"upper\"");
  EXPECT_EQ(error_of<ValueError>([] { TextVectorization({.split = "comma"}); }),
            "TextVectorization: split must be one of \"whitespace\", \"character\" or none. "
            "Received: split=\"comma\"");
  EXPECT_EQ(error_of<ValueError>(
                [] { TextVectorization({.output_mode = "count", .output_sequence_length = 4}); }),
            "TextVectorization: output_sequence_length is only for output_mode \"int\". "
            "Received: output_mode=\"count\"");
  EXPECT_EQ(error_of<ValueError>([] { TextVectorization({.pad_to_max_tokens = true}); }),
            "TextVectorization: pad_to_max_tokens=true needs max_tokens. Received: max_tokens "
            "unset");
  EXPECT_EQ(error_of<ValueError>([] {
              TextVectorization({.vocabulary = {"a", "b", "a"}});
            }),
            "TextVectorization: the vocabulary repeats terms: [\"a\"]");
  EXPECT_EQ(error_of<ValueError>([] {
              TextVectorization({.max_tokens = 3, .vocabulary = {"a", "b"}});
            }),
            "TextVectorization: the vocabulary (4 indices with the reserved ones) is larger "
            "than max_tokens=3");
  TextVectorization tv;
  EXPECT_EQ(error_of<ValueError>([&] { tv.adapt({}); }),
            "TextVectorization: adapt needs at least one text. Received: 0 texts");
  EXPECT_EQ(error_of<ValueError>([&] {
              tv.adapt({"", " ...", "!"});
            }),
            "TextVectorization: adapt found no tokens in 3 documents");
  TextVectorization multi({.output_mode = "multi_hot"});
  EXPECT_EQ(error_of<ValueError>([&] { multi({"a"}); }),
            "TextVectorization: output_mode \"multi_hot\" needs a vocabulary first (adapt, or "
            "the vocabulary option), or pad_to_max_tokens with max_tokens");
}

}  // namespace
}  // namespace osprey::data::text
