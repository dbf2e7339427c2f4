// The .npy reader against files numpy writes (every dtype osprey reads, format versions 1.0, 2.0
// and 3.0, a 0-d and an empty array), the arrays it refuses (fortran_order, big-endian, other
// dtypes), and hostile files: bad magic, truncated headers, a shape whose size overflows, data
// shorter than the shape, each refused before anything is allocated for it.
#include "osprey/data/npy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"
#include "osprey/data/files_test.h"

namespace osprey::data {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;
using testing::write_gzip;
using testing::write_text;

template <class Fn>
std::string io_error(Fn&& fn) {
  return osprey::testing::error_of<IoError>(std::forward<Fn>(fn));
}

bool have_numpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

// Runs a Python script with numpy imported as np and `d` the directory; false when it fails.
bool numpy_writes(const TempDir& dir, const std::string& body) {
  const std::string script = dir / "write.py";
  write_text(script, "import sys\nimport numpy as np\nd = sys.argv[1]\n" + body);
  const std::string cmd = "/usr/bin/python3 " + script + " " + dir.path().string();
  return std::system(cmd.c_str()) == 0;
}

// The .npy bytes of a header dict (version 1.0), padded as numpy pads it, then `data`.
std::vector<unsigned char> npy_bytes(const std::string& dict,
                                     const std::vector<unsigned char>& data, int version = 1) {
  const size_t preamble = version == 1 ? 10 : 12;
  std::string header = dict;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<unsigned char> out = {
      0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(version), 0};
  const size_t n = header.size();
  out.push_back(n & 0xff);
  out.push_back((n >> 8) & 0xff);
  if (version != 1) {
    out.push_back((n >> 16) & 0xff);
    out.push_back((n >> 24) & 0xff);
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

TEST(NpyTest, ReadsEveryDtypeNumpyWrites) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not installed";
  TempDir dir;
  ASSERT_TRUE(numpy_writes(dir, R"(
a = np.arange(-6, 6).reshape(3, 4)
for t in ['f4', 'f8', 'i1', 'i4', 'i8']:
    np.save(f'{d}/{t}.npy', a.astype(t))
np.save(f'{d}/u1.npy', (a + 6).astype('u1'))
np.save(f'{d}/frac.npy', np.array([[0.25, -1.5], [3.0, 1e-3]], dtype='f4'))
)"));
  const std::vector<std::pair<std::string, DType>> cases = {
      {"f4", DType::float32}, {"f8", DType::float64}, {"i1", DType::int8},
      {"i4", DType::int32},   {"i8", DType::int64},   {"u1", DType::uint8}};
  for (const auto& [name, dtype] : cases) {
    const Tensor t = read_npy(dir / (name + ".npy"));
    EXPECT_EQ(t.dtype(), dtype) << name;
    EXPECT_EQ(t.shape(), (Shape{3, 4})) << name;
    std::vector<double> expected;
    for (int v = -6; v < 6; ++v) expected.push_back(name == "u1" ? v + 6 : v);
    EXPECT_EQ(t.to_vector<double>(), expected) << name;
  }
  EXPECT_EQ(read_npy(dir / "frac.npy").to_vector<float>(),
            (std::vector<float>{0.25f, -1.5f, 3.0f, 1e-3f}));
}

TEST(NpyTest, ReadsFormatVersionsTwoAndThreeAndOddShapes) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not installed";
  TempDir dir;
  ASSERT_TRUE(numpy_writes(dir, R"(
a = np.arange(24, dtype='<f8').reshape(2, 3, 4)
for v in [(1, 0), (2, 0), (3, 0)]:
    with open(f'{d}/v{v[0]}.npy', 'wb') as f:
        np.lib.format.write_array(f, a, version=v)
np.save(f'{d}/scalar.npy', np.array(7, dtype='i8'))
np.save(f'{d}/empty.npy', np.zeros((0, 5), dtype='f4'))
np.save(f'{d}/column.npy', np.arange(3, dtype='i4'))
)"));
  for (int v = 1; v <= 3; ++v) {
    const std::string path = dir / fmt::format("v{}.npy", v);
    FileReader f(path);
    EXPECT_EQ(read_npy_header(f).major_version, v);
    const Tensor t = read_npy(path);
    EXPECT_EQ(t.shape(), (Shape{2, 3, 4})) << v;
    EXPECT_EQ(t.at({1, 2, 3}), 23.0) << v;
  }
  const Tensor scalar = read_npy(dir / "scalar.npy");
  EXPECT_EQ(scalar.ndim(), 0);
  EXPECT_EQ(scalar.item(), 7.0);
  EXPECT_EQ(read_npy(dir / "empty.npy").shape(), (Shape{0, 5}));
  EXPECT_EQ(read_npy(dir / "column.npy").to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2}));
  // gzip-compressed, as the IDX reader takes it.
  write_gzip(dir / "column.npy.gz", read_bytes(dir / "column.npy"));
  EXPECT_EQ(read_npy(dir / "column.npy.gz").to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2}));
}

TEST(NpyTest, RefusesFortranOrderBigEndianAndOtherDtypesSayingHowToSaveThem) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not installed";
  TempDir dir;
  ASSERT_TRUE(numpy_writes(dir, R"(
np.save(f'{d}/fortran.npy', np.asfortranarray(np.ones((2, 3), dtype='f4')))
np.save(f'{d}/big.npy', np.ones(3, dtype='>f4'))
np.save(f'{d}/u2.npy', np.ones(3, dtype='u2'))
np.save(f'{d}/structured.npy', np.zeros(2, dtype=[('a', 'f4'), ('b', 'i4')]))
)"));
  std::string msg = io_error([&] { read_npy(dir / "fortran.npy"); });
  EXPECT_NE(msg.find("fortran_order is True"), std::string::npos) << msg;
  EXPECT_NE(msg.find("np.ascontiguousarray"), std::string::npos) << msg;
  msg = io_error([&] { read_npy(dir / "big.npy"); });
  EXPECT_NE(msg.find("dtype '>f4' is big-endian"), std::string::npos) << msg;
  EXPECT_NE(msg.find("astype('<f4')"), std::string::npos) << msg;
  msg = io_error([&] { read_npy(dir / "u2.npy"); });
  EXPECT_NE(msg.find("dtype '<u2' is not supported"), std::string::npos) << msg;
  msg = io_error([&] { read_npy(dir / "structured.npy"); });
  EXPECT_NE(msg.find("structured dtypes are not supported"), std::string::npos) << msg;
}

TEST(NpyTest, WritesWhatNumpyAndReadNpyReadBack) {
  TempDir dir;
  const std::vector<std::pair<std::string, DType>> cases = {
      {"f4", DType::float32}, {"f8", DType::float64}, {"i1", DType::int8},
      {"u1", DType::uint8},   {"i4", DType::int32},   {"i8", DType::int64}};
  const std::vector<double> values = {0, 3, 6, 9, 12, 15};
  for (const auto& [name, dtype] : cases) {
    Tensor t = Tensor::empty(Shape{2, 3}, {dtype});
    for (int64_t i = 0; i < 6; ++i) t.set({i / 3, i % 3}, values[static_cast<size_t>(i)]);
    write_npy(dir / (name + ".npy"), t);
    const Tensor back = read_npy(dir / (name + ".npy"));
    EXPECT_EQ(back.dtype(), dtype) << name;
    EXPECT_EQ(back.shape(), (Shape{2, 3})) << name;
    EXPECT_EQ(back.to_vector<double>(), values) << name;
  }
  write_npy(dir / "row.npy", Tensor::empty(Shape{4}, {DType::float32}).fill_(0.5));
  write_npy(dir / "scalar.npy", Tensor::empty(Shape{}, {DType::int64}).fill_(9));
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not installed";
  ASSERT_TRUE(numpy_writes(dir, R"(
for t in ['f4', 'f8', 'i1', 'u1', 'i4', 'i8']:
    a = np.load(f'{d}/{t}.npy')
    assert a.dtype == np.dtype(t) and a.shape == (2, 3), (t, a.dtype, a.shape)
    assert (a == np.arange(0, 18, 3).reshape(2, 3)).all(), (t, a)
assert np.load(f'{d}/row.npy').tolist() == [0.5] * 4
s = np.load(f'{d}/scalar.npy')
assert s.shape == () and s == 9
)"));
}

TEST(NpyTest, HostileFilesAreRefusedBeforeAllocating) {
  TempDir dir;
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::vector<unsigned char> two_floats(8, 0);
  write_bytes(dir / "good.npy", npy_bytes(ok, two_floats));
  EXPECT_EQ(read_npy(dir / "good.npy").shape(), (Shape{2}));
  write_bytes(dir / "good2.npy", npy_bytes(ok, two_floats, 2));
  EXPECT_EQ(read_npy(dir / "good2.npy").shape(), (Shape{2}));

  const std::vector<std::pair<std::vector<unsigned char>, std::string>> cases = {
      {{0x93, 'N', 'U'}, "truncated: it holds 3 bytes"},
      {{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0}, "bad magic at byte offset 0"},
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 9, 0, 10, 0}, "format version 9.0"},
      // The header length says 200 bytes; the file ends after 10.
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 200, 0},
       "the header length at byte offset 8 says 200"},
      // Version 2's 4-byte length: 4 GiB of header.
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff}, "more than 10000 bytes"},
      {npy_bytes(
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", {}),
       "holds more than 2^64 bytes"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
                 {}),
       "does not fit in 63 bits"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }",
                 two_floats),
       "data shorter than its shape: shape (1000000000000,) of <f4 needs 4000000000000 bytes"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", two_floats),
       "needs 12 bytes after the header (byte offset 128), the file holds 8"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", {}),
       "non-negative integers"},
      {npy_bytes("{'descr': '<f4', 'shape': (2,), }", two_floats),
       "the header has no 'fortran_order'"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", two_floats),
       "malformed header dict"},
      {npy_bytes("['descr']", two_floats), "malformed header dict: expected '{'"},
  };
  int i = 0;
  for (const auto& [bytes, fragment] : cases) {
    const std::string path = dir / fmt::format("bad{}.npy", i++);
    write_bytes(path, bytes);
    const std::string msg = io_error([&] { read_npy(path); });
    EXPECT_NE(msg.find(fragment), std::string::npos) << "case " << i - 1 << ": " << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << "case " << i - 1 << ": " << msg;
  }
}

}  // namespace
}  // namespace osprey::data
