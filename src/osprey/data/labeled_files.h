// One labelled split read from files in any format osprey reads: what `osprey train --data` and
// --test-data take. The formats, and the path each takes:
//   idx     IMAGES,LABELS: two IDX files (idx.h), raw or gzip'd, e.g. MNIST's
//           train-images-idx3-ubyte.gz,train-labels-idx1-ubyte.gz
//   npy     X.npy,Y.npy: two .npy files (npy.h), or a folder holding x.npy and y.npy
//   csv     a CSV file with a header: numeric features plus the label column (csv.h)
//   images  a folder with one subfolder per class (image_folder.h)
// x comes back float32: uint8 features (IDX images, u1 arrays) scaled by 1/255 as the
// Fashion-MNIST loader scales them, other types as they are. y comes back int64 class ids, each
// checked to be a whole number >= 0.
//   auto train = data::read_labeled_files("x.npy,y.npy");          // format "auto": npy
//   auto iris = data::read_labeled_files("iris.csv", {.label_column = "species"});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "osprey/data/image_folder.h"
#include "osprey/data/labeled_arrays.h"

namespace osprey::data {

struct LabeledFilesOptions {
  std::string format = "auto";         // auto, idx, npy, csv or images
  std::string label_column = "label";  // csv: the header's name of the class-id column
  ImageFolderOptions images = {};      // images: colour mode, size, shuffle
};

struct LabeledFiles : LabeledArrays {    // x: float32 [N, ...], y: int64 [N]
  std::string format;                    // the one read ("auto" resolved)
  int64_t num_classes = 0;               // the largest label + 1
  std::vector<std::string> class_names;  // images: the class folders; empty otherwise
};

// The format of what `path` names: "idx" or "npy" for a comma-separated pair (by extension),
// "csv" for a .csv or .csv.gz file, "npy" for a folder with x.npy, "fashion_mnist" for a folder
// holding Fashion-MNIST's train-images-idx3-ubyte[.gz] (two splits: datasets::fashion_mnist), and
// "images" for a folder with subfolders. IoError when nothing is there; ValueError saying what
// was looked at when the format cannot be told.
std::string detect_data_format(const std::string& path);

// ValueError for an unknown format (and for fashion_mnist, which is two splits); IoError naming
// the file for one that cannot be read, for labels that are not class ids, and for features and
// labels of different lengths.
LabeledFiles read_labeled_files(const std::string& path, const LabeledFilesOptions& options = {});

}  // namespace osprey::data
