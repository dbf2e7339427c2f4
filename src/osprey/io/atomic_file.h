// Atomic file writes: readers (and a process restarted after a crash or power loss) see either
// the old content of the target or the complete new content, never a torn mix. Checkpoints,
// configs and tuner state are all written through here (DESIGN.md, Reliability principles).
//
// How: bytes go to a temporary sibling "<target>.tmp-XXXXXX" (same directory, so the same file
// system and rename(2) is atomic), the temporary is fsynced and closed, renamed over the target,
// and the directory is fsynced so the rename itself survives a power loss. On POSIX rename(2)
// replacing a file is atomic: there is no instant at which the target is missing. Anything that
// fails (or throws, in the fill callback) removes the temporary and leaves the old file as it
// was. A crash (kill -9, power loss) can leave a stale "*.tmp-*" sibling behind, never a torn
// target. The new file has mode 0666 & ~umask; a symlink target is replaced, not followed.
//   atomic_write_file("config.json", text);
//   uint32_t crc = atomic_write_file("w.bin", [&](AtomicFileWriter& w) { w.write(p, n); });
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "osprey/io/posix_file.h"

namespace osprey::io {

struct AtomicFileOptions {
  bool checksum = true;  // keep a running CRC32C of the bytes written (crc32c())
};

class AtomicFileWriter {
 public:
  // Creates the temporary file; throws IoError (path + errno text) when it cannot.
  explicit AtomicFileWriter(std::filesystem::path target, AtomicFileOptions options = {});
  ~AtomicFileWriter();  // removes the temporary unless commit() succeeded
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends bytes; small writes are buffered, large ones go straight to the file.
  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }

  uint64_t bytes_written() const noexcept { return bytes_; }
  // CRC32C of everything written so far (0 when checksums are off).
  uint32_t crc32c() const noexcept { return crc_; }
  const std::filesystem::path& target() const noexcept { return target_; }
  const std::filesystem::path& temporary_path() const noexcept { return tmp_; }
  bool committed() const noexcept { return committed_; }

  // Flush, fsync, close, rename over the target, fsync the directory. After a failure before the
  // rename the old target is intact and the temporary is gone; a failure of the final directory
  // fsync means the new content is in place but may not survive a power loss.
  void commit();
  // Discards what was written; the target is untouched. Safe to call more than once.
  void abort() noexcept;

 private:
  void flush();

  std::filesystem::path target_;
  std::filesystem::path tmp_;
  File file_;
  AtomicFileOptions options_;
  std::string buffer_;
  uint64_t bytes_ = 0;
  uint32_t crc_ = 0;
  bool committed_ = false;
};

// Replaces target with contents atomically.
void atomic_write_file(const std::filesystem::path& target, std::string_view contents,
                       AtomicFileOptions options = {});
// Calls fill with a writer on the temporary; commits when fill returns, discards (and rethrows)
// when it throws. Returns the CRC32C of the bytes written.
uint32_t atomic_write_file(const std::filesystem::path& target,
                           const std::function<void(AtomicFileWriter&)>& fill,
                           AtomicFileOptions options = {});

}  // namespace osprey::io
