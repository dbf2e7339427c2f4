// File: a thin RAII wrapper over a POSIX file descriptor that turns every failure into an
// osprey::IoError naming the path, the operation and the errno text. The rest of io/ (atomic
// writes, safetensors, JSON) is written on top of it, so error messages read the same everywhere.
//   File f = File::open_read("model.safetensors");
//   std::string header(64, '\0');  f.read_exact_at(header.data(), header.size(), 8);
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace osprey::io {

class File {
 public:
  File() = default;
  ~File();
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  static File open_read(const std::filesystem::path& path);
  // Creates a new file (O_EXCL: fails when it exists) with mode 0666 & ~umask.
  static File create_exclusive(const std::filesystem::path& path);
  // The same without throwing: a closed File and the errno on failure.
  static File try_create_exclusive(const std::filesystem::path& path, int& err) noexcept;

  bool is_open() const noexcept { return fd_ >= 0; }
  int fd() const noexcept { return fd_; }
  const std::filesystem::path& path() const noexcept { return path_; }

  uint64_t size() const;
  // Reads exactly n bytes at offset; a short file is an IoError naming the offset.
  void read_exact_at(void* dst, size_t n, uint64_t offset) const;
  // Writes all n bytes at the current position (retries short writes and EINTR).
  void write_all(const void* src, size_t n);
  void sync();   // fsync
  void close();  // reports the error of close(2), which can carry a delayed write error

 private:
  File(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

// Reads a whole file into a string (one read of the size fstat reports).
std::string read_file(const std::filesystem::path& path);
// fsyncs a directory so that entries created, renamed or removed in it are durable.
void sync_directory(const std::filesystem::path& dir);
// The directory holding path ("." for a bare file name).
std::filesystem::path parent_directory(const std::filesystem::path& path);

namespace detail {
// Throws IoError "<path>: <what>: <strerror(err)>".
[[noreturn]] void throw_errno(const std::filesystem::path& path, std::string_view what, int err);
// A sibling of target that does not exist yet: "<target>.<tag>-<pid>-<6 random characters>".
std::filesystem::path random_sibling(const std::filesystem::path& target, std::string_view tag);
// Removes the "<target>.tmp-<pid>-*" siblings (files or directories) whose writing process no
// longer runs: what a write killed half-way leaves. Another running process's temporary is left
// alone (pids are this host's: on storage shared between hosts, write each path from one host,
// as chief-only writing does). Errors are ignored: this is cleanup. Returns how many it removed.
int remove_stale_temporaries(const std::filesystem::path& target) noexcept;
}  // namespace detail

}  // namespace osprey::io
