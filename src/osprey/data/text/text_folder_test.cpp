// Folders of .txt files as keras.utils.text_dataset_from_directory reads them: sorted class
// folders, labels in three modes, a seeded shuffle split into training and validation (the last
// int(split * n) files validate, as Keras's get_training_or_validation_split), max_length, and
// errors that name the folder.
#include "osprey/data/text/text_folder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"
#include "osprey/data/files_test.h"

namespace osprey::data::text {
namespace {

using testing::TempDir;
using testing::write_text;
using Strings = std::vector<std::string>;

using osprey::testing::error_of;

// reviews/neg: "bad movie" (a.txt), "awful" (b.txt); reviews/pos: "great film" (c.txt),
// "loved it" (sub/d.TXT), and notes.md, which is not a text file.
std::string make_reviews(const TempDir& dir) {
  const std::filesystem::path root = dir.path() / "reviews";
  std::filesystem::create_directories(root / "neg");
  std::filesystem::create_directories(root / "pos" / "sub");
  write_text((root / "neg" / "a.txt").string(), "bad movie");
  write_text((root / "neg" / "b.txt").string(), "awful");
  write_text((root / "pos" / "c.txt").string(), "great film");
  write_text((root / "pos" / "sub" / "d.TXT").string(), "loved it");
  write_text((root / "pos" / "notes.md").string(), "ignored");
  write_text((root / "README.txt").string(), "outside the class folders");
  return root.string();
}

TEST(TextFolderTest, SortedClassesAndLabelModes) {
  TempDir dir;
  const std::string root = make_reviews(dir);
  const TextFolderData d = text_dataset_from_directory(root, {.shuffle = false});
  EXPECT_EQ(d.class_names, (Strings{"neg", "pos"}));
  EXPECT_EQ(d.texts, (Strings{"bad movie", "awful", "great film", "loved it"}));
  EXPECT_EQ(d.labels.dtype(), DType::int64);
  EXPECT_EQ(d.labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1}));

  const TextFolderData cat =
      text_dataset_from_directory(root, {.label_mode = "categorical", .shuffle = false});
  EXPECT_EQ(cat.labels.shape(), (Shape{4, 2}));
  EXPECT_EQ(cat.labels.to_vector<float>(), (std::vector<float>{1, 0, 1, 0, 0, 1, 0, 1}));
  const TextFolderData bin =
      text_dataset_from_directory(root, {.label_mode = "binary", .shuffle = false});
  EXPECT_EQ(bin.labels.shape(), (Shape{4, 1}));
  EXPECT_EQ(bin.labels.to_vector<float>(), (std::vector<float>{0, 0, 1, 1}));

  const TextFolderData cut = text_dataset_from_directory(root, {.shuffle = false, .max_length = 4});
  EXPECT_EQ(cut.texts, (Strings{"bad ", "awfu", "grea", "love"}));
}

TEST(TextFolderTest, SeededSplitIsDisjointAndFeedsTextVectorization) {
  TempDir dir;
  const std::string root = make_reviews(dir);
  const TextFolderOptions base = {.batch_size = 2, .seed = 7, .validation_split = 0.25};
  TextFolderOptions t = base, v = base;
  t.subset = "training";
  v.subset = "validation";
  const TextFolderData train = text_dataset_from_directory(root, t);
  const TextFolderData val = text_dataset_from_directory(root, v);
  EXPECT_EQ(train.size(), 3);  // int(0.25 * 4) = 1 file validates
  EXPECT_EQ(val.size(), 1);
  Strings all = train.files;
  all.insert(all.end(), val.files.begin(), val.files.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), 4u);
  // The same seed gives the same order.
  EXPECT_EQ(text_dataset_from_directory(root, t).files, train.files);

  TextVectorization vectorize({.output_sequence_length = 3});
  vectorize.adapt(train.texts);
  int64_t rows = 0;
  for (auto& b : train.dataset(vectorize)) {
    EXPECT_EQ(b[0].dtype(), DType::int64);
    EXPECT_EQ(b[0].size(1), 3);
    EXPECT_EQ(b[1].dtype(), DType::int64);
    rows += b[0].size(0);
  }
  EXPECT_EQ(rows, 3);
  EXPECT_EQ(train.dataset(vectorize).cardinality(), 2);  // batches of 2: 2 + 1
}

TEST(TextFolderTest, ErrorsNameTheFolder) {
  TempDir dir;
  EXPECT_EQ(error_of<IoError>([&] { text_dataset_from_directory(dir / "missing"); }),
            "text folder '" + (dir / "missing") + "': not a directory");
  std::filesystem::create_directories(dir.path() / "flat");
  write_text(dir / "flat/a.txt", "no class folders");
  EXPECT_EQ(error_of<IoError>([&] { text_dataset_from_directory(dir / "flat"); }),
            "text folder '" + (dir / "flat") +
                "': no class folders in it (expected one subfolder per class, each holding that "
                "class's examples)");
  std::filesystem::create_directories(dir.path() / "gap/cats");
  std::filesystem::create_directories(dir.path() / "gap/dogs");
  write_text(dir / "gap/cats/a.txt", "meow");
  write_text(dir / "gap/dogs/b.md", "not text");
  EXPECT_EQ(error_of<IoError>([&] { text_dataset_from_directory(dir / "gap"); }),
            "text folder '" + (dir / "gap") + "': class folder 'dogs' holds no .txt file");
  const std::string root = make_reviews(dir);
  EXPECT_EQ(
      error_of<ValueError>([&] { text_dataset_from_directory(root, {.label_mode = "sparse"}); }),
      "text_dataset_from_directory: label_mode must be one of \"int\", \"categorical\", "
      "\"binary\". Received: label_mode=\"sparse\"");
  EXPECT_EQ(
      error_of<ValueError>([&] { text_dataset_from_directory(root, {.validation_split = 0.2}); }),
      "text_dataset_from_directory: subset and validation_split go together (a split "
      "needs a subset to pick). Received: subset=\"\", validation_split=0.2");
  std::filesystem::create_directories(dir.path() / "three/a");
  std::filesystem::create_directories(dir.path() / "three/b");
  std::filesystem::create_directories(dir.path() / "three/c");
  for (const char* c : {"a", "b", "c"}) write_text(dir / (std::string("three/") + c + "/x.txt"), c);
  EXPECT_EQ(
      error_of<ValueError>(
          [&] { text_dataset_from_directory(dir / "three", {.label_mode = "binary"}); }),
      "text_dataset_from_directory: label_mode \"binary\" needs exactly 2 classes. Received: 3 "
      "(a, b, c)");
}

}  // namespace
}  // namespace osprey::data::text
