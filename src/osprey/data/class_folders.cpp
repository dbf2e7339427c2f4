#include "osprey/data/class_folders.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "osprey/core/error.h"
#include "osprey/core/rng.h"

namespace osprey::data {

namespace fs = std::filesystem;

ClassFiles list_class_files(const std::string& directory, const std::string& kind,
                            const std::function<bool(const fs::path&)>& keep) {
  std::error_code ec;
  OSPREY_CHECK_T(IoError, fs::is_directory(directory, ec), "{} folder '{}': not a directory", kind,
                 directory);
  ClassFiles out;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (entry.is_directory()) out.class_names.push_back(entry.path().filename().string());
  }
  std::sort(out.class_names.begin(), out.class_names.end());
  OSPREY_CHECK_T(IoError, !out.class_names.empty(),
                 "{} folder '{}': no class folders in it (expected one subfolder per class, "
                 "each holding that class's examples)",
                 kind, directory);
  for (size_t k = 0; k < out.class_names.size(); ++k) {
    std::vector<std::string> files;
    for (const auto& entry :
         fs::recursive_directory_iterator(fs::path(directory) / out.class_names[k])) {
      if (entry.is_regular_file() && keep(entry.path())) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    out.files.insert(out.files.end(), files.begin(), files.end());
    out.labels.insert(out.labels.end(), files.size(), static_cast<int64_t>(k));
    out.counts.push_back(static_cast<int64_t>(files.size()));
  }
  return out;
}

void shuffle_class_files(ClassFiles& files, uint64_t seed) {
  const Philox rng(seed);
  const auto n = static_cast<int64_t>(files.files.size());
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng(static_cast<uint64_t>(i))[0] % (i + 1));
    std::swap(files.files[static_cast<size_t>(i)], files.files[static_cast<size_t>(j)]);
    std::swap(files.labels[static_cast<size_t>(i)], files.labels[static_cast<size_t>(j)]);
  }
}

bool has_extension(const fs::path& file, std::initializer_list<const char*> extensions) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(extensions.begin(), extensions.end(), [&](const char* e) { return ext == e; });
}

}  // namespace osprey::data
