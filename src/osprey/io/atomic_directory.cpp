#include "osprey/io/atomic_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

#include "osprey/core/error.h"
#include "osprey/core/fault_injection.h"
#include "osprey/io/posix_file.h"

namespace osprey::io {

namespace {

namespace fs = std::filesystem;

constexpr int kDirectoryCreateAttempts = 16;

// "fmnist_best/" and "./fmnist_best" name the same target as "fmnist_best".
fs::path normalize_target(const fs::path& target) {
  fs::path t = target.lexically_normal();
  if (!t.has_filename() && t.has_parent_path()) t = t.parent_path();
  const std::string name = t.filename().string();
  OSPREY_CHECK(!name.empty() && name != "." && name != "..",
               "atomic directory write: the target must name a directory. Received: \"{}\"",
               target.string());
  return t;
}

// Creates a fresh sibling directory "<target>.<tag>-XXXXXX" (mode 0777 & ~umask).
fs::path make_sibling_directory(const fs::path& target) {
  for (int attempt = 0;; ++attempt) {
    fs::path p = detail::random_sibling(target, "tmp");
    if (::mkdir(p.c_str(), 0777) == 0) return p;
    if (errno != EEXIST || attempt + 1 >= kDirectoryCreateAttempts) {
      detail::throw_errno(target, fmt::format("cannot create staging directory {}", p.string()),
                          errno);
    }
  }
}

void sync_file(const fs::path& p) {
  if (const int err = fault_point("fsync")) detail::throw_errno(p, "fsync failed", err);
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) detail::throw_errno(p, "cannot open to fsync", errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) detail::throw_errno(p, "fsync failed", err);
}

// Every regular file and directory below root, and root itself, made durable.
void sync_tree(const fs::path& root) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_regular_file(st)) sync_file(it->path());
    if (fs::is_directory(st)) sync_directory(it->path());
  }
  if (ec)
    throw IoError(
        fmt::format("{}: cannot list staging directory: {}", root.string(), ec.message()));
  sync_directory(root);
}

void remove_tree_quietly(const fs::path& p) noexcept {
  std::error_code ec;
  fs::remove_all(p, ec);
}

// Atomic swap of two existing paths; false when the file system cannot do it.
bool exchange(const fs::path& a, const fs::path& b) {
#if defined(RENAME_EXCHANGE)
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
  if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) return false;
  detail::throw_errno(b, fmt::format("cannot exchange it with {}", a.string()), errno);
#else
  return false;
#endif
}

}  // namespace

AtomicDirectoryWriter::AtomicDirectoryWriter(fs::path target) : target_(normalize_target(target)) {
  struct stat st {};
  if (::lstat(target_.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    throw IoError(
        fmt::format("{}: exists and is not a directory; refusing to replace it", target_.string()));
  }
  detail::remove_stale_temporaries(target_);  // what earlier saves killed half-way left
  staging_ = make_sibling_directory(target_);
}

AtomicDirectoryWriter::~AtomicDirectoryWriter() { abort(); }

void AtomicDirectoryWriter::abort() noexcept {
  if (committed_ || staging_.empty()) return;
  remove_tree_quietly(staging_);
  staging_.clear();
}

void AtomicDirectoryWriter::commit() {
  OSPREY_CHECK_T(IoError, !committed_ && !staging_.empty(), "{}: commit after commit or abort",
                 target_.string());
  try {
    sync_tree(staging_);
    struct stat st {};
    const bool target_exists = ::lstat(target_.c_str(), &st) == 0;
    if (target_exists && !S_ISDIR(st.st_mode)) {
      throw IoError(fmt::format("{}: exists and is not a directory; refusing to replace it",
                                target_.string()));
    }
    if (const int err = fault_point("rename")) {
      detail::throw_errno(target_, fmt::format("cannot rename {} to it", staging_.string()), err);
    }
    if (!target_exists) {
      if (std::rename(staging_.c_str(), target_.c_str()) != 0) {
        detail::throw_errno(target_, fmt::format("cannot rename {} to it", staging_.string()),
                            errno);
      }
    } else if (exchange(staging_, target_)) {
      remove_tree_quietly(staging_);  // now holds the old save
    } else {
      const fs::path old = detail::random_sibling(target_, "old");
      if (std::rename(target_.c_str(), old.c_str()) != 0) {
        detail::throw_errno(target_, fmt::format("cannot move it aside to {}", old.string()),
                            errno);
      }
      if (std::rename(staging_.c_str(), target_.c_str()) != 0) {
        const int err = errno;
        std::rename(old.c_str(), target_.c_str());  // put the old save back
        detail::throw_errno(target_, fmt::format("cannot rename {} to it", staging_.string()), err);
      }
      remove_tree_quietly(old);
    }
  } catch (...) {
    abort();
    throw;
  }
  committed_ = true;
  sync_directory(parent_directory(target_));
}

void check_directory_destination(const fs::path& target_in) {
  const fs::path target = fs::absolute(normalize_target(target_in));
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    throw IoError(fmt::format("{}: exists and is not a directory; cannot save a model there",
                              target.string()));
  }
  // The nearest existing ancestor: where a save creates what is missing, then renames into.
  fs::path existing = target.parent_path();
  while (::stat(existing.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      detail::throw_errno(existing, "cannot save below it", errno);
    existing = existing.parent_path();
  }
  if (!S_ISDIR(st.st_mode)) {
    throw IoError(fmt::format("{}: is a file where a folder is expected (to save {})",
                              existing.string(), target.string()));
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    detail::throw_errno(existing, fmt::format("cannot save {} here", target.string()), errno);
  }
}

void atomic_write_directory(const fs::path& target,
                            const std::function<void(const fs::path& staging)>& fill) {
  AtomicDirectoryWriter w(target);
  fill(w.staging());
  w.commit();
}

}  // namespace osprey::io
