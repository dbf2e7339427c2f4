// Expected values from TensorFlow 2.21: tf.fingerprint(s, method="farmhash64") read as a
// little-endian uint64, and tf.strings.to_hash_bucket_strong(s, num_buckets, key).
#include "osprey/data/text/string_hash.h"

#include <gtest/gtest.h>

#include <string>

namespace osprey::data::text {
namespace {

TEST(StringHashTest, Fingerprint64MatchesTensorFlowAtEveryLengthBranch) {
  std::string bytes200;
  for (int i = 0; i < 200; ++i) bytes200.push_back(static_cast<char>(i));
  const std::pair<std::string, uint64_t> cases[] = {
      {"", 11160318154034397263ULL},
      {"a", 12917804110809363939ULL},
      {"ab", 12289600257749001502ULL},
      {"abc", 2640714258260161385ULL},
      {"abcd", 1897425971756105985ULL},
      {"hello", 13009744463427800296ULL},
      {"hello world", 6381520714923946011ULL},
      {"0123456789abcdef", 6105018409752412263ULL},
      {"0123456789abcdefg", 12024047538191061578ULL},
      {"The quick brown fox jumps over the lazy dog", 12375473906752639284ULL},
      {std::string(33, 'x'), 12270365409943098935ULL},
      {std::string(64, 'y'), 4471793200125962424ULL},
      {std::string(65, 'z'), 8299915583762718517ULL},
      {bytes200, 525935771297148851ULL},
      {"日本語", 15681232226066675783ULL},
  };
  for (const auto& [s, want] : cases) EXPECT_EQ(fingerprint64(s), want) << s.size() << " bytes";
  // tf.strings.to_hash_bucket_fast(["hello", "world", "[UNK]"], 1000)
  EXPECT_EQ(fingerprint64("hello") % 1000, 296u);
  EXPECT_EQ(fingerprint64("world") % 1000, 598u);
  EXPECT_EQ(fingerprint64("[UNK]") % 1000, 280u);
}

TEST(StringHashTest, SipHashMatchesTensorFlowsStrongBuckets) {
  constexpr uint64_t kBig = (1ULL << 63) - 1;
  EXPECT_EQ(siphash64("hello", {1, 2}) % 1000, 622u);
  EXPECT_EQ(siphash64("world", {1, 2}) % 1000, 990u);
  EXPECT_EQ(siphash64("", {1, 2}) % 1000, 435u);
  EXPECT_EQ(siphash64(std::string(20, 'a'), {1, 2}) % 1000, 259u);
  EXPECT_EQ(siphash64("hello", {123456789, 987654321}) % kBig, 1841346816425267620ULL);
  EXPECT_EQ(siphash64("world", {123456789, 987654321}) % kBig, 990236804136811889ULL);
  EXPECT_EQ(siphash64("", {123456789, 987654321}) % kBig, 7299653973577703873ULL);
  EXPECT_EQ(siphash64(std::string(20, 'a'), {123456789, 987654321}) % kBig, 1679944444734087910ULL);
}

}  // namespace
}  // namespace osprey::data::text
