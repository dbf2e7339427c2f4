// Folders of images as Keras's image_dataset_from_directory reads them: sorted class folders,
// PNG, JPEG and BMP decoded (written here with stb_image_write), grayscale and RGB, bilinear
// resizing with half-pixel centres, a seeded shuffle, and errors that name the folder or file.
#include "osprey/data/image_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/data/files_test.h"

#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace osprey::data {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_text;

// h x w pixels of one RGB colour.
std::vector<unsigned char> solid(int h, int w, unsigned char r, unsigned char g, unsigned char b) {
  std::vector<unsigned char> p(static_cast<size_t>(h * w * 3));
  for (size_t i = 0; i < p.size(); i += 3) {
    p[i] = r;
    p[i + 1] = g;
    p[i + 2] = b;
  }
  return p;
}

void write_image(const fs::path& path, int h, int w, int channels,
                 const std::vector<unsigned char>& pixels) {
  fs::create_directories(path.parent_path());
  const std::string ext = path.extension().string();
  int ok = 0;
  if (ext == ".png") ok = stbi_write_png(path.c_str(), w, h, channels, pixels.data(), w * channels);
  if (ext == ".jpg") ok = stbi_write_jpg(path.c_str(), w, h, channels, pixels.data(), 95);
  if (ext == ".bmp") ok = stbi_write_bmp(path.c_str(), w, h, channels, pixels.data());
  ASSERT_TRUE(ok) << path;
}

// cat/: a red PNG and a green BMP; dog/: a blue JPEG; files that are no image, and a file outside
// any class folder, are ignored.
void write_pets(const TempDir& dir) {
  write_image(dir.path() / "pets/cat/a.png", 4, 6, 3, solid(4, 6, 255, 0, 0));
  write_image(dir.path() / "pets/cat/more/b.bmp", 4, 6, 3, solid(4, 6, 0, 255, 0));
  write_image(dir.path() / "pets/dog/c.jpg", 4, 6, 3, solid(4, 6, 0, 0, 255));
  write_text(dir / "pets/dog/notes.txt", "not an image");  // the folders exist by now
  write_text(dir / "pets/README.md", "outside the class folders");
}

TEST(ImageFolderTest, ClassesAreTheSortedFoldersAndImagesDecodeToUnitRgb) {
  TempDir dir;
  write_pets(dir);
  const ImageFolderData d = read_image_folder(dir / "pets", {.shuffle = false});
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(d.files.size(), 3u);
  EXPECT_EQ(fs::path(d.files[0]).filename(), "a.png");
  EXPECT_EQ(fs::path(d.files[1]).filename(), "b.bmp");
  EXPECT_EQ(fs::path(d.files[2]).filename(), "c.jpg");
  EXPECT_EQ(d.x.shape(), (Shape{3, 4, 6, 3}));
  EXPECT_EQ(d.x.dtype(), DType::float32);
  EXPECT_EQ(d.y.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1}));
  const std::vector<std::vector<float>> colours = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t k = 0; k < 3; ++k) {
      // PNG and BMP are exact; JPEG within a few levels of 255.
      EXPECT_NEAR(d.x.at({i, 2, 3, k}), colours[i][k], i == 2 ? 4.0 / 255 : 0.0)
          << d.files[i] << " channel " << k;
    }
  }
}

TEST(ImageFolderTest, GrayscaleHasOneChannel) {
  TempDir dir;
  write_pets(dir);
  const ImageFolderData d =
      read_image_folder(dir / "pets", {.color_mode = "grayscale", .shuffle = false});
  EXPECT_EQ(d.x.shape(), (Shape{3, 4, 6, 1}));
  // stb's luma: (77 r + 150 g + 29 b) >> 8.
  EXPECT_NEAR(d.x.at({0, 0, 0, 0}), 76.0 / 255, 1e-6);
  EXPECT_NEAR(d.x.at({1, 0, 0, 0}), 149.0 / 255, 1e-6);
  EXPECT_NEAR(d.x.at({2, 0, 0, 0}), 28.0 / 255, 4.0 / 255);
}

TEST(ImageFolderTest, ResizesBilinearlyWithHalfPixelCentres) {
  TempDir dir;
  // One row [0, 255] widened to 4 columns: tf.image.resize gives [0, 0.25, 0.75, 1].
  write_image(dir.path() / "ramp/only/a.png", 1, 2, 1, {0, 255});
  const ImageFolderData d =
      read_image_folder(dir / "ramp", {.color_mode = "grayscale", .height = 2, .width = 4});
  EXPECT_EQ(d.x.shape(), (Shape{1, 2, 4, 1}));
  EXPECT_EQ(d.x.to_vector<float>(), (std::vector<float>{0, 0.25f, 0.75f, 1, 0, 0.25f, 0.75f, 1}));
}

TEST(ImageFolderTest, TheShuffleDependsOnlyOnTheSeed) {
  TempDir dir;
  for (int i = 0; i < 12; ++i) {
    const auto v = static_cast<unsigned char>(i * 20);
    write_image(dir.path() / fmt::format("many/{}/{:02}.png", i % 3, i), 2, 2, 3,
                solid(2, 2, v, v, v));
  }
  const ImageFolderData a = read_image_folder(dir / "many", {.seed = 5});
  const ImageFolderData b = read_image_folder(dir / "many", {.seed = 5});
  const ImageFolderData sorted = read_image_folder(dir / "many", {.shuffle = false});
  EXPECT_EQ(a.files, b.files);
  EXPECT_NE(a.files, sorted.files);
  // Each row keeps its own image and label.
  for (size_t i = 0; i < a.files.size(); ++i) {
    const int n = std::stoi(fs::path(a.files[i]).stem().string());
    EXPECT_EQ(a.y.to_vector<int64_t>()[i], n % 3);
    EXPECT_NEAR(a.x.at({static_cast<int64_t>(i), 0, 0, 0}), n * 20 / 255.0, 1e-6);
  }
}

TEST(ImageFolderTest, ErrorsNameTheFolderOrTheFile) {
  TempDir dir;
  fs::create_directories(dir.path() / "empty");
  EXPECT_THROW(
      {
        try {
          read_image_folder(dir / "empty");
        } catch (const IoError& e) {
          EXPECT_NE(std::string(e.what()).find("no class folders"), std::string::npos);
          throw;
        }
      },
      IoError);
  fs::create_directories(dir.path() / "noimages/a");
  write_text(dir / "noimages/a/readme.txt", "");
  try {
    read_image_folder(dir / "noimages");
    ADD_FAILURE() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("no images in its class folders (a)"), std::string::npos)
        << e.what();
  }
  write_image(dir.path() / "sizes/a/big.png", 4, 4, 3, solid(4, 4, 1, 2, 3));
  write_image(dir.path() / "sizes/b/small.png", 2, 3, 3, solid(2, 3, 1, 2, 3));
  try {
    read_image_folder(dir / "sizes", {.shuffle = false});
    ADD_FAILURE() << "no exception";
  } catch (const IoError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("small.png' is 2x3 (height x width), but '"), std::string::npos) << msg;
    EXPECT_NE(msg.find("big.png' is 4x4"), std::string::npos) << msg;
  }
  EXPECT_EQ(read_image_folder(dir / "sizes", {.height = 3, .width = 3}).x.shape(),
            (Shape{2, 3, 3, 3}));
  fs::create_directories(dir.path() / "broken/a");
  write_text(dir / "broken/a/x.png", "\x89PNG not really");
  try {
    read_image_folder(dir / "broken");
    ADD_FAILURE() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("x.png': cannot decode it"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_image_folder(dir / "sizes", {.color_mode = "rgba"}), ValueError);
  EXPECT_THROW(read_image_folder(dir / "sizes", {.height = 3}), ValueError);
}

}  // namespace
}  // namespace osprey::data
