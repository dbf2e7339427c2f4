#include "osprey/data/text/text_folder.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "osprey/core/error.h"
#include "osprey/data/class_folders.h"
#include "osprey/data/labeled_arrays.h"

namespace osprey::data::text {
namespace {

constexpr const char* kOp = "text_dataset_from_directory";

void check_text_folder_options(const TextFolderOptions& o) {
  OSPREY_CHECK(o.label_mode == "int" || o.label_mode == "categorical" || o.label_mode == "binary",
               "{}: label_mode must be one of \"int\", \"categorical\", \"binary\". Received: "
               "label_mode=\"{}\"",
               kOp, o.label_mode);
  OSPREY_CHECK(o.subset.empty() || o.subset == "training" || o.subset == "validation",
               "{}: subset must be \"training\", \"validation\" or empty. Received: "
               "subset=\"{}\"",
               kOp, o.subset);
  OSPREY_CHECK(o.validation_split >= 0 && o.validation_split < 1,
               "{}: validation_split must be in [0, 1). Received: validation_split={}", kOp,
               o.validation_split);
  OSPREY_CHECK(o.subset.empty() == (o.validation_split == 0),
               "{}: subset and validation_split go together (a split needs a subset to pick). "
               "Received: subset=\"{}\", validation_split={}",
               kOp, o.subset, o.validation_split);
  OSPREY_CHECK(o.batch_size > 0, "{}: batch_size must be positive. Received: batch_size={}", kOp,
               o.batch_size);
  OSPREY_CHECK(!o.max_length || *o.max_length > 0,
               "{}: max_length must be positive. Received: max_length={}", kOp,
               o.max_length.value_or(0));
}

std::string read_whole_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  OSPREY_CHECK_T(IoError, in.good(), "text file '{}': cannot open", file);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  OSPREY_CHECK_T(IoError, !in.bad(), "text file '{}': cannot read it", file);
  return s;
}

}  // namespace

TextFolderData text_dataset_from_directory(const std::string& directory,
                                           const TextFolderOptions& options) {
  check_text_folder_options(options);
  ClassFiles listed = list_class_files(
      directory, "text", [](const std::filesystem::path& p) { return has_extension(p, {".txt"}); });
  for (size_t k = 0; k < listed.class_names.size(); ++k)
    OSPREY_CHECK_T(IoError, listed.counts[k] > 0,
                   "text folder '{}': class folder '{}' holds no .txt file", directory,
                   listed.class_names[k]);
  const auto classes = static_cast<int64_t>(listed.class_names.size());
  OSPREY_CHECK(options.label_mode != "binary" || classes == 2,
               "{}: label_mode \"binary\" needs exactly 2 classes. Received: {} ({})", kOp, classes,
               fmt::join(listed.class_names, ", "));
  if (options.shuffle) shuffle_class_files(listed, options.seed);

  // Keras's get_training_or_validation_split: the last int(split * n) files validate.
  const auto n = static_cast<int64_t>(listed.files.size());
  const auto n_val = static_cast<int64_t>(options.validation_split * static_cast<double>(n));
  int64_t begin = 0, end = n;
  if (options.subset == "training") end = n - n_val;
  if (options.subset == "validation") begin = n - n_val;
  OSPREY_CHECK_T(IoError, end > begin,
                 "text folder '{}': the {} subset is empty ({} files, validation_split={})",
                 directory, options.subset, n, options.validation_split);

  TextFolderData out;
  out.class_names = listed.class_names;
  out.batch_size = options.batch_size;
  const int64_t rows = end - begin;
  out.labels = options.label_mode == "categorical"
                   ? Tensor::empty(Shape{rows, classes}, {DType::float32})
               : options.label_mode == "binary" ? Tensor::empty(Shape{rows, 1}, {DType::float32})
                                                : Tensor::empty(Shape{rows}, {DType::int64});
  if (options.label_mode == "categorical") out.labels.fill_(0.0);
  for (int64_t i = begin; i < end; ++i) {
    const std::string& file = listed.files[static_cast<size_t>(i)];
    std::string text = read_whole_file(file);
    if (options.max_length && static_cast<int64_t>(text.size()) > *options.max_length)
      text.resize(static_cast<size_t>(*options.max_length));
    out.texts.push_back(std::move(text));
    out.files.push_back(file);
    const int64_t label = listed.labels[static_cast<size_t>(i)], r = i - begin;
    if (options.label_mode == "categorical") {
      out.labels.data<float>()[r * classes + label] = 1.0f;
    } else if (options.label_mode == "binary") {
      out.labels.data<float>()[r] = static_cast<float>(label);
    } else {
      out.labels.data<int64_t>()[r] = label;
    }
  }
  return out;
}

Dataset TextFolderData::dataset(const TextVectorization& vectorize) const {
  return LabeledArrays{vectorize(texts), labels}.batch(batch_size);
}

}  // namespace osprey::data::text
