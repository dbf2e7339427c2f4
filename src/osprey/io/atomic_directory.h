// Atomic directory saves: `model.save("fmnist_best")` writes config.json + model.safetensors, and
// an existing save must be replaced only once the new one is complete. Files are written into a
// staging sibling "<target>.tmp-XXXXXX", every file and directory in it is fsynced, then it is
// moved into place.
//
// What POSIX makes atomic, and so what this guarantees:
// - rename(2) of a directory onto a path that does not exist (or is an empty directory) is
//   atomic: a first save appears all at once.
// - rename(2) cannot replace a non-empty directory (ENOTEMPTY). Linux's renameat2(2) with
//   RENAME_EXCHANGE swaps two paths atomically (ext4, xfs, btrfs, tmpfs, ...): the target holds
//   the complete old save until the instant it holds the complete new one; the old one, now in
//   the staging path, is then deleted.
// - Where RENAME_EXCHANGE is unsupported (EINVAL), the fallback renames the old save aside to
//   "<target>.old-XXXXXX", renames the new one in, then deletes the old. A crash between the two
//   renames leaves no <target>, but a complete save always exists under one of the two names.
// A crash before the move leaves the old save intact and a stale "<target>.tmp-<pid>-*" sibling,
// which the next save of the same target removes once its process is gone.
//   atomic_write_directory("fmnist_best", [&](const std::filesystem::path& dir) {
//     write_json_file(dir / "config.json", config);
//     save_safetensors(dir / "model.safetensors", weights);
//   });
#pragma once

#include <filesystem>
#include <functional>

namespace osprey::io {

class AtomicDirectoryWriter {
 public:
  // Creates the staging directory; throws IoError when the target exists and is not a directory.
  explicit AtomicDirectoryWriter(std::filesystem::path target);
  ~AtomicDirectoryWriter();  // removes the staging directory unless committed
  AtomicDirectoryWriter(const AtomicDirectoryWriter&) = delete;
  AtomicDirectoryWriter& operator=(const AtomicDirectoryWriter&) = delete;

  // Where to write the files of the new save (by any means: plain or atomic writes).
  const std::filesystem::path& staging() const noexcept { return staging_; }
  const std::filesystem::path& target() const noexcept { return target_; }
  std::filesystem::path path_for(const std::filesystem::path& relative) const {
    return staging_ / relative;
  }

  // fsyncs everything under staging(), moves it into place (see above), fsyncs the parent.
  void commit();
  void abort() noexcept;  // deletes the staging directory; the target is untouched

 private:
  std::filesystem::path target_;
  std::filesystem::path staging_;
  bool committed_ = false;
};

// Fails now, rather than after hours of training, when a save to target could not succeed: target
// exists and is not a directory, an ancestor is a file where a folder is expected, or the nearest
// existing ancestor (where the save would create what is missing) is read-only or not writable.
// IoError naming the path. Creates nothing.
void check_directory_destination(const std::filesystem::path& target);

// Calls fill(staging) and commits when it returns; when it throws, the staging directory is
// removed, the existing target is untouched and the exception propagates.
void atomic_write_directory(const std::filesystem::path& target,
                            const std::function<void(const std::filesystem::path& staging)>& fill);

}  // namespace osprey::io
