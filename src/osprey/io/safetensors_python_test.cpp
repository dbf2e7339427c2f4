// Interoperability with an independent implementation: files osprey writes are parsed by a few
// lines of Python (json + numpy.frombuffer), and files Python writes by hand (struct + json, no
// safetensors package) are read by osprey. Skipped, with the reason, without /usr/bin/python3.
#include <gtest/gtest.h>

#include "osprey/core/error.h"
#include "osprey/io/io_test_util.h"
#include "osprey/io/json.h"
#include "osprey/io/safetensors.h"

namespace osprey::io {
namespace {

using testing::have_python;
using testing::run_python;
using testing::TempDir;
using testing::valued_tensor;

// Decodes every tensor to float64 values with numpy alone; bf16 and float8 are decoded by hand,
// so osprey's own conversions are checked against an independent decoder. Also checks the
// layout rules: 8-byte padded header, aligned and hole-free data.
constexpr const char* kReader = R"PY(
import json, struct, sys
import numpy as np
buf = open(sys.argv[1], 'rb').read()
n, = struct.unpack('<Q', buf[:8])
assert n % 8 == 0, 'header not padded to 8'
header = json.loads(buf[8:8 + n].decode('utf-8'))
meta = header.pop('__metadata__', {})
data = buf[8 + n:]
def f8(bits, e, m, bias):
    b = bits.astype(np.int64)
    sign = np.where(b & 0x80, -1.0, 1.0)
    E = (b >> m) & ((1 << e) - 1)
    M = (b & ((1 << m) - 1)).astype(np.float64)
    return sign * np.where(E == 0, M / 2**m * 2.0**(1 - bias), (1 + M / 2**m) * 2.0**(E - bias))
plain = {'F64': '<f8', 'F32': '<f4', 'F16': '<f2', 'I8': 'i1', 'U8': 'u1', 'I32': '<i4',
         'I64': '<i8', 'BOOL': '?'}
out, spans = {}, []
for name, info in header.items():
    b, e = info['data_offsets']
    spans.append((b, e))
    raw, dt = data[b:e], info['dtype']
    if dt == 'BF16':
        v = (np.frombuffer(raw, '<u2').astype(np.uint32) << 16).view('<f4')
    elif dt == 'F8_E4M3':
        v = f8(np.frombuffer(raw, np.uint8), 4, 3, 7)
    elif dt == 'F8_E5M2':
        v = f8(np.frombuffer(raw, np.uint8), 5, 2, 15)
    else:
        v = np.frombuffer(raw, plain[dt])
        assert b % v.itemsize == 0, name + ' misaligned'
    v = v.reshape(info['shape'])
    out[name] = {'dtype': dt, 'shape': list(v.shape), 'values': v.astype(np.float64).ravel().tolist()}
spans.sort()
end = 0
for b, e in spans:
    assert b == end, 'hole or overlap'
    end = e
assert end == len(data), 'trailing bytes'
print(json.dumps({'metadata': meta, 'tensors': out}))
)PY";

TEST(SafetensorsPythonTest, AFileOspreyWritesIsReadByJsonAndNumpy) {
  if (!have_python(true)) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  TempDir dir;
  NamedTensors in;
  const DType dtypes[] = {DType::float64,       DType::float32,     DType::bfloat16, DType::float16,
                          DType::float8_e4m3fn, DType::float8_e5m2, DType::int8,     DType::uint8,
                          DType::int32,         DType::int64,       DType::boolean};
  uint32_t seed = 11;
  for (DType d : dtypes) {
    in.emplace_back(std::string("layer/") + std::string(dtype_name(d)),
                    valued_tensor(d, {2, 3, 4}, seed++));
  }
  in.emplace_back("scalar", valued_tensor(DType::float32, Shape{}, 99));
  in.emplace_back("empty", Tensor::empty({0, 5}, {DType::float32}));
  in.emplace_back("transposed", valued_tensor(DType::float32, {3, 5}, 7).transpose(0, 1));
  save_safetensors(dir / "o.safetensors", in, {{"format", "osprey"}});

  const std::string out =
      run_python(dir.path(), "reader", kReader, (dir / "o.safetensors").string());
  ASSERT_FALSE(out.empty());
  const nlohmann::json j = parse_json(out, "python output");
  EXPECT_EQ(j["metadata"]["format"], "osprey");
  ASSERT_EQ(j["tensors"].size(), in.size());
  for (const auto& [name, t] : in) {
    SCOPED_TRACE(name);
    const auto& got = j["tensors"][name];
    EXPECT_EQ(got["dtype"], std::string(safetensors_dtype_code(t.dtype())));
    EXPECT_EQ(got["shape"].get<std::vector<int64_t>>(), t.shape().to_vector());
    EXPECT_EQ(got["values"].get<std::vector<double>>(), t.to_vector<double>());
  }
}

// Header keys in no particular order, data in yet another order, an unpadded header, a scalar,
// an empty tensor and metadata: everything a conforming reader must accept.
constexpr const char* kWriter = R"PY(
import json, struct, sys
tensors = [  # name, dtype, shape, packed bytes
    ('z/bias', 'F32', [3], struct.pack('<3f', 0.5, -1.0, 2.25)),
    ('a/kernel', 'F64', [2, 2], struct.pack('<4d', 1.0, 2.0, 3.0, -4.5)),
    ('ids', 'I64', [3], struct.pack('<3q', -(2**40), 0, 2**40 + 1)),
    ('half', 'F16', [2], struct.pack('<2e', 0.25, -65504.0)),
    ('brain', 'BF16', [2], struct.pack('<f', 1.5)[2:] + struct.pack('<f', -3.0)[2:]),
    ('mask', 'BOOL', [4], bytes([1, 0, 0, 1])),
    ('pix', 'U8', [2], bytes([0, 255])),
    ('small', 'I8', [2], struct.pack('<2b', -128, 127)),
    ('count', 'I32', [], struct.pack('<i', -7)),
    ('nothing', 'F32', [0, 3], b''),
]
data, header = b'', {}
for name, dt, shape, raw in reversed(tensors):  # data order differs from header order
    header[name] = {'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)], 'dtype': dt}
    data += raw
header = dict(sorted(header.items(), key=lambda kv: kv[0][::-1]))
header['__metadata__'] = {'source': 'python', 'epoch': '3'}
h = json.dumps(header).encode()  # spaces after separators, no padding
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + data)
)PY";

TEST(SafetensorsPythonTest, AFileWrittenByHandInPythonIsReadCorrectly) {
  if (!have_python(false)) GTEST_SKIP() << "/usr/bin/python3 is not available";
  TempDir dir;
  run_python(dir.path(), "writer", kWriter, (dir / "py.safetensors").string());
  ASSERT_TRUE(std::filesystem::exists(dir / "py.safetensors"));
  const SafetensorsFile f = load_safetensors(dir / "py.safetensors");
  EXPECT_FALSE(f.checksum_verified);  // no osprey checksum in a foreign file
  EXPECT_EQ(f.metadata, (SafetensorsMetadata{{"source", "python"}, {"epoch", "3"}}));
  ASSERT_EQ(f.size(), 10u);
  EXPECT_EQ(f.at("z/bias").to_vector<float>(), (std::vector<float>{0.5f, -1.0f, 2.25f}));
  EXPECT_EQ(f.at("a/kernel").shape(), (Shape{2, 2}));
  EXPECT_EQ(f.at("a/kernel").to_vector<double>(), (std::vector<double>{1, 2, 3, -4.5}));
  EXPECT_EQ(f.at("ids").to_vector<int64_t>(),
            (std::vector<int64_t>{-(1ll << 40), 0, (1ll << 40) + 1}));
  EXPECT_EQ(f.at("half").to_vector<double>(), (std::vector<double>{0.25, -65504.0}));
  EXPECT_EQ(f.at("brain").dtype(), DType::bfloat16);
  EXPECT_EQ(f.at("brain").to_vector<double>(), (std::vector<double>{1.5, -3.0}));
  EXPECT_EQ(f.at("mask").to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(f.at("pix").to_vector<uint8_t>(), (std::vector<uint8_t>{0, 255}));
  EXPECT_EQ(f.at("small").to_vector<int8_t>(), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(f.at("count").ndim(), 0);
  EXPECT_EQ(f.at("count").item(), -7.0);
  EXPECT_EQ(f.at("nothing").shape(), (Shape{0, 3}));
  // Tensors come back in data order, which the Python writer reversed.
  EXPECT_EQ(f.tensors.front().first, "nothing");
  EXPECT_EQ(f.tensors.back().first, "z/bias");
}

}  // namespace
}  // namespace osprey::io
