// Fashion-MNIST (Zalando, 70,000 28x28 grey images of 10 kinds of clothing), as Keras's
// keras.datasets.fashion_mnist.load_data(), read from the IDX files of the Debian package
// dataset-fashion-mnist (/usr/share/datasets/fashion-mnist), OSPREY_DATA_DIR, or a directory
// the caller names. Images are float32 in [0, 1], labels int64 class ids 0..9.
//   auto data = osprey::datasets::fashion_mnist::load();          // train: 60000, test: 10000
//   data.train.x;                                                  // float32 [60000, 28, 28]
//   auto [train, val] = data.train.split_tail(10000);
//   auto ds = train.shuffle(50000, 42).batch(128).prefetch(osprey::data::kAutotune);
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "osprey/data/labeled_arrays.h"

namespace osprey::datasets::fashion_mnist {

inline constexpr std::string_view kDebianDirectory = "/usr/share/datasets/fashion-mnist";
inline constexpr std::array<std::string_view, 10> kClassNames{
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

struct Options {
  // Where the four files are ({train,t10k}-{images-idx3,labels-idx1}-ubyte, gzip or not).
  // Empty: $OSPREY_DATA_DIR/fashion-mnist, then $OSPREY_DATA_DIR, then kDebianDirectory.
  std::string directory = {};
  bool flatten = false;  // images [N, 784] instead of [N, 28, 28]
};

struct Data {
  data::LabeledArrays train;  // x: float32 [60000, 28, 28] in [0, 1], y: int64 [60000]
  data::LabeledArrays test;   // x: float32 [10000, 28, 28], y: int64 [10000]
};

// Throws IoError listing every file it looked for (with the apt-get line to install them)
// when they are missing, and naming the file when one is malformed.
Data load(const Options& options = {});

}  // namespace osprey::datasets::fashion_mnist
