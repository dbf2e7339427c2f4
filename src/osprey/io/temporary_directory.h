// A fresh private folder in the system's temporary directory ($TMPDIR, else /tmp), removed with
// everything in it when the object goes: for files that must be written somewhere and thrown
// away (a non-chief worker's save, measuring a model's size on disk).
//   const io::TemporaryDirectory tmp("osprey-worker1");   // /tmp/osprey-worker1-Xa81Qz
//   save(tmp.path() / "model");
#pragma once

#include <filesystem>
#include <string_view>

namespace osprey::io {

class TemporaryDirectory {
 public:
  // "<prefix>-XXXXXX" under the temporary directory; IoError naming it when it cannot be made.
  explicit TemporaryDirectory(std::string_view prefix);
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace osprey::io
