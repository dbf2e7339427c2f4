// Helpers shared by io/'s tests (not part of the library): a scratch directory removed at the end
// of each test, whole-file byte access, tensors of every dtype with seeded content, and running a
// Python snippet as an independent reader or writer of files.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "osprey/tensor/factory.h"
#include "osprey/tensor/tensor.h"

namespace osprey::io::testing {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            fmt::format("osprey_io_{}_{}_{:08x}", info ? info->name() : "test", ::getpid(), rd());
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  // Names of the entries in the directory, sorted.
  std::vector<std::string> entries() const { return list(path_); }
  static std::vector<std::string> list(const fs::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  fs::path path_;
};

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
inline void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The raw bytes of a tensor's elements in row-major order.
inline std::string tensor_bytes(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.raw_data()), c.nbytes());
}

// Every bit pattern is fair game (NaNs included) except for bool, which holds 0 or 1.
inline Tensor random_bits_tensor(DType dtype, const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(shape, {dtype});
  std::mt19937 gen(seed);
  auto* p = static_cast<unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.nbytes(); ++i) {
    p[i] = static_cast<unsigned char>(dtype == DType::boolean ? gen() & 1u : gen() & 0xffu);
  }
  return t;
}

// Finite values that every dtype holds (small integers scaled by 1/4 for floats).
inline Tensor valued_tensor(DType dtype, const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& x : v) {
    const int r = static_cast<int>(gen() % 41) - 20;  // [-20, 20]
    if (dtype == DType::boolean)
      x = r > 0 ? 1.0 : 0.0;
    else if (dtype == DType::uint8)
      x = r + 20;
    else if (is_floating(dtype))
      x = r / 4.0;
    else
      x = r;
  }
  Tensor t = from_vector<double>(v, shape);
  return t.to(dtype);
}

inline bool have_python(bool need_numpy) {
  const char* cmd = need_numpy ? "/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1"
                               : "/usr/bin/python3 -c 'import json, struct' > /dev/null 2>&1";
  return std::system(cmd) == 0;
}

// Writes `script` to dir/name.py, runs /usr/bin/python3 on it with `args`, returns its stdout;
// a non-zero exit fails the test (with the output) and returns "".
inline std::string run_python(const fs::path& dir, const std::string& name,
                              const std::string& script, const std::string& args) {
  const fs::path py = dir / (name + ".py");
  write_bytes(py, script);
  const std::string cmd = "/usr/bin/python3 " + py.string() + " " + args + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return "";
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int rc = ::pclose(pipe);
  if (rc != 0) {
    ADD_FAILURE() << "python exited with status " << rc << ":\n" << out;
    return "";
  }
  return out;
}

}  // namespace osprey::io::testing
