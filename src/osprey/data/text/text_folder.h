// A folder of text files, one subfolder per class, read as keras.utils.text_dataset_from_directory
// reads it (class_folders.h: sorted class names, every .txt file below a class folder). A Dataset
// holds numeric tensors, so the texts come back as strings beside their label tensor, and
// dataset(vectorize) turns them into the batches fit() takes: text -> TextVectorization ->
// model, with the vocabulary adapted on the training texts only.
//   auto train = text::text_dataset_from_directory("aclImdb/train",
//       {.validation_split = 0.2, .subset = "training", .seed = 1337});
//   auto val = text::text_dataset_from_directory("aclImdb/train",
//       {.validation_split = 0.2, .subset = "validation", .seed = 1337});  // the other 20%
//   text::TextVectorization vectorize({.max_tokens = 20000, .output_sequence_length = 500});
//   vectorize.adapt(train.texts);
//   model.fit(train.dataset(vectorize), {.epochs = 3, .validation_data = val.dataset(vectorize)});
// Where osprey differs: the seeded shuffle is osprey's (class_folders.h), so for a seed the
// split holds other files than Keras's; subset "both" is two calls with one seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "osprey/data/dataset.h"
#include "osprey/data/text/text_vectorization.h"
#include "osprey/tensor/tensor.h"

namespace osprey::data::text {

struct TextFolderOptions {
  // "int": int64 [N]; "categorical": float32 [N, classes] one-hot; "binary": float32 [N, 1]
  // (exactly two classes).
  std::string label_mode = "int";
  int64_t batch_size = 32;  // dataset()'s batches
  bool shuffle = true;      // false: class by class, files sorted
  uint64_t seed = 0;
  double validation_split = 0;  // the last floor(split * N) files (after shuffling) validate
  std::string subset = "";      // "training" or "validation" with a split; "" : every file
  std::optional<int64_t> max_length = std::nullopt;  // keep each text's first bytes
};

struct TextFolderData {
  std::vector<std::string> texts;        // one per file
  Tensor labels;                         // [N] or [N, C] as label_mode says
  std::vector<std::string> class_names;  // the sorted subfolder names
  std::vector<std::string> files;        // the file of texts[i]
  int64_t batch_size = 32;

  int64_t size() const { return static_cast<int64_t>(texts.size()); }
  // {vectorize(texts), labels} in batches of batch_size, in this split's order.
  Dataset dataset(const TextVectorization& vectorize) const;
};

// IoError naming the folder when it is missing or has no class subfolder, naming the class
// folder that holds no .txt file, and naming a file that cannot be read; ValueError naming the
// option for a bad label_mode, subset or validation_split.
TextFolderData text_dataset_from_directory(const std::string& directory,
                                           const TextFolderOptions& options = {});

}  // namespace osprey::data::text
