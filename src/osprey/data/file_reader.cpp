#include "osprey/data/file_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "osprey/core/error.h"

namespace osprey::data {
namespace {

constexpr unsigned kZlibBuffer = 1u << 18;
constexpr size_t kLineBuffer = 1u << 16;
constexpr size_t kMaxChunk = 1u << 30;  // gzread takes an unsigned int
constexpr uint64_t kDeflateMaxRatio = 1032;

gzFile gz(void* f) { return static_cast<gzFile>(f); }

}  // namespace

FileReader::FileReader(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {
  std::error_code ec;
  const auto status = std::filesystem::status(path_, ec);
  OSPREY_CHECK_T(IoError, !ec && std::filesystem::exists(status), "{} '{}': no such file", what_,
                 path_);
  OSPREY_CHECK_T(IoError, !std::filesystem::is_directory(status),
                 "{} '{}': is a directory, not a file", what_, path_);
  file_size_ = std::filesystem::file_size(path_, ec);
  OSPREY_CHECK_T(IoError, !ec, "{} '{}': cannot read its size: {}", what_, path_, ec.message());
  errno = 0;
  file_ = gzopen(path_.c_str(), "rb");
  OSPREY_CHECK_T(IoError, file_ != nullptr, "{} '{}': cannot open: {}", what_, path_,
                 errno ? std::strerror(errno) : "out of memory");
  gzbuffer(gz(file_), kZlibBuffer);
  gzip_ = gzdirect(gz(file_)) == 0;
}

FileReader::~FileReader() {
  if (file_) gzclose_r(gz(file_));
}

uint64_t FileReader::max_data_size() const noexcept {
  if (!gzip_) return file_size_;
  if (file_size_ > UINT64_MAX / kDeflateMaxRatio) return UINT64_MAX;
  return file_size_ * kDeflateMaxRatio;
}

void FileReader::fail_stream(int code, const char* msg) const {
  if (code == Z_BUF_ERROR) {
    OSPREY_THROW(
        IoError,
        "{} '{}': the gzip stream is truncated: it ends after {} bytes of decompressed data "
        "(compressed file size {} bytes) without its trailer",
        what_, path_, offset_, file_size_);
  }
  OSPREY_THROW(IoError, "{} '{}': corrupt gzip stream at decompressed byte offset {}: {}", what_,
               path_, offset_, msg ? msg : "unknown zlib error");
}

size_t FileReader::read_raw(void* dst, size_t n) {
  auto* out = static_cast<char*>(dst);
  size_t total = 0;
  while (total < n) {
    const auto chunk = static_cast<unsigned>(std::min(n - total, kMaxChunk));
    const int got = gzread(gz(file_), out + total, chunk);
    if (got < 0) {
      int code = Z_OK;
      const char* msg = gzerror(gz(file_), &code);
      fail_stream(code, msg);
    }
    total += static_cast<size_t>(got);
    if (static_cast<unsigned>(got) < chunk) {
      // A short read is the end of the data, or a truncated stream (zlib reports Z_BUF_ERROR
      // and returns what it decoded): tell them apart.
      int code = Z_OK;
      const char* msg = gzerror(gz(file_), &code);
      if (code != Z_OK) {
        offset_ += total;
        fail_stream(code, msg);
      }
      break;
    }
  }
  return total;
}

size_t FileReader::read(void* dst, size_t n) {
  auto* out = static_cast<char*>(dst);
  size_t from_buffer = std::min(n, buf_end_ - buf_begin_);
  if (from_buffer) {
    std::memcpy(out, buffer_.data() + buf_begin_, from_buffer);
    buf_begin_ += from_buffer;
    offset_ += from_buffer;
  }
  if (from_buffer == n) return n;
  const size_t got = read_raw(out + from_buffer, n - from_buffer);
  offset_ += got;
  return from_buffer + got;
}

bool FileReader::read_line(std::string& line) {
  line.clear();
  bool any = false;
  while (true) {
    if (buf_begin_ == buf_end_) {
      buffer_.resize(kLineBuffer);
      buf_begin_ = 0;
      buf_end_ = read_raw(buffer_.data(), buffer_.size());
      if (buf_end_ == 0) break;
    }
    const char* begin = buffer_.data() + buf_begin_;
    const char* end = buffer_.data() + buf_end_;
    const char* nl =
        static_cast<const char*>(std::memchr(begin, '\n', static_cast<size_t>(end - begin)));
    any = true;
    if (nl) {
      line.append(begin, nl);
      const auto used = static_cast<size_t>(nl - begin) + 1;
      buf_begin_ += used;
      offset_ += used;
      break;
    }
    line.append(begin, end);
    offset_ += static_cast<size_t>(end - begin);
    buf_begin_ = buf_end_;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return any;
}

}  // namespace osprey::data
