// IDX reading and writing. Written by hand: the format is 20 lines of spec and no Debian library
// reads it; gzip goes through zlib (FileReader).
#include "osprey/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "osprey/core/error.h"

namespace osprey::data {
namespace {

constexpr int64_t kRowsPerBlock = 1024;  // idx_dataset reads this many records at a time
constexpr size_t kMaxBlockBytes = 1u << 20;

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

struct IdxType {
  uint8_t code;
  const char* name;
  size_t disk_bytes;
  DType dtype;
};
constexpr IdxType kIdxTypes[] = {
    {0x08, "ubyte", 1, DType::uint8},   {0x09, "sbyte", 1, DType::int8},
    {0x0B, "int16", 2, DType::int32},   {0x0C, "int32", 4, DType::int32},
    {0x0D, "float", 4, DType::float32}, {0x0E, "double", 8, DType::float64},
};

const IdxType* find_type(uint8_t code) {
  for (const IdxType& t : kIdxTypes) {
    if (t.code == code) return &t;
  }
  return nullptr;
}

// In-place big-endian -> host for n elements of `bytes` each (host is little-endian x86/ARM).
void swap_bytes(void* data, size_t n, size_t bytes) {
  auto* p = static_cast<unsigned char*>(data);
  if (bytes == 1) return;
  for (size_t i = 0; i < n; ++i, p += bytes) std::reverse(p, p + bytes);
}

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

}  // namespace

uint64_t IdxHeader::data_bytes() const noexcept {
  uint64_t n = disk_element_bytes;
  for (int64_t d : shape) n = saturating_mul(n, static_cast<uint64_t>(d));
  return n;
}

IdxHeader read_idx_header(FileReader& f) {
  const std::string& path = f.path();
  unsigned char magic[4];
  const size_t got = f.read(magic, 4);
  OSPREY_CHECK_T(
      IoError, got == 4,
      "IDX file '{}': truncated header at byte offset {}: the file holds {} bytes of data, "
      "an IDX header needs at least 4",
      path, got, got);
  const uint32_t m = be32(magic);
  OSPREY_CHECK_T(IoError, magic[0] == 0 && magic[1] == 0,
                 "IDX file '{}': bad magic 0x{:08x} at byte offset 0: an IDX file starts with two "
                 "zero bytes, a type code and the number of dimensions (0x00000803 for images, "
                 "0x00000801 for labels){}",
                 path, m, f.is_gzip() ? "" : "; this is not an IDX file (nor gzip-compressed)");
  const IdxType* type = find_type(magic[2]);
  OSPREY_CHECK_T(IoError, type != nullptr,
                 "IDX file '{}': bad magic 0x{:08x}: unknown element type code 0x{:02x} at byte "
                 "offset 2 (expected 0x08 ubyte, 0x09 sbyte, 0x0B int16, 0x0C int32, 0x0D float "
                 "or 0x0E double)",
                 path, m, magic[2]);
  const int ndim = magic[3];
  OSPREY_CHECK_T(
      IoError, ndim >= 1 && ndim <= kMaxDims,
      "IDX file '{}': bad magic 0x{:08x}: {} dimensions at byte offset 3 (expected 1 to {})", path,
      m, ndim, kMaxDims);
  IdxHeader h;
  h.type_code = type->code;
  h.dtype = type->dtype;
  h.disk_element_bytes = type->disk_bytes;
  h.header_bytes = 4 + 4 * static_cast<size_t>(ndim);
  unsigned char dims[4 * kMaxDims];
  const size_t dims_got = f.read(dims, 4 * static_cast<size_t>(ndim));
  OSPREY_CHECK_T(IoError, dims_got == 4 * static_cast<size_t>(ndim),
                 "IDX file '{}': truncated header at byte offset {}: magic 0x{:08x} announces {} "
                 "dimensions ({} header bytes), but the data ends after {} bytes",
                 path, 4 + dims_got, m, ndim, h.header_bytes, 4 + dims_got);
  for (int i = 0; i < ndim; ++i) h.shape.push_back(be32(dims + 4 * i));

  // Check the claim before anyone allocates for it.
  const uint64_t claimed = h.data_bytes();
  if (!f.is_gzip()) {
    const uint64_t actual = f.file_size() - h.header_bytes;
    OSPREY_CHECK_T(IoError, claimed == actual,
                   "IDX file '{}': dims {} of {} claim {} bytes of data after the {}-byte header, "
                   "but the file has {} ({}; the data should end at byte offset {}, the file ends "
                   "at {})",
                   path, h.shape.to_string(), type->name, claimed, h.header_bytes, actual,
                   claimed > actual ? "truncated, or a corrupt header" : "trailing bytes",
                   claimed == UINT64_MAX ? claimed : claimed + h.header_bytes, f.file_size());
  } else {
    const uint64_t bound = f.max_data_size();
    OSPREY_CHECK_T(
        IoError, claimed <= bound - std::min<uint64_t>(bound, h.header_bytes),
        "IDX file '{}': dims {} of {} claim {} bytes of data after the {}-byte header, "
        "more than a gzip file of {} bytes can hold (deflate compresses at most 1032:1): "
        "the header is corrupt or the file truncated",
        path, h.shape.to_string(), type->name, claimed, h.header_bytes, f.file_size());
  }
  return h;
}

void read_idx_rows(FileReader& f, const IdxHeader& h, int64_t count, void* dst) {
  const uint64_t row_elems =
      static_cast<uint64_t>(h.shape.numel() / std::max<int64_t>(h.shape[0], 1));
  const uint64_t n = static_cast<uint64_t>(count) * row_elems;
  const size_t want = static_cast<size_t>(n * h.disk_element_bytes);
  const uint64_t at = f.offset();
  // int16 is read into the upper half of the int32 buffer, then widened front to back.
  void* raw = h.type_code == 0x0B ? static_cast<char*>(dst) + want : dst;
  const size_t got = f.read(raw, want);
  OSPREY_CHECK_T(IoError, got == want,
                 "IDX file '{}': truncated data: it ends at {}byte offset {}, but dims {} need {} "
                 "bytes of data after the {}-byte header (the data should end at offset {})",
                 f.path(), f.is_gzip() ? "decompressed " : "", at + got, h.shape.to_string(),
                 h.data_bytes(), h.header_bytes, h.data_bytes() + h.header_bytes);
  swap_bytes(raw, static_cast<size_t>(n), h.disk_element_bytes);
  if (h.type_code == 0x0B) {
    const auto* src = static_cast<const int16_t*>(raw);
    auto* out = static_cast<int32_t*>(dst);
    for (uint64_t i = 0; i < n; ++i) out[i] = src[i];
  }
}

namespace {

void check_no_trailing_data(FileReader& f, const IdxHeader& h) {
  char extra;
  OSPREY_CHECK_T(IoError, f.read(&extra, 1) == 0,
                 "IDX file '{}': trailing data at {}byte offset {}: dims {} account for {} bytes "
                 "after the {}-byte header",
                 f.path(), f.is_gzip() ? "decompressed " : "", f.offset() - 1, h.shape.to_string(),
                 h.data_bytes(), h.header_bytes);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  FileReader f(path, "IDX file");
  const IdxHeader h = read_idx_header(f);
  Tensor t = Tensor::empty(h.shape, {h.dtype});
  read_idx_rows(f, h, h.shape[0], t.raw_data());
  check_no_trailing_data(f, h);
  return t;
}

void write_idx(const std::string& path, const Tensor& t, IdxWriteOptions options) {
  OSPREY_CHECK(t.defined() && t.ndim() >= 1,
               "write_idx: expected a tensor of at least 1 dimension. Received: {}",
               t.defined() ? t.describe() : std::string("undefined"));
  uint8_t code = 0;
  switch (t.dtype()) {
    case DType::uint8:
      code = 0x08;
      break;
    case DType::int8:
      code = 0x09;
      break;
    case DType::int32:
      code = 0x0C;
      break;
    case DType::float32:
      code = 0x0D;
      break;
    case DType::float64:
      code = 0x0E;
      break;
    default:
      OSPREY_THROW(ValueError,
                   "write_idx: IDX holds uint8, int8, int32, float32 or float64. Received: {} "
                   "(convert with .to(...))",
                   t.describe());
  }
  for (int64_t d : t.shape()) {
    OSPREY_CHECK(d <= UINT32_MAX, "write_idx: IDX sizes are 32-bit. Received: shape {}",
                 t.shape().to_string());
  }
  std::vector<unsigned char> header{0, 0, code, static_cast<unsigned char>(t.ndim())};
  for (int64_t d : t.shape()) {
    const auto u = static_cast<uint32_t>(d);
    header.insert(header.end(),
                  {static_cast<unsigned char>(u >> 24), static_cast<unsigned char>(u >> 16),
                   static_cast<unsigned char>(u >> 8), static_cast<unsigned char>(u)});
  }
  const std::string mode =
      options.gzip ? fmt::format("wb{}", std::clamp(options.compression_level, 1, 9)) : "wbT";
  gzFile f = gzopen(path.c_str(), mode.c_str());
  OSPREY_CHECK_T(IoError, f != nullptr, "write_idx: cannot open '{}' for writing: {}", path,
                 std::strerror(errno));
  bool ok = gzwrite(f, header.data(), static_cast<unsigned>(header.size())) ==
            static_cast<int>(header.size());
  const Tensor c = t.contiguous();
  const size_t bytes = c.itemsize();
  const auto* src = static_cast<const unsigned char*>(c.raw_data());
  std::vector<unsigned char> chunk;
  const size_t total = c.nbytes();
  for (size_t at = 0; ok && at < total; at += kMaxBlockBytes) {
    const size_t n = std::min(kMaxBlockBytes, total - at);
    chunk.assign(src + at, src + at + n);
    swap_bytes(chunk.data(), n / bytes, bytes);  // host -> big-endian
    ok = gzwrite(f, chunk.data(), static_cast<unsigned>(n)) == static_cast<int>(n);
  }
  const int closed = gzclose_w(f);
  OSPREY_CHECK_T(IoError, ok && closed == Z_OK, "write_idx: writing '{}' failed (disk full?)",
                 path);
}

// ---- idx_dataset ----

namespace {

class IdxNode final : public detail::Node {
 public:
  explicit IdxNode(std::vector<std::string> paths) : paths_(std::move(paths)) {
    OSPREY_CHECK(!paths_.empty(), "idx_dataset: expected at least one file");
    for (const std::string& p : paths_) {
      FileReader f(p, "IDX file");
      headers_.push_back(read_idx_header(f));
      OSPREY_CHECK_T(
          IoError, headers_.back().shape[0] == headers_[0].shape[0],
          "idx_dataset: the files differ in length: '{}' holds {} records {}, '{}' holds "
          "{} {}",
          paths_[0], headers_[0].shape[0], headers_[0].shape.to_string(), p,
          headers_.back().shape[0], headers_.back().shape.to_string());
    }
  }

  class It final : public detail::IteratorImpl {
   public:
    explicit It(std::shared_ptr<const IdxNode> node) : node_(std::move(node)) {
      for (size_t i = 0; i < node_->paths_.size(); ++i) {
        files_.push_back(std::make_unique<FileReader>(node_->paths_[i], "IDX file"));
        const IdxHeader h = read_idx_header(*files_.back());
        OSPREY_CHECK_T(
            IoError,
            h.shape == node_->headers_[i].shape && h.type_code == node_->headers_[i].type_code,
            "IDX file '{}': changed while the dataset was in use: its header now says "
            "{} (magic 0x{:08x}), it said {} (0x{:08x})",
            node_->paths_[i], h.shape.to_string(), h.magic(), node_->headers_[i].shape.to_string(),
            node_->headers_[i].magic());
      }
    }
    std::optional<Element> next() override {
      const int64_t total = node_->headers_[0].shape[0];
      if (block_row_ == block_rows_) {
        if (next_row_ >= total) {
          for (size_t i = 0; i < files_.size(); ++i)
            check_no_trailing_data(*files_[i], node_->headers_[i]);
          files_.clear();
          return std::nullopt;
        }
        read_block(total);
      }
      return slice_row(block_, block_row_++);
    }

   private:
    void read_block(int64_t total) {
      int64_t rows = std::min(kRowsPerBlock, total - next_row_);
      for (const IdxHeader& h : node_->headers_) {
        const int64_t row_bytes =
            std::max<int64_t>(1, h.shape.numel() / std::max<int64_t>(h.shape[0], 1)) *
            static_cast<int64_t>(dtype_size(h.dtype));
        rows =
            std::max<int64_t>(1, std::min(rows, static_cast<int64_t>(kMaxBlockBytes) / row_bytes));
      }
      block_ = Element();
      for (size_t i = 0; i < files_.size(); ++i) {
        Shape s = node_->headers_[i].shape;
        s[0] = rows;
        Tensor t = Tensor::empty(s, {node_->headers_[i].dtype});
        read_idx_rows(*files_[i], node_->headers_[i], rows, t.raw_data());
        block_.push_back(std::move(t));
      }
      next_row_ += rows;
      block_rows_ = rows;
      block_row_ = 0;
    }

    std::shared_ptr<const IdxNode> node_;
    std::vector<std::unique_ptr<FileReader>> files_;
    Element block_;
    int64_t next_row_ = 0, block_rows_ = 0, block_row_ = 0;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t) const override {
    return std::make_unique<It>(self<IdxNode>());
  }
  int64_t cardinality() const override { return headers_[0].shape[0]; }
  std::string label() const override {
    return fmt::format("Idx({}, {} files)", headers_[0].shape[0], paths_.size());
  }

 private:
  std::vector<std::string> paths_;
  std::vector<IdxHeader> headers_;
};

}  // namespace

Dataset idx_dataset(const std::vector<std::string>& paths) {
  return Dataset(std::make_shared<IdxNode>(paths));
}

}  // namespace osprey::data
