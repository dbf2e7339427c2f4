#include "osprey/data/fashion_mnist.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "osprey/data/files_test.h"
#include "osprey/data/idx.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::datasets::fashion_mnist {
namespace {

using data::testing::TempDir;

bool debian_files_present() {
  return std::filesystem::exists(std::string(kDebianDirectory) + "/train-images-idx3-ubyte.gz");
}

// The real files are read once for the whole suite (about half a second).
class FashionMnistTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (debian_files_present())
      data_ = new Data(load({.directory = std::string(kDebianDirectory)}));
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  void SetUp() override {
    if (!data_)
      GTEST_SKIP()
          << "dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)";
  }
  static Data* data_;
};
Data* FashionMnistTest::data_ = nullptr;

TEST_F(FashionMnistTest, LoadReadsSixtyThousandTrainingAndTenThousandTestImages) {
  EXPECT_EQ(data_->train.x.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(data_->train.y.shape(), (Shape{60000}));
  EXPECT_EQ(data_->test.x.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(data_->test.y.shape(), (Shape{10000}));
  EXPECT_EQ(data_->train.x.dtype(), DType::float32);
  EXPECT_EQ(data_->train.y.dtype(), DType::int64);
}

TEST_F(FashionMnistTest, PixelsAreScaledToTheUnitIntervalAndLabelsAreClassIds) {
  for (const data::LabeledArrays* s : {&data_->train, &data_->test}) {
    EXPECT_EQ(min(s->x).item(), 0.0);
    EXPECT_EQ(max(s->x).item(), 1.0);
    EXPECT_EQ(min(s->y).item(), 0.0);
    EXPECT_EQ(max(s->y).item(), 9.0);
  }
}

TEST_F(FashionMnistTest, FirstImagesAndLabelsMatchTheFilesAsPythonReadsThem) {
  // Reference values from Python's gzip module over the same files: train labels start
  // 9 0 0 3 0 2 7 2 5 5, test labels 9 2 1 1 6 1 4 6 5 7; the first training image's bytes
  // sum to 76247 and the first test image's to 33456.
  const auto train_y = data_->train.y.narrow(0, 0, 10).to_vector<int64_t>();
  EXPECT_EQ(train_y, (std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  EXPECT_EQ(kClassNames[static_cast<size_t>(train_y[0])], "Ankle boot");
  EXPECT_EQ(data_->test.y.narrow(0, 0, 10).to_vector<int64_t>(),
            (std::vector<int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  EXPECT_NEAR(sum(data_->train.x.select(0, 0).to(DType::float64)).item() * 255.0, 76247.0, 1e-2);
  EXPECT_NEAR(sum(data_->test.x.select(0, 0).to(DType::float64)).item() * 255.0, 33456.0, 1e-2);
  // Each class holds a tenth of the training set.
  const auto y = data_->train.y.to_vector<int64_t>();
  for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(std::count(y.begin(), y.end(), c), 6000);
}

TEST_F(FashionMnistTest, TrainSplitsAndFeedsAPipeline) {
  auto [train, val] = data_->train.split_tail(10000);
  EXPECT_EQ(train.size(), 50000);
  EXPECT_EQ(val.size(), 10000);
  data::Dataset ds = train.shuffle(50000, 42).batch(128).prefetch(data::kAutotune);
  EXPECT_EQ(ds.cardinality(), 391);
  auto it = ds.iterator();
  auto b = it.next();
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)[0].shape(), (Shape{128, 28, 28}));
  EXPECT_EQ((*b)[1].shape(), (Shape{128}));
}

// A tiny stand-in for the four files, for the directory and environment tests.
void write_fake_dataset(const std::string& dir, int64_t n) {
  std::vector<uint8_t> pixels(static_cast<size_t>(n * 28 * 28));
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i % 256);
  std::vector<uint8_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(static_cast<uint8_t>(i % 10));
  for (const char* split : {"train", "t10k"}) {
    data::write_idx(dir + "/" + split + "-images-idx3-ubyte.gz", from_vector(pixels, {n, 28, 28}),
                    {.gzip = true});
    data::write_idx(dir + "/" + split + "-labels-idx1-ubyte",
                    from_vector(labels));  // raw works too
  }
}

TEST(FashionMnistLoadTest, ReadsADirectoryGivenByTheUserAndFlattens) {
  TempDir dir;
  write_fake_dataset(dir.path().string(), 12);
  const Data d = load({.directory = dir.path().string(), .flatten = true});
  EXPECT_EQ(d.train.x.shape(), (Shape{12, 784}));
  EXPECT_EQ(d.test.y.to_vector<int64_t>()[11], 1);
  EXPECT_FLOAT_EQ(static_cast<float>(d.train.x.at({0, 255})), 1.0f);
  EXPECT_FLOAT_EQ(static_cast<float>(d.train.x.at({0, 51})), 51.0f / 255.0f);
}

TEST(FashionMnistLoadTest, ReadsOspreyDataDir) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "fashion-mnist");
  write_fake_dataset((dir.path() / "fashion-mnist").string(), 3);
  ::setenv("OSPREY_DATA_DIR", dir.path().c_str(), 1);
  const Data d = load();
  ::unsetenv("OSPREY_DATA_DIR");
  EXPECT_EQ(d.train.size(), 3);
}

TEST(FashionMnistLoadTest, MissingDirectoryNamesTheFilesAndThePackage) {
  try {
    load({.directory = "/no/such/dir"});
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    const std::string msg = e.what();
    for (const char* f :
         {"/no/such/dir/train-images-idx3-ubyte.gz", "/no/such/dir/train-labels-idx1-ubyte.gz",
          "/no/such/dir/t10k-images-idx3-ubyte.gz", "/no/such/dir/t10k-labels-idx1-ubyte.gz"}) {
      EXPECT_NE(msg.find(f), std::string::npos) << f << " not in: " << msg;
    }
    EXPECT_NE(msg.find("install the Debian package dataset-fashion-mnist (apt-get install "
                       "dataset-fashion-mnist)"),
              std::string::npos)
        << msg;
  }
}

TEST(FashionMnistLoadTest, MalformedFileIsNamed) {
  TempDir dir;
  write_fake_dataset(dir.path().string(), 4);
  data::write_idx(dir / "t10k-labels-idx1-ubyte", from_vector<uint8_t>({1, 2, 3}));
  try {
    load({.directory = dir.path().string()});
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "t10k-labels-idx1-ubyte' holds 3 labels, but its images file holds 4"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace osprey::datasets::fashion_mnist
