// The folder layout Keras's *_dataset_from_directory functions read: one subfolder per class,
// the sorted subfolder names are the classes (class i = the i-th name), and every matching file
// below a class folder (recursively, sorted by path) is one example of that class. Shared by
// image_folder.h and text/text_folder.h, which only decode the files differently.
//   ClassFiles c = list_class_files("reviews/", "text", [](const fs::path& p) {...});
//   c.class_names;   // {"neg", "pos"};   c.files[i] is an example of class c.labels[i]
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace osprey::data {

struct ClassFiles {
  std::vector<std::string> class_names;  // sorted
  std::vector<std::string> files;        // class by class, each class's sorted
  std::vector<int64_t> labels;           // labels[i]: the class of files[i]
  std::vector<int64_t> counts;           // files per class
};

// `kind` names the folder in errors ("image", "text"): IoError "<kind> folder 'DIR': not a
// directory", and "... no class folders in it" when it has no subfolder.
ClassFiles list_class_files(const std::string& directory, const std::string& kind,
                            const std::function<bool(const std::filesystem::path&)>& keep);

// A seeded Fisher-Yates shuffle of files and labels together, on a counter-based stream, so the
// order is the same on every machine (not NumPy's: the rows differ from Keras's for a seed).
void shuffle_class_files(ClassFiles& files, uint64_t seed);

// True when the file name ends with one of `extensions` (".txt"), compared case-insensitively.
bool has_extension(const std::filesystem::path& file,
                   std::initializer_list<const char*> extensions);

}  // namespace osprey::data
