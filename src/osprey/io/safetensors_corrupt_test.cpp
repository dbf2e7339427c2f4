// Corrupt, truncated and hostile safetensors files: each must give an IoError that names the
// file and says what is wrong, before anything is allocated for the tensors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "osprey/core/error.h"
#include "osprey/io/io_test_util.h"
#include "osprey/io/safetensors.h"

namespace osprey::io {
namespace {

using testing::TempDir;
using testing::write_bytes;

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i, n >>= 8) s[static_cast<size_t>(i)] = static_cast<char>(n & 0xff);
  return s;
}

// A file from a header and a data section (the header is not padded: readers must not care).
std::string file_of(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

class SafetensorsCorruptTest : public ::testing::Test {
 protected:
  // Loads bytes from a file and returns the IoError message ("" when it loaded).
  std::string load_error(const std::string& bytes) {
    const auto path = dir_ / "bad.safetensors";
    write_bytes(path, bytes);
    try {
      load_safetensors(path);
    } catch (const IoError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(path.string(), 0), 0u) << "the message must start with the file: " << msg;
      return msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an IoError: " << e.what();
      return e.what();
    }
    return "";
  }
  TempDir dir_;
};

#define EXPECT_HAS(msg, text) EXPECT_NE((msg).find(text), std::string::npos) << (msg)

TEST_F(SafetensorsCorruptTest, AFileShorterThanTheHeaderLengthIsTruncated) {
  EXPECT_HAS(load_error(std::string("\x10\0\0", 3)), "too short for the 8-byte header length");
  EXPECT_HAS(load_error(""), "too short");
}

TEST_F(SafetensorsCorruptTest, AHeaderLengthOfOneQuintillionIsRefusedWithoutAllocating) {
  const std::string msg = load_error(le64(1000000000000000000ull) + "{}");
  EXPECT_HAS(msg, "header length 1000000000000000000");
  EXPECT_HAS(msg, "past the end of the file");
}

TEST_F(SafetensorsCorruptTest, AHeaderLongerThanTheLimitIsRefusedEvenWhenTheFileIsThatLong) {
  const auto path = dir_ / "huge.safetensors";
  write_bytes(path, le64(kSafetensorsMaxHeaderBytes + 1) + "{");
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kSafetensorsMaxHeaderBytes + 16)),
            0);  // sparse
  try {
    read_safetensors_header(path);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_HAS(std::string(e.what()), "exceeds the 100000000-byte limit");
  }
}

TEST_F(SafetensorsCorruptTest, InvalidJsonNamesTheHeaderPosition) {
  const std::string msg = load_error(file_of("{\"w\": {\"dtype\": \"F32\",, }}", ""));
  EXPECT_HAS(msg, "header:1:");
  EXPECT_HAS(msg, "invalid JSON");
}

TEST_F(SafetensorsCorruptTest, AHeaderThatIsNotAnObjectIsRefused) {
  EXPECT_HAS(load_error(file_of("[1, 2]  ", "")), "must start with '{'");
  EXPECT_HAS(load_error(file_of("{\"w\": 3}", "")), "field \"w\" must be an object, got integer");
}

TEST_F(SafetensorsCorruptTest, UnknownAndUnsupportedDtypesAreNamed) {
  std::string msg =
      load_error(file_of(R"({"w":{"dtype":"F7","shape":[1],"data_offsets":[0,4]}})", "abcd"));
  EXPECT_HAS(msg, "tensor \"w\"");
  EXPECT_HAS(msg, "unknown dtype \"F7\"");
  msg = load_error(file_of(R"({"w":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}})", "abcd"));
  EXPECT_HAS(msg, "dtype \"I16\" is a safetensors dtype osprey does not support");
}

TEST_F(SafetensorsCorruptTest, OffsetsPastTheEndOfTheFileAreOutOfBounds) {
  const std::string h = R"({"w":{"dtype":"F32","shape":[256],"data_offsets":[0,1024]}})";
  const std::string msg = load_error(file_of(h, std::string(16, 'x')));  // a truncated data section
  EXPECT_HAS(msg, "tensor \"w\"");
  EXPECT_HAS(msg, "data_offsets [0, 1024] out of bounds");
  EXPECT_HAS(msg, fmt::format("file offset {}", 8 + h.size() + 1024));
}

TEST_F(SafetensorsCorruptTest, OverlappingTensorsAreRefused) {
  const std::string msg = load_error(file_of(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
      std::string(12, 'x')));
  EXPECT_HAS(msg, "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\" [0, 8]");
}

TEST_F(SafetensorsCorruptTest, AnEmptyTensorInsideAnotherCountsAsOverlap) {
  EXPECT_HAS(
      load_error(file_of(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
          std::string(8, 'x'))),
      "overlap");
}

TEST_F(SafetensorsCorruptTest, HolesAndTrailingBytesInTheDataSectionAreRefused) {
  EXPECT_HAS(
      load_error(file_of(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
          std::string(20, 'x'))),
      "data bytes [8, 12)");
  EXPECT_HAS(
      load_error(file_of(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "xxyyy")),
      "3 trailing bytes");
}

TEST_F(SafetensorsCorruptTest, AShapeThatDoesNotMatchTheSpanIsASizeMismatch) {
  const std::string msg = load_error(
      file_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, 'x')));
  EXPECT_HAS(msg,
             "tensor \"w\": size mismatch: shape [3] of F32 needs 12 bytes but data_offsets [0, 8] "
             "span 8");
}

TEST_F(SafetensorsCorruptTest, AShapeWhoseSizeOverflowsIsASizeMismatch) {
  EXPECT_HAS(load_error(file_of(
                 R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                 std::string(8, 'x'))),
             "more than 2^64");
}

TEST_F(SafetensorsCorruptTest, DuplicateTensorNamesAreRefused) {
  EXPECT_HAS(
      load_error(file_of(
          R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
          "ab")),
      "duplicate key \"w\"");
}

TEST_F(SafetensorsCorruptTest, MalformedFieldsNameTheTensorAndTheField) {
  EXPECT_HAS(load_error(file_of(R"({"w":{"dtype":"U8","data_offsets":[0,1]}})", "a")),
             "missing required field \"w.shape\"");
  EXPECT_HAS(load_error(file_of(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "a")),
             "field \"w.shape[0]\" must be non-negative, got -1");
  EXPECT_HAS(load_error(file_of(R"({"w":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}})", "a")),
             "field \"w.shape[0]\" must be an integer, got string");
  EXPECT_HAS(load_error(file_of(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", "a")),
             "field \"w.data_offsets\" must be an array [begin, end]");
  EXPECT_HAS(load_error(file_of(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}})", "a")),
             "end before begin");
  EXPECT_HAS(load_error(file_of(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,1]}})", "a")),
             "field \"w.dtype\" must be a string, got integer");
  EXPECT_HAS(load_error(file_of(
                 R"({"w":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", "a")),
             "9 dimensions");
}

TEST_F(SafetensorsCorruptTest, MetadataMustMapStringsToStrings) {
  EXPECT_HAS(load_error(file_of(R"({"__metadata__":{"epoch":3}})", "")),
             "field \"__metadata__.epoch\" must be a string, got integer");
  EXPECT_HAS(load_error(file_of(R"({"__metadata__":[1]})", "")), "must be an object of strings");
  EXPECT_HAS(load_error(file_of(R"({"__metadata__":{"osprey.crc32c":"xyz"}})", "")),
             "8 hex digits");
  EXPECT_EQ(load_error(file_of(R"({"__metadata__":null})", "")), "");  // null is accepted
}

TEST_F(SafetensorsCorruptTest, BoolBytesOtherThanZeroAndOneAreRefused) {
  EXPECT_HAS(load_error(file_of(R"({"f":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                std::string("\x01\x00\x02", 3))),
             "BOOL byte at file offset");
}

TEST_F(SafetensorsCorruptTest, InMemoryBytesAreCheckedTheSameWay) {
  try {
    deserialize_safetensors(le64(1000000000000000000ull) + "{}", "blob");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_HAS(std::string(e.what()), "blob: header length 1000000000000000000");
  }
}

}  // namespace
}  // namespace osprey::io
