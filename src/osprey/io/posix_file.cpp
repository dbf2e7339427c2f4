#include "osprey/io/posix_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <system_error>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/core/fault_injection.h"

namespace osprey::io {

namespace detail {

void throw_errno(const std::filesystem::path& path, std::string_view what, int err) {
  throw IoError(
      fmt::format("{}: {}: {}", path.string(), what, std::generic_category().message(err)));
}

std::filesystem::path random_sibling(const std::filesystem::path& target, std::string_view tag) {
  // splitmix64 over a process-wide counter seeded once from random_device: unique within the
  // process, unpredictable enough across processes; callers still create with O_EXCL and retry.
  static std::atomic<uint64_t> counter{(static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                       static_cast<uint64_t>(::getpid())};
  uint64_t z = counter.fetch_add(0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string suffix(6, 'a');
  for (char& c : suffix) {
    c = kAlphabet[z % 36];
    z /= 36;
  }
  std::filesystem::path p = target;
  p += fmt::format(".{}-{}-{}", tag, ::getpid(), suffix);
  return p;
}

int remove_stale_temporaries(const std::filesystem::path& target) noexcept {
  namespace fs = std::filesystem;
  try {
    const std::string prefix = target.filename().string() + ".tmp-";
    const fs::path dir = parent_directory(target);
    std::vector<fs::path> stale;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
      // "<pid>-<6 characters>"; anything else is an older osprey's "<6 characters>", stale too.
      const std::string rest = name.substr(prefix.size());
      const size_t dash = rest.find('-');
      long pid = 0;
      if (dash != std::string::npos && dash > 0) {
        const auto [end_ptr, err] = std::from_chars(rest.data(), rest.data() + dash, pid);
        if (err != std::errc() || end_ptr != rest.data() + dash) pid = 0;
      }
      const bool alive = pid > 0 && (pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 ||
                                     errno == EPERM);
      if (!alive) stale.push_back(it->path());
    }
    int removed = 0;
    for (const fs::path& p : stale) {
      if (fs::remove_all(p, ec) > 0 && !ec) ++removed;
    }
    return removed;
  } catch (...) {
    return 0;
  }
}

}  // namespace detail

File::~File() {
  if (fd_ >= 0) ::close(fd_);  // errors are reported only by an explicit close()
}

File::File(File&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

File File::open_read(const std::filesystem::path& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) detail::throw_errno(path, "cannot open for reading", errno);
  return File(fd, path);
}

File File::try_create_exclusive(const std::filesystem::path& path, int& err) noexcept {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  } while (fd < 0 && errno == EINTR);
  err = fd < 0 ? errno : 0;
  if (fd < 0) return File();
  try {
    return File(fd, path);
  } catch (...) {  // copying the path ran out of memory
    ::close(fd);
    err = ENOMEM;
    return File();
  }
}

File File::create_exclusive(const std::filesystem::path& path) {
  int err = 0;
  File f = try_create_exclusive(path, err);
  if (!f.is_open()) detail::throw_errno(path, "cannot create", err);
  return f;
}

uint64_t File::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) detail::throw_errno(path_, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) {
    throw IoError(fmt::format("{}: not a regular file", path_.string()));
  }
  return static_cast<uint64_t>(st.st_size);
}

void File::read_exact_at(void* dst, size_t n, uint64_t offset) const {
  auto* p = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      detail::throw_errno(path_, fmt::format("read of {} bytes at offset {} failed", n, offset),
                          errno);
    }
    if (r == 0) {
      throw IoError(
          fmt::format("{}: unexpected end of file at offset {} (wanted {} bytes at offset {})",
                      path_.string(), offset + done, n, offset));
    }
    done += static_cast<size_t>(r);
  }
}

void File::write_all(const void* src, size_t n) {
  if (const int err = fault_point("write"))
    detail::throw_errno(path_, fmt::format("write of {} bytes failed", n), err);
  const auto* p = static_cast<const char*>(src);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd_, p + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      detail::throw_errno(path_, fmt::format("write of {} bytes failed", n - done), errno);
    }
    done += static_cast<size_t>(w);
  }
}

void File::sync() {
  if (const int err = fault_point("fsync")) detail::throw_errno(path_, "fsync failed", err);
  if (::fsync(fd_) != 0) detail::throw_errno(path_, "fsync failed", errno);
}

void File::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  // Linux releases the descriptor even when close fails, so it is never retried.
  if (::close(fd) != 0 && errno != EINTR) detail::throw_errno(path_, "close failed", errno);
}

std::string read_file(const std::filesystem::path& path) {
  File f = File::open_read(path);
  std::string out(static_cast<size_t>(f.size()), '\0');
  f.read_exact_at(out.data(), out.size(), 0);
  return out;
}

void sync_directory(const std::filesystem::path& dir) {
  if (const int err = fault_point("fsync"))
    detail::throw_errno(dir, "fsync of directory failed", err);
  int fd;
  do {
    fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) detail::throw_errno(dir, "cannot open directory to fsync it", errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL); there is nothing more to do there.
  if (rc != 0 && err != EINVAL && err != EROFS)
    detail::throw_errno(dir, "fsync of directory failed", err);
}

std::filesystem::path parent_directory(const std::filesystem::path& path) {
  std::filesystem::path parent = path.parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

}  // namespace osprey::io
