// Helpers for the data tests: a fresh temporary directory per test, removed afterwards, and
// small functions to write bytes and read a Dataset back into host vectors.
//   TempDir dir;  write_bytes(dir / "x.idx", {0, 0, 8, 1, 0, 0, 0, 0});
//   std::vector<int64_t> v = values(Dataset::range(5));   // {0, 1, 2, 3, 4}
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "osprey/data/dataset.h"

namespace osprey::data::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("osprey_data_{}_{}_{}", getpid(), info ? info->name() : "x", counter++);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

inline void write_gzip(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

inline std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Component `j` of every element of one pass, flattened, as int64.
inline std::vector<int64_t> values(Iterator it, size_t j = 0) {
  std::vector<int64_t> out;
  while (auto e = it.next()) {
    for (int64_t v : (*e)[j].to_vector<int64_t>()) out.push_back(v);
  }
  return out;
}
inline std::vector<int64_t> values(const Dataset& ds, size_t j = 0) {
  return values(ds.iterator(), j);
}

}  // namespace osprey::data::testing
