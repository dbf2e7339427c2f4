#include "osprey/io/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace osprey::io {
namespace {

TEST(Crc32cTest, MatchesTheStandardCheckValueFor123456789) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(detail::crc32c_software("123456789", 9, 0), 0xE3069283u);
}

TEST(Crc32cTest, OfNoBytesIsZero) { EXPECT_EQ(crc32c("", 0), 0u); }

// RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32cTest, MatchesTheIscsiTestVectors) {
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0'), down(32, '\0');
  for (int i = 0; i < 32; ++i) {
    up[static_cast<size_t>(i)] = static_cast<char>(i);
    down[static_cast<size_t>(i)] = static_cast<char>(31 - i);
  }
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down), 0x113FDB5Cu);
}

TEST(Crc32cTest, HardwareAndSoftwarePathsAgreeOnEveryLengthAndAlignment) {
  std::mt19937 gen(7);
  std::vector<unsigned char> buf(600);
  for (auto& b : buf) b = static_cast<unsigned char>(gen());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; start + n <= buf.size(); n += 1 + n / 8) {
      const uint32_t sw = detail::crc32c_software(buf.data() + start, n, 0x12345678u);
      EXPECT_EQ(detail::crc32c_hardware(buf.data() + start, n, 0x12345678u), sw)
          << start << " " << n;
      EXPECT_EQ(crc32c(buf.data() + start, n, 0x12345678u), sw);
    }
  }
}

TEST(Crc32cTest, ExtendingInPiecesEqualsOneCallOverTheWhole) {
  std::string s(1000, '\0');
  std::mt19937 gen(3);
  for (char& c : s) c = static_cast<char>(gen());
  const uint32_t whole = crc32c(s);
  for (size_t cut :
       {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{500}, size_t{999}, size_t{1000}}) {
    const uint32_t a = crc32c(s.data(), cut);
    EXPECT_EQ(crc32c(s.data() + cut, s.size() - cut, a), whole) << cut;
  }
}

TEST(Crc32cTest, DetectsASingleFlippedBit) {
  std::string s(4096, 'x');
  const uint32_t before = crc32c(s);
  s[1234] ^= 0x10;
  EXPECT_NE(crc32c(s), before);
}

}  // namespace
}  // namespace osprey::io
