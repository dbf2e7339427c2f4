#include "osprey/io/temporary_directory.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "osprey/io/posix_file.h"

namespace osprey::io {

TemporaryDirectory::TemporaryDirectory(std::string_view prefix) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / fmt::format("{}-XXXXXX", prefix)).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    detail::throw_errno(pattern, "cannot create a temporary folder", errno);
  }
  path_ = pattern;
}

TemporaryDirectory::~TemporaryDirectory() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace osprey::io
