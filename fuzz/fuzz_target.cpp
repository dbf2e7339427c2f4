#include "fuzz_target.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>

namespace osprey::fuzz {

namespace {
// Reachable until exit, so LeakSanitizer does not count it; the files go at exit.
std::map<std::string, std::filesystem::path, std::less<>>* g_files = nullptr;

void remove_scratch_files() {
  std::error_code ec;
  for (const auto& [extension, path] : *g_files) std::filesystem::remove(path, ec);
}
}  // namespace

bool verbose() {
  static const bool on = std::getenv("OSPREY_FUZZ_VERBOSE") != nullptr;
  return on;
}

std::filesystem::path scratch_file(std::string_view bytes, std::string_view extension) {
  if (g_files == nullptr) {
    g_files = new std::map<std::string, std::filesystem::path, std::less<>>();
    std::atexit(remove_scratch_files);
  }
  auto it = g_files->find(extension);
  if (it == g_files->end()) {
    const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                       fmt::format("osprey_fuzz_{}{}", ::getpid(), extension);
    it = g_files->emplace(std::string(extension), path).first;
  }
  std::ofstream out(it->second, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  // A harness that cannot write its scratch file tests nothing: stop loudly.
  if (!out) std::abort();
  return it->second;
}

}  // namespace osprey::fuzz
