#include "osprey/io/safetensors.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include "osprey/core/error.h"
#include "osprey/io/io_test_util.h"
#include "osprey/tensor/factory.h"

namespace osprey::io {
namespace {

using testing::random_bits_tensor;
using testing::read_bytes;
using testing::TempDir;
using testing::tensor_bytes;
using testing::write_bytes;

constexpr DType kAllDTypes[] = {DType::float64, DType::float32,       DType::bfloat16,
                                DType::float16, DType::float8_e4m3fn, DType::float8_e5m2,
                                DType::int8,    DType::uint8,         DType::int32,
                                DType::int64,   DType::boolean};

void expect_same(const Tensor& got, const Tensor& want, const std::string& name) {
  EXPECT_EQ(got.dtype(), want.dtype()) << name;
  EXPECT_EQ(got.shape(), want.shape()) << name;
  // Tensor::is_contiguous() reports false for some zero-element shapes ([2, 0, 3]); only the
  // layout of tensors with elements matters here.
  if (want.numel() > 0) {
    EXPECT_TRUE(got.is_contiguous()) << name;
  }
  EXPECT_EQ(tensor_bytes(got), tensor_bytes(want)) << name;
}

TEST(SafetensorsTest, EveryDtypeRoundTripsBitForBit) {
  TempDir dir;
  NamedTensors in;
  uint32_t seed = 1;
  for (DType d : kAllDTypes) {
    in.emplace_back(std::string("t_") + std::string(safetensors_dtype_code(d)),
                    random_bits_tensor(d, {3, 5}, seed++));
  }
  save_safetensors(dir / "all.safetensors", in);
  const SafetensorsFile f = load_safetensors(dir / "all.safetensors");
  ASSERT_EQ(f.size(), in.size());
  EXPECT_TRUE(f.checksum_verified);
  for (const auto& [name, t] : in) expect_same(f.at(name), t, name);
  EXPECT_TRUE(f.metadata.empty());  // the checksum key is hidden
}

TEST(SafetensorsTest, NonContiguousTensorsAreWrittenContiguous) {
  TempDir dir;
  const Tensor base = random_bits_tensor(DType::float32, {4, 6}, 9);
  NamedTensors in = {{"transposed", base.transpose(0, 1)},
                     {"strided", base.slice(1, 0, 6, 2)},
                     {"expanded", base.select(0, 1).unsqueeze(0).expand({3, 6})}};
  for (const auto& [n, t] : in) ASSERT_FALSE(t.is_contiguous()) << n;
  save_safetensors(dir / "v.safetensors", in);
  const SafetensorsFile f = load_safetensors(dir / "v.safetensors");
  for (const auto& [name, t] : in) expect_same(f.at(name), t.contiguous(), name);
}

TEST(SafetensorsTest, MetadataRoundTrips) {
  TempDir dir;
  const SafetensorsMetadata meta = {
      {"format", "pt"}, {"osprey.version", "0.1"}, {"note", "ünï \"q\""}};
  save_safetensors(dir / "m.safetensors", {{"w", ones({2})}}, meta);
  EXPECT_EQ(load_safetensors(dir / "m.safetensors").metadata, meta);
  EXPECT_EQ(read_safetensors_header(dir / "m.safetensors").metadata, meta);
}

TEST(SafetensorsTest, EmptyTensorsScalarsAndEmptyFilesRoundTrip) {
  TempDir dir;
  const Tensor scalar = from_vector<double>({3.25}, Shape{});
  ASSERT_EQ(scalar.ndim(), 0);
  NamedTensors in = {{"scalar", scalar},
                     {"empty", Tensor::empty({0}, {DType::float32})},
                     {"empty3d", Tensor::empty({2, 0, 3}, {DType::int64})},
                     {"flag", from_vector<bool>({true}, Shape{})}};
  save_safetensors(dir / "e.safetensors", in);
  const SafetensorsFile f = load_safetensors(dir / "e.safetensors");
  for (const auto& [name, t] : in) expect_same(f.at(name), t, name);
  EXPECT_EQ(f.at("scalar").item(), 3.25);

  save_safetensors(dir / "none.safetensors", {});
  EXPECT_EQ(load_safetensors(dir / "none.safetensors").size(), 0u);
}

// The byte strings of the reference implementation's own tests (safetensors/src/tensor.rs).
TEST(SafetensorsTest, MatchesTheReferenceWriterByteForByte) {
  const Tensor x = from_vector<float>({0, 1, 2, 3, 4, 5}, {1, 2, 3});
  std::string data(24, '\0');
  std::memcpy(data.data(), x.raw_data(), 24);
  const std::string h1 = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  EXPECT_EQ(serialize_safetensors({{"attn.0", x}}, {}, {.checksum = false}),
            std::string("\x40\0\0\0\0\0\0\0", 8) + h1 + data);
  const std::string h2 = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  EXPECT_EQ(serialize_safetensors({{"attn0", x.reshape({1, 1, 2, 3})}}, {}, {.checksum = false}),
            std::string("\x48\0\0\0\0\0\0\0", 8) + h2 + "       " + data);
  EXPECT_EQ(serialize_safetensors({}, {}, {.checksum = false}),
            std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  EXPECT_EQ(
      serialize_safetensors({}, {{"framework", "pt"}}, {.checksum = false}),
      std::string("\x28\0\0\0\0\0\0\0", 8) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

TEST(SafetensorsTest, WriterOrdersByDescendingAlignmentThenNameSoDataIsAligned) {
  NamedTensors in = {{"b_u8", random_bits_tensor(DType::uint8, {3}, 1)},
                     {"a_f32", random_bits_tensor(DType::float32, {3}, 2)},
                     {"z_i64", random_bits_tensor(DType::int64, {1}, 3)},
                     {"c_f32", random_bits_tensor(DType::float32, {1}, 4)},
                     {"h_bf16", random_bits_tensor(DType::bfloat16, {1}, 5)},
                     {"d_f64", random_bits_tensor(DType::float64, {2}, 6)}};
  const std::string bytes = serialize_safetensors(in);
  const SafetensorsFile f = deserialize_safetensors(bytes);
  std::vector<std::string> order;
  for (const auto& [n, t] : f.tensors) order.push_back(n);
  EXPECT_EQ(order,
            (std::vector<std::string>{"z_i64", "d_f64", "a_f32", "c_f32", "h_bf16", "b_u8"}));
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(SafetensorsTest, HeaderCanBeReadWithoutTheData) {
  TempDir dir;
  save_safetensors(dir / "h.safetensors",
                   {{"k", zeros({4, 8})}, {"b", zeros({8}, {DType::int32})}});
  const SafetensorsHeader h = read_safetensors_header(dir / "h.safetensors");
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "k");  // F32 before I32, as the reference orders them
  EXPECT_TRUE(h.checksum.has_value());
  EXPECT_EQ(h.data_bytes, 4u * 8 * 4 + 8 * 4);
  EXPECT_EQ(h.data_offset + h.data_bytes, std::filesystem::file_size(dir / "h.safetensors"));
}

TEST(SafetensorsTest, AFlippedDataBitFailsTheChecksum) {
  TempDir dir;
  save_safetensors(dir / "c.safetensors", {{"w", random_bits_tensor(DType::float32, {64}, 3)}});
  std::string bytes = read_bytes(dir / "c.safetensors");
  bytes[bytes.size() - 10] ^= 0x01;
  write_bytes(dir / "c.safetensors", bytes);
  try {
    load_safetensors(dir / "c.safetensors");
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  const SafetensorsFile f = load_safetensors(dir / "c.safetensors", {.verify_checksum = false});
  EXPECT_FALSE(f.checksum_verified);
}

TEST(SafetensorsTest, SaveRejectsBadNamesWithValueError) {
  TempDir dir;
  const Tensor t = ones({1});
  EXPECT_THROW(save_safetensors(dir / "x", {{"a", t}, {"a", t}}), ValueError);
  EXPECT_THROW(save_safetensors(dir / "x", {{"", t}}), ValueError);
  EXPECT_THROW(save_safetensors(dir / "x", {{"__metadata__", t}}), ValueError);
  EXPECT_THROW(
      save_safetensors(dir / "x", {{"a", t}}, {{std::string(kSafetensorsChecksumKey), "0"}}),
      ValueError);
  EXPECT_THROW(save_safetensors(dir / "x", {{"a", Tensor()}}), ValueError);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(SafetensorsTest, LookingUpAMissingTensorNamesIt) {
  const SafetensorsFile f = deserialize_safetensors(serialize_safetensors({{"kernel", ones({1})}}));
  EXPECT_EQ(f.find("bias"), nullptr);
  try {
    f.at("bias");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("\"bias\""), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("kernel"), std::string::npos);
  }
}

// A real I/O failure mid-write: the file-size limit makes write(2) fail with EFBIG part way.
TEST(SafetensorsTest, AWriteFailureMidSaveKeepsTheOldFileAndRemovesTheTemporary) {
  TempDir dir;
  save_safetensors(dir / "model.safetensors", {{"w", ones({4})}});
  const std::string old = read_bytes(dir / "model.safetensors");

  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 1 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string what;
  try {
    save_safetensors(dir / "model.safetensors", {{"w", zeros({1 << 20})}});  // 4 MiB
  } catch (const IoError& e) {
    what = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_NE(what.find("File too large"), std::string::npos) << what;
  EXPECT_NE(what.find("model.safetensors"), std::string::npos) << what;
  EXPECT_EQ(read_bytes(dir / "model.safetensors"), old);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.safetensors"});
}

}  // namespace
}  // namespace osprey::io
