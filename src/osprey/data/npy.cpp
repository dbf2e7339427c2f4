#include "osprey/data/npy.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>

#include "osprey/core/error.h"

namespace osprey::data {
namespace {

static_assert(std::endian::native == std::endian::little,
              "read_npy copies little-endian elements as they are");

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
// np.load refuses longer headers by default too (max_header_size): a bound before allocating.
constexpr uint64_t kMaxHeaderBytes = 10000;

struct NpyType {
  DType dtype;
  char kind;  // 'f', 'i', 'u'
  int bytes;
};
constexpr NpyType kNpyTypes[] = {{DType::float32, 'f', 4}, {DType::float64, 'f', 8},
                                 {DType::int8, 'i', 1},    {DType::uint8, 'u', 1},
                                 {DType::int32, 'i', 4},   {DType::int64, 'i', 8}};

// The header dict, a Python literal with string keys and string, boolean or tuple values.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  // key -> its value's text: a string's contents, "True"/"False", or a tuple's "(...)".
  std::map<std::string, std::string> parse() {
    std::map<std::string, std::string> out;
    skip_space();
    expect('{');
    while (skip_space(), peek() != '}') {
      const std::string key = string();
      skip_space();
      expect(':');
      skip_space();
      std::string value;
      if (peek() == '\'' || peek() == '"') {
        value = string();
      } else if (peek() == '(') {
        const size_t close = s_.find(')', i_);
        if (close == std::string_view::npos) fail("a tuple without its ')'");
        value = std::string(s_.substr(i_, close + 1 - i_));
        i_ = close + 1;
      } else if (peek() == '[') {
        fail(fmt::format("'{}' is a list: structured dtypes are not supported", key));
      } else {
        const size_t end = s_.find_first_of(",}", i_);
        value = std::string(s_.substr(i_, end == std::string_view::npos ? end : end - i_));
        while (!value.empty() && value.back() == ' ') value.pop_back();
        i_ = end == std::string_view::npos ? s_.size() : end;
      }
      if (!out.emplace(key, value).second) fail(fmt::format("key '{}' appears twice", key));
      skip_space();
      if (peek() == ',') ++i_;
    }
    return out;
  }

 private:
  char peek() const {
    if (i_ >= s_.size()) fail("it ends before its closing '}'");
    return s_[i_];
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}' at character {}, found '{}'", c, i_, peek()));
    ++i_;
  }
  std::string string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"')
      fail(fmt::format("expected a quoted key at character {}", i_));
    const size_t close = s_.find(quote, i_ + 1);
    if (close == std::string_view::npos) fail("a string without its closing quote");
    std::string out(s_.substr(i_ + 1, close - i_ - 1));
    i_ = close + 1;
    return out;
  }
  [[noreturn]] void fail(const std::string& what) const {
    OSPREY_THROW(IoError, "NPY file '{}': malformed header dict: {}", path_, what);
  }

  std::string_view s_;
  const std::string& path_;
  size_t i_ = 0;
};

// "(60000, 28, 28)", "(3,)" or "()"; Python 2's "(3L, 4L)" too.
Shape parse_shape(std::string_view text, const std::string& path) {
  Shape shape;
  auto fail = [&](const std::string& what) {
    OSPREY_THROW(IoError, "NPY file '{}': header 'shape' {}: {}", path, text, what);
  };
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') fail("not a tuple");
  std::string_view rest = text.substr(1, text.size() - 2);
  while (true) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) break;
    uint64_t d = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), d);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && d > INT64_MAX))
      fail("a dimension does not fit in 63 bits");
    if (ec != std::errc()) fail("dimensions must be non-negative integers");
    shape.push_back(static_cast<int64_t>(d));
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    if (!rest.empty() && rest.front() == 'L') rest.remove_prefix(1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) break;
    if (rest.front() != ',') fail("expected ',' between dimensions");
    rest.remove_prefix(1);
  }
  return shape;
}

[[noreturn]] void refuse_descr(const std::string& path, const std::string& descr, const char* why) {
  OSPREY_THROW(IoError,
               "NPY file '{}': dtype '{}' {}; osprey reads little-endian f4, f8, i1, u1, i4 and "
               "i8 (in numpy: np.save(path, a.astype('<f4')))",
               path, descr, why);
}

// "<f4", "|u1", ...: byte order, kind, itemsize.
const NpyType& parse_descr(const std::string& descr, const std::string& path) {
  if (descr.size() < 3) refuse_descr(path, descr, "is not a simple dtype");
  const char order = descr[0];
  const char kind = descr[1];
  int bytes = 0;
  const auto [end, ec] = std::from_chars(descr.data() + 2, descr.data() + descr.size(), bytes);
  if (ec != std::errc() || end != descr.data() + descr.size())
    refuse_descr(path, descr, "is not a simple dtype");
  if (order == '>' && bytes > 1) refuse_descr(path, descr, "is big-endian");
  if (order != '<' && order != '|' && order != '=' && order != '>')
    refuse_descr(path, descr, "has no byte order");
  for (const NpyType& t : kNpyTypes) {
    if (t.kind == kind && t.bytes == bytes) return t;
  }
  refuse_descr(path, descr, "is not supported");
}

}  // namespace

uint64_t NpyHeader::data_bytes() const noexcept {
  return static_cast<uint64_t>(shape.numel()) * dtype_size(dtype);
}

NpyHeader read_npy_header(FileReader& f) {
  const std::string& path = f.path();
  unsigned char pre[12];
  size_t got = f.read(pre, 10);
  OSPREY_CHECK_T(IoError, got == 10,
                 "NPY file '{}': truncated: it holds {} bytes, a .npy file starts with at least 10 "
                 "(magic, version, header length)",
                 path, got);
  OSPREY_CHECK_T(IoError, std::memcmp(pre, kMagic, sizeof kMagic) == 0,
                 "NPY file '{}': bad magic at byte offset 0: a .npy file starts with "
                 "\"\\x93NUMPY\"; this is not one (np.save writes them)",
                 path);
  NpyHeader h;
  h.major_version = pre[6];
  OSPREY_CHECK_T(IoError, h.major_version >= 1 && h.major_version <= 3,
                 "NPY file '{}': format version {}.{} at byte offset 6 is not one osprey reads "
                 "(1.0, 2.0 or 3.0)",
                 path, pre[6], pre[7]);
  uint64_t header_len = pre[8] | (uint64_t{pre[9]} << 8);
  uint64_t preamble = 10;
  if (h.major_version >= 2) {
    got = f.read(pre + 10, 2);
    OSPREY_CHECK_T(IoError, got == 2,
                   "NPY file '{}': truncated: version {} needs a 4-byte header length at byte "
                   "offset 8, the file ends at {}",
                   path, h.major_version, 10 + got);
    header_len |= (uint64_t{pre[10]} << 16) | (uint64_t{pre[11]} << 24);
    preamble = 12;
  }
  OSPREY_CHECK_T(IoError, header_len <= kMaxHeaderBytes,
                 "NPY file '{}': header length {} at byte offset 8 is more than {} bytes (numpy's "
                 "own bound for a header)",
                 path, header_len, kMaxHeaderBytes);
  OSPREY_CHECK_T(IoError, preamble + header_len <= f.max_data_size(),
                 "NPY file '{}': truncated: the header length at byte offset 8 says {} bytes, but "
                 "the file holds {} bytes",
                 path, header_len, f.file_size());
  std::string text(header_len, '\0');
  got = f.read(text.data(), header_len);
  OSPREY_CHECK_T(IoError, got == header_len,
                 "NPY file '{}': truncated header: it ends at byte offset {}, the header length "
                 "says {}",
                 path, preamble + got, preamble + header_len);
  h.data_offset = preamble + header_len;

  const std::map<std::string, std::string> dict = HeaderParser(text, path).parse();
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    OSPREY_CHECK_T(IoError, dict.count(key), "NPY file '{}': the header has no '{}': {}", path, key,
                   text);
  }
  OSPREY_CHECK_T(IoError, dict.at("fortran_order") == "False",
                 "NPY file '{}': fortran_order is {}: only C-order arrays are read (in numpy: "
                 "np.save(path, np.ascontiguousarray(a)))",
                 path, dict.at("fortran_order"));
  const NpyType& type = parse_descr(dict.at("descr"), path);
  h.dtype = type.dtype;
  h.shape = parse_shape(dict.at("shape"), path);

  // Check the claim before anyone allocates for it: the product of the dims times the itemsize
  // must not overflow and must fit in the file.
  uint64_t bytes = static_cast<uint64_t>(type.bytes);
  for (int64_t d : h.shape) {
    OSPREY_CHECK_T(IoError, !__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes),
                   "NPY file '{}': shape {} holds more than 2^64 bytes", path, dict.at("shape"));
  }
  const uint64_t room = f.max_data_size() - h.data_offset;
  OSPREY_CHECK_T(IoError, bytes <= room,
                 "NPY file '{}': data shorter than its shape: shape {} of {} needs {} bytes after "
                 "the header (byte offset {}), the file holds {}",
                 path, dict.at("shape"), dict.at("descr"), bytes, h.data_offset, room);
  return h;
}

Tensor read_npy(const std::string& path) {
  FileReader f(path, "NPY file");
  const NpyHeader h = read_npy_header(f);
  Tensor t = Tensor::empty(h.shape, {h.dtype});
  const size_t got = f.read(t.raw_data(), h.data_bytes());
  OSPREY_CHECK_T(IoError, got == h.data_bytes(),
                 "NPY file '{}': data shorter than its shape: it ends at byte offset {}, the shape "
                 "needs {} bytes from offset {}",
                 path, h.data_offset + got, h.data_bytes(), h.data_offset);
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  OSPREY_CHECK(t.defined(), "write_npy: the tensor is undefined");
  const NpyType* type = nullptr;
  for (const NpyType& candidate : kNpyTypes) {
    if (candidate.dtype == t.dtype()) type = &candidate;
  }
  OSPREY_CHECK(type != nullptr,
               "write_npy: {} has no .npy type here (float32, float64, int8, uint8, int32 or "
               "int64)",
               t.describe());
  const Shape& dims = t.shape();  // Python's tuple: (), (3,), (3, 4)
  const std::string shape = t.ndim() == 1
                                ? fmt::format("({},)", dims[0])
                                : fmt::format("({})", fmt::join(dims.begin(), dims.end(), ", "));
  std::string header = fmt::format("{{'descr': '{}{}{}', 'fortran_order': False, 'shape': {}, }}",
                                   type->bytes == 1 ? '|' : '<', type->kind, type->bytes, shape);
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';  // numpy aligns the data to 64
  header += '\n';
  OSPREY_CHECK(header.size() <= 65535, "write_npy: {} has too many dimensions", t.describe());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  OSPREY_CHECK_T(IoError, out.good(), "NPY file '{}': cannot open it for writing", path);
  const char preamble[10] = {'\x93',
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             static_cast<char>(header.size() & 0xff),
                             static_cast<char>(header.size() >> 8)};
  out.write(preamble, sizeof preamble);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  const Tensor c = t.contiguous();
  out.write(static_cast<const char*>(c.raw_data()), static_cast<std::streamsize>(c.nbytes()));
  out.close();
  OSPREY_CHECK_T(IoError, !out.fail(), "NPY file '{}': cannot write it", path);
}

}  // namespace osprey::data
