// A folder of images, one subfolder per class, read as Keras's image_dataset_from_directory reads
// it: the sorted subfolder names are the classes (class i = the i-th name), every .png, .jpg,
// .jpeg, .bmp and .gif below a class folder is one image of that class, and files elsewhere are
// ignored. Images are decoded with stb_image (Debian's libstb-dev: one header for PNG, JPEG, BMP
// and GIF, with no further library to link; libpng + libjpeg would be two APIs for the same job),
// converted to grayscale or RGB, resized (bilinear, half-pixel centres as tf.image.resize) or
// required to share one size, and scaled to [0, 1].
//   auto flowers = data::read_image_folder("flowers/", {.height = 64, .width = 64, .seed = 1});
//   flowers.x;            // float32 [N, 64, 64, 3] in [0, 1]
//   flowers.y;            // int64 [N]: indices into flowers.class_names ("daisy", "rose", ...)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "osprey/data/labeled_arrays.h"

namespace osprey::data {

struct ImageFolderOptions {
  std::string color_mode = "rgb";  // "rgb" (3 channels) or "grayscale" (1), Keras's color_mode
  // Resize every image to height x width; both 0: keep the images' size, which all must share.
  int64_t height = 0, width = 0;
  // Shuffle the rows (Keras's default), so the last rows (a validation split) hold every class.
  bool shuffle = true;
  uint64_t seed = 0;
};

struct ImageFolderData : LabeledArrays {  // x: float32 [N, H, W, C], y: int64 [N]
  std::vector<std::string> class_names;   // the sorted subfolder names
  std::vector<std::string> files;         // the file of row i
};

// IoError naming the folder when it has no class subfolder or no image, and naming the file when
// one cannot be decoded or (without a size to resize to) differs in size from the first.
ImageFolderData read_image_folder(const std::string& directory,
                                  const ImageFolderOptions& options = {});

}  // namespace osprey::data
