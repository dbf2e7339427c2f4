#include "osprey/io/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "osprey/core/error.h"
#include "osprey/core/fault_injection.h"
#include "osprey/io/crc32c.h"

namespace osprey::io {

namespace {

constexpr size_t kBufferBytes = size_t{1} << 16;  // writes below this are coalesced
constexpr int kFileCreateAttempts = 16;

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path target, AtomicFileOptions options)
    : target_(std::move(target)), options_(options) {
  OSPREY_CHECK(!target_.empty() && target_.has_filename(),
               "atomic write: the target must name a file. Received: \"{}\"", target_.string());
  detail::remove_stale_temporaries(target_);  // what earlier writes killed half-way left
  // O_EXCL + a random suffix: two writers of the same target never share a temporary.
  for (int attempt = 0; !file_.is_open(); ++attempt) {
    tmp_ = detail::random_sibling(target_, "tmp");
    int err = 0;
    file_ = File::try_create_exclusive(tmp_, err);
    if (!file_.is_open() && (err != EEXIST || attempt + 1 >= kFileCreateAttempts)) {
      const std::filesystem::path tmp = std::move(tmp_);
      tmp_.clear();
      detail::throw_errno(target_, fmt::format("cannot create temporary file {}", tmp.string()),
                          err);
    }
  }
  buffer_.reserve(kBufferBytes);
}

AtomicFileWriter::~AtomicFileWriter() { abort(); }

void AtomicFileWriter::write(const void* data, size_t n) {
  OSPREY_CHECK_T(IoError, file_.is_open(), "{}: write after commit or abort", target_.string());
  if (n == 0) return;
  if (options_.checksum) crc_ = io::crc32c(data, n, crc_);
  bytes_ += n;
  if (buffer_.size() + n <= kBufferBytes) {
    buffer_.append(static_cast<const char*>(data), n);
    return;
  }
  flush();
  if (n < kBufferBytes) {
    buffer_.append(static_cast<const char*>(data), n);
  } else {
    file_.write_all(data, n);
  }
}

void AtomicFileWriter::flush() {
  if (buffer_.empty()) return;
  file_.write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFileWriter::commit() {
  OSPREY_CHECK_T(IoError, file_.is_open(), "{}: commit after commit or abort", target_.string());
  try {
    flush();
    file_.sync();
    file_.close();
    const int injected = fault_point("rename");
    if (injected != 0 || std::rename(tmp_.c_str(), target_.c_str()) != 0) {
      detail::throw_errno(target_, fmt::format("cannot rename {} over it", tmp_.string()),
                          injected != 0 ? injected : errno);
    }
  } catch (...) {
    abort();
    throw;
  }
  committed_ = true;
  sync_directory(parent_directory(target_));
}

void AtomicFileWriter::abort() noexcept {
  if (committed_) return;
  if (file_.is_open()) {
    try {
      file_.close();
    } catch (...) {
      // The temporary is removed below; a close error on it does not matter.
    }
  }
  if (!tmp_.empty()) {
    ::unlink(tmp_.c_str());
    tmp_.clear();
  }
  buffer_.clear();
}

void atomic_write_file(const std::filesystem::path& target, std::string_view contents,
                       AtomicFileOptions options) {
  AtomicFileWriter w(target, options);
  w.write(contents);
  w.commit();
}

uint32_t atomic_write_file(const std::filesystem::path& target,
                           const std::function<void(AtomicFileWriter&)>& fill,
                           AtomicFileOptions options) {
  AtomicFileWriter w(target, options);
  fill(w);  // a throw unwinds through ~AtomicFileWriter, which removes the temporary
  w.commit();
  return w.crc32c();
}

}  // namespace osprey::io
