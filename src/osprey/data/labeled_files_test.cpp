// One labelled split from files of any format: the format told from the path, each format read to
// float32 features and int64 class ids, and the errors (labels that are not class ids, features
// and labels of different lengths, a path whose format cannot be told).
#include "osprey/data/labeled_files.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"
#include "osprey/data/files_test.h"
#include "osprey/data/idx.h"
#include "osprey/data/npy.h"

#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace osprey::data {
namespace {

namespace fs = std::filesystem;
using osprey::testing::error_of;
using testing::TempDir;
using testing::write_text;

Tensor tensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t = Tensor::empty(shape, {dtype});
  Tensor view = t.reshape(Shape{t.numel()});  // a view of the same elements
  for (size_t i = 0; i < values.size(); ++i) view.set({static_cast<int64_t>(i)}, values[i]);
  return t;
}

TEST(LabeledFilesTest, TellsTheFormatFromThePath) {
  TempDir dir;
  write_text(dir / "iris.csv", "a,label\n1,0\n");
  fs::create_directories(dir.path() / "arrays");
  write_npy(dir / "arrays/x.npy", tensor(DType::float32, {1, 2}, {1, 2}));
  write_npy(dir / "arrays/y.npy", tensor(DType::int64, {1}, {0}));
  fs::create_directories(dir.path() / "pets/cat");
  fs::create_directories(dir.path() / "fmnist");
  write_text(dir / "fmnist/train-images-idx3-ubyte.gz", "");
  EXPECT_EQ(detect_data_format(dir / "iris.csv"), "csv");
  EXPECT_EQ(detect_data_format(dir / "arrays"), "npy");
  EXPECT_EQ(detect_data_format("a.npy,b.npy"), "npy");
  EXPECT_EQ(detect_data_format("train-images-idx3-ubyte.gz,train-labels-idx1-ubyte.gz"), "idx");
  EXPECT_EQ(detect_data_format(dir / "pets"), "images");
  EXPECT_EQ(detect_data_format(dir / "fmnist"), "fashion_mnist");
  EXPECT_NE(error_of<IoError>([&] { detect_data_format(dir / "missing"); }).find("no such file"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              detect_data_format(dir / "arrays/x.npy");
            }).find("one .npy file holds no labels"),
            std::string::npos);
  fs::create_directories(dir.path() / "nothing");
  EXPECT_NE(error_of<ValueError>([&] {
              detect_data_format(dir / "nothing");
            }).find("cannot tell its format"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] { detect_data_format("a,b,c"); }).find("FEATURES,LABELS"),
            std::string::npos);
}

TEST(LabeledFilesTest, ReadsEachFormatToFloatFeaturesAndClassIds) {
  TempDir dir;
  write_idx(dir / "images.idx", tensor(DType::uint8, {2, 2, 2}, {0, 51, 102, 255, 0, 0, 0, 0}),
            {.gzip = true});
  write_idx(dir / "labels.idx", tensor(DType::uint8, {2}, {3, 1}));
  const LabeledFiles idx = read_labeled_files(dir / "images.idx" + "," + dir / "labels.idx");
  EXPECT_EQ(idx.format, "idx");
  EXPECT_EQ(idx.x.dtype(), DType::float32);
  EXPECT_EQ(idx.x.shape(), (Shape{2, 2, 2}));
  EXPECT_FLOAT_EQ(idx.x.at({0, 0, 1}), 0.2f);  // uint8 scaled to [0, 1]
  EXPECT_EQ(idx.y.dtype(), DType::int64);
  EXPECT_EQ(idx.y.to_vector<int64_t>(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(idx.num_classes, 4);

  fs::create_directories(dir.path() / "arrays");
  write_npy(dir / "arrays/x.npy", tensor(DType::float64, {3}, {1.5, -2, 7}));
  write_npy(dir / "arrays/y.npy", tensor(DType::float32, {3, 1}, {0, 2, 1}));
  const LabeledFiles npy = read_labeled_files(dir / "arrays");
  EXPECT_EQ(npy.x.shape(), (Shape{3, 1}));                                 // one feature per row
  EXPECT_EQ(npy.x.to_vector<float>(), (std::vector<float>{1.5f, -2, 7}));  // not scaled
  EXPECT_EQ(npy.y.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1}));

  write_text(dir / "iris.csv", "petal,species,sepal\n1.5,0,2\n2.5,2,3\n");
  const LabeledFiles csv = read_labeled_files(dir / "iris.csv", {.label_column = "species"});
  EXPECT_EQ(csv.format, "csv");
  EXPECT_EQ(csv.x.to_vector<float>(), (std::vector<float>{1.5f, 2, 2.5f, 3}));
  EXPECT_EQ(csv.y.to_vector<int64_t>(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(csv.num_classes, 3);

  const unsigned char grey[4] = {0, 0, 0, 0};
  fs::create_directories(dir.path() / "pets/cat");
  fs::create_directories(dir.path() / "pets/dog");
  ASSERT_TRUE(stbi_write_png((dir / "pets/dog/a.png").c_str(), 2, 2, 1, grey, 2));
  const LabeledFiles images =
      read_labeled_files(dir / "pets", {.images = {.color_mode = "grayscale"}});
  EXPECT_EQ(images.format, "images");
  EXPECT_EQ(images.x.shape(), (Shape{1, 2, 2, 1}));
  EXPECT_EQ(images.class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(images.num_classes, 2);  // every folder is a class, even an empty one
  EXPECT_EQ(images.y.to_vector<int64_t>(), (std::vector<int64_t>{1}));
}

TEST(LabeledFilesTest, RefusesLabelsThatAreNotClassIdsAndLengthsThatDiffer) {
  TempDir dir;
  write_npy(dir / "x.npy", tensor(DType::float32, {2, 2}, {1, 2, 3, 4}));
  write_npy(dir / "y3.npy", tensor(DType::int64, {3}, {0, 1, 1}));
  write_npy(dir / "half.npy", tensor(DType::float32, {2}, {0, 0.5}));
  write_npy(dir / "negative.npy", tensor(DType::int32, {2}, {0, -1}));
  write_npy(dir / "matrix.npy", tensor(DType::int32, {2, 2}, {0, 1, 1, 0}));
  std::string msg = error_of<IoError>([&] { read_labeled_files(dir / "x.npy," + dir / "y3.npy"); });
  EXPECT_NE(msg.find("x.npy' holds 2 rows, but '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("y3.npy' holds 3 labels"), std::string::npos) << msg;
  msg = error_of<IoError>([&] { read_labeled_files(dir / "x.npy," + dir / "half.npy"); });
  EXPECT_NE(msg.find("half.npy': label 0.5 of row 1 is not a class id"), std::string::npos) << msg;
  msg = error_of<IoError>([&] { read_labeled_files(dir / "x.npy," + dir / "negative.npy"); });
  EXPECT_NE(msg.find("label -1 of row 1 is not a class id"), std::string::npos) << msg;
  msg = error_of<IoError>([&] { read_labeled_files(dir / "x.npy," + dir / "matrix.npy"); });
  EXPECT_NE(msg.find("one class id per row"), std::string::npos) << msg;
  write_text(dir / "nolabel.csv", "a,b\n1,2\n");
  msg = error_of<IoError>([&] { read_labeled_files(dir / "nolabel.csv"); });
  EXPECT_NE(msg.find("no column named \"label\""), std::string::npos) << msg;
  msg = error_of<ValueError>([&] { read_labeled_files(dir / "x.npy", {.format = "parquet"}); });
  EXPECT_NE(msg.find("unknown data format 'parquet'"), std::string::npos) << msg;
  msg = error_of<ValueError>([&] { read_labeled_files(dir / "x.npy", {.format = "idx"}); });
  EXPECT_NE(msg.find("expected two IDX files IMAGES,LABELS"), std::string::npos) << msg;
}

}  // namespace
}  // namespace osprey::data
