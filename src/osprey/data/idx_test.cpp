#include "osprey/data/idx.h"

#include <gtest/gtest.h>

#include "osprey/data/files_test.h"
#include "osprey/tensor/factory.h"

namespace osprey::data {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;
using testing::write_gzip;
using Bytes = std::vector<unsigned char>;

Tensor small_images(int64_t n) {
  std::vector<uint8_t> v;
  for (int64_t i = 0; i < n * 3 * 4; ++i) v.push_back(static_cast<uint8_t>((i * 37 + 11) % 256));
  return from_vector(v, {n, 3, 4});
}

// Bytes that deflate cannot shrink much (an LCG), so a cut gzip file really loses data.
Tensor noisy_images(int64_t n) {
  std::vector<uint8_t> v;
  uint32_t state = 12345;
  for (int64_t i = 0; i < n * 3 * 4; ++i) {
    state = state * 1664525u + 1013904223u;
    v.push_back(static_cast<uint8_t>(state >> 24));
  }
  return from_vector(v, {n, 3, 4});
}

// The message of the IoError that fn throws ("" when it throws none).
template <class Fn>
std::string io_error(Fn&& fn) {
  try {
    fn();
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& s, const std::string& part) {
  EXPECT_NE(s.find(part), std::string::npos) << "'" << part << "' not in: " << s;
}

TEST(IdxTest, RawRoundTripKeepsShapeTypeAndValues) {
  TempDir dir;
  const Tensor images = small_images(5);
  write_idx(dir / "images.idx", images);
  const Bytes bytes = read_bytes(dir / "images.idx");
  ASSERT_EQ(bytes.size(), 16u + 60u);
  EXPECT_EQ((Bytes{bytes.begin(), bytes.begin() + 8}), (Bytes{0, 0, 8, 3, 0, 0, 0, 5}));
  const Tensor back = read_idx(dir / "images.idx");
  EXPECT_EQ(back.dtype(), DType::uint8);
  EXPECT_EQ(back.shape(), (Shape{5, 3, 4}));
  EXPECT_EQ(back.to_vector<uint8_t>(), images.to_vector<uint8_t>());
}

TEST(IdxTest, GzipRoundTripIsDetectedByContentNotName) {
  TempDir dir;
  const Tensor labels = from_vector<uint8_t>({9, 0, 0, 3, 0, 2, 7});
  write_idx(dir / "labels.bin", labels, {.gzip = true});
  const Bytes bytes = read_bytes(dir / "labels.bin");
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(bytes[0], 0x1f);
  EXPECT_EQ(bytes[1], 0x8b);
  const Tensor back = read_idx(dir / "labels.bin");
  EXPECT_EQ(back.shape(), (Shape{7}));
  EXPECT_EQ(back.to_vector<uint8_t>(), labels.to_vector<uint8_t>());
}

TEST(IdxTest, MultiByteTypesAreBigEndianOnDisk) {
  TempDir dir;
  const Tensor f = from_vector<float>({1.5f, -2.0f, 3.25f, 1e-3f}, {2, 2});
  const Tensor i = from_vector<int32_t>({1, -2, 70000});
  const Tensor d = from_vector<double>({0.1, -7.5});
  write_idx(dir / "f.idx", f);
  write_idx(dir / "i.idx.gz", i, {.gzip = true});
  write_idx(dir / "d.idx", d);
  EXPECT_EQ(read_bytes(dir / "f.idx")[2], 0x0D);
  const Bytes ib = read_bytes(dir / "d.idx");
  EXPECT_EQ(ib[2], 0x0E);
  EXPECT_EQ(read_idx(dir / "f.idx").to_vector<float>(), f.to_vector<float>());
  EXPECT_EQ(read_idx(dir / "i.idx.gz").to_vector<int32_t>(), i.to_vector<int32_t>());
  EXPECT_EQ(read_idx(dir / "d.idx").to_vector<double>(), d.to_vector<double>());
  // 1 as big-endian int32 is 00 00 00 01, right after the 8-byte header.
  write_idx(dir / "i.idx", i);
  const Bytes raw = read_bytes(dir / "i.idx");
  EXPECT_EQ((Bytes{raw.begin() + 8, raw.begin() + 12}), (Bytes{0, 0, 0, 1}));
}

TEST(IdxTest, Int16WidensToInt32) {
  TempDir dir;
  write_bytes(dir / "s.idx", {0, 0, 0x0B, 1, 0, 0, 0, 3, 0x00, 0x05, 0xFF, 0xFE, 0x7F, 0xFF});
  const Tensor t = read_idx(dir / "s.idx");
  EXPECT_EQ(t.dtype(), DType::int32);
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{5, -2, 32767}));
}

TEST(IdxTest, BadMagicNamesFileOffsetAndValue) {
  TempDir dir;
  write_bytes(dir / "bad.idx", {0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0});
  const std::string msg = io_error([&] { read_idx(dir / "bad.idx"); });
  expect_contains(msg, "IDX file '" + dir / "bad.idx" + "'");
  expect_contains(msg, "bad magic 0x12345678 at byte offset 0");
  write_bytes(dir / "type.idx", {0, 0, 0x07, 1, 0, 0, 0, 0});
  expect_contains(io_error([&] { read_idx(dir / "type.idx"); }),
                  "unknown element type code 0x07 at byte offset 2");
  write_bytes(dir / "dims.idx", {0, 0, 0x08, 0});
  expect_contains(io_error([&] { read_idx(dir / "dims.idx"); }), "0 dimensions at byte offset 3");
}

TEST(IdxTest, TruncatedHeaderGivesTheOffsetWhereItEnds) {
  TempDir dir;
  write_bytes(dir / "short.idx", {0, 0});
  expect_contains(io_error([&] { read_idx(dir / "short.idx"); }),
                  "truncated header at byte offset 2");
  write_bytes(dir / "dims.idx", {0, 0, 8, 3, 0, 0, 0, 5, 0, 0});
  expect_contains(io_error([&] { read_idx(dir / "dims.idx"); }),
                  "truncated header at byte offset 10: magic 0x00000803 announces 3 dimensions");
}

TEST(IdxTest, TruncatedRawDataIsCaughtFromTheFileSize) {
  TempDir dir;
  write_idx(dir / "images.idx", small_images(5));
  Bytes b = read_bytes(dir / "images.idx");
  b.resize(b.size() - 7);
  write_bytes(dir / "images.idx", b);
  expect_contains(
      io_error([&] { read_idx(dir / "images.idx"); }),
      "dims [5, 3, 4] of ubyte claim 60 bytes of data after the 16-byte header, but the "
      "file has 53 (truncated, or a corrupt header; the data should end at byte offset 76, "
      "the file ends at 69)");
}

TEST(IdxTest, TrailingBytesInARawFileAreAnError) {
  TempDir dir;
  write_bytes(dir / "l.idx", {0, 0, 8, 1, 0, 0, 0, 2, 1, 2, 3});
  expect_contains(io_error([&] { read_idx(dir / "l.idx"); }), "but the file has 3 (trailing bytes");
}

TEST(IdxTest, HugeClaimedSizeFailsBeforeAllocating) {
  TempDir dir;
  // 1e12 elements: [1000000, 1000000] of ubyte, in a 12-byte raw file and in a tiny gzip file.
  const Bytes header{0, 0, 8, 2, 0, 0x0F, 0x42, 0x40, 0, 0x0F, 0x42, 0x40};
  write_bytes(dir / "huge.idx", header);
  expect_contains(
      io_error([&] { read_idx(dir / "huge.idx"); }),
      "dims [1000000, 1000000] of ubyte claim 1000000000000 bytes of data after the 12-byte "
      "header, but the file has 0");
  write_gzip(dir / "huge.idx.gz", header);
  expect_contains(
      io_error([&] { read_idx(dir / "huge.idx.gz"); }),
      "claim 1000000000000 bytes of data after the 12-byte header, more than a gzip file of");
  // Dims whose product overflows 64 bits.
  write_bytes(dir / "overflow.idx", {0, 0, 0x0E, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                     0xFF, 0xFF, 0xFF, 0xFF});
  expect_contains(io_error([&] { read_idx(dir / "overflow.idx"); }),
                  "claim 18446744073709551615 bytes");
}

TEST(IdxTest, TruncatedGzipDataGivesTheDecompressedOffset) {
  TempDir dir;
  // A complete gzip stream whose header claims more rows than it holds.
  Bytes content{0, 0, 8, 3, 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0, 4};
  for (int i = 0; i < 40; ++i) content.push_back(static_cast<unsigned char>(i));
  write_gzip(dir / "short.gz", content);
  expect_contains(
      io_error([&] { read_idx(dir / "short.gz"); }),
      "truncated data: it ends at decompressed byte offset 56, but dims [5, 3, 4] need 60 "
      "bytes of data after the 16-byte header (the data should end at offset 76)");
  // A gzip file cut in the middle of its stream.
  write_idx(dir / "cut.gz", noisy_images(200), {.gzip = true});
  Bytes b = read_bytes(dir / "cut.gz");
  b.resize(b.size() / 2);
  write_bytes(dir / "cut.gz", b);
  expect_contains(io_error([&] { read_idx(dir / "cut.gz"); }), "the gzip stream is truncated");
}

TEST(IdxTest, CorruptGzipStreamIsAnIoError) {
  TempDir dir;
  write_idx(dir / "c.gz", noisy_images(200), {.gzip = true});
  Bytes b = read_bytes(dir / "c.gz");
  for (size_t i = 20; i < 40; ++i) b[i] ^= 0x5A;
  write_bytes(dir / "c.gz", b);
  const std::string msg = io_error([&] { read_idx(dir / "c.gz"); });
  EXPECT_FALSE(msg.empty());
  expect_contains(msg, "IDX file '" + dir / "c.gz" + "'");
}

TEST(IdxTest, MissingFileIsAnIoErrorNamingIt) {
  expect_contains(io_error([] { read_idx("/nonexistent/dir/x.idx"); }),
                  "'/nonexistent/dir/x.idx': no such file");
}

TEST(IdxTest, WriteRejectsTypesIdxCannotHold) {
  TempDir dir;
  EXPECT_THROW(write_idx(dir / "x.idx", from_vector<int64_t>({1, 2})), ValueError);
}

TEST(IdxTest, IdxDatasetStreamsRecordsOfSeveralFilesInStep) {
  TempDir dir;
  const Tensor images = small_images(2500);  // more than one read block
  std::vector<uint8_t> lv;
  for (int i = 0; i < 2500; ++i) lv.push_back(static_cast<uint8_t>(i % 10));
  write_idx(dir / "images.gz", images, {.gzip = true});
  write_idx(dir / "labels", from_vector(lv));
  Dataset ds = idx_dataset({dir / "images.gz", dir / "labels"});
  EXPECT_EQ(ds.cardinality(), 2500);
  for (int epoch = 0; epoch < 2; ++epoch) {
    int64_t i = 0;
    std::vector<uint8_t> all;
    for (auto& e : ds) {
      EXPECT_EQ(e[0].shape(), (Shape{3, 4}));
      EXPECT_EQ(e[1].item(), static_cast<double>(i % 10));
      for (uint8_t v : e[0].to_vector<uint8_t>()) all.push_back(v);
      ++i;
    }
    EXPECT_EQ(i, 2500);
    EXPECT_EQ(all, images.to_vector<uint8_t>());
  }
  const auto batches = ds.batch(1000).prefetch(2);
  int64_t rows = 0;
  for (auto& b : batches) rows += b[0].size(0);
  EXPECT_EQ(rows, 2500);
}

TEST(IdxTest, IdxDatasetChecksHeadersAndLengthsUpFront) {
  TempDir dir;
  write_idx(dir / "a", small_images(4));
  write_idx(dir / "b", from_vector<uint8_t>({1, 2, 3}));
  expect_contains(io_error([&] {
                    idx_dataset({dir / "a", dir / "b"});
                  }),
                  "the files differ in length");
  write_bytes(dir / "bad", {1, 2, 3, 4});
  expect_contains(io_error([&] { idx_dataset({dir / "bad"}); }), "bad magic 0x01020304");
}

}  // namespace
}  // namespace osprey::data
