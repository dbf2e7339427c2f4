// The built-in Fashion-MNIST models that `osprey train`, `osprey tune` and bench/compare_torch
// share, so a figure measured on "the MLP" or "the CNN" always means the same network:
//   "mlp": Flatten -> Dense(512, relu) -> Dense(256, relu) -> Dense(10, softmax)
//   "cnn": Conv(32, 3x3, relu) -> MaxPool(2) -> Conv(64, 3x3, relu) -> MaxPool(2) -> Flatten
//          -> Dense(128, relu) -> Dense(10, softmax)
// Both take [N, 28, 28] images scaled to [0, 1].
#pragma once

#include <string_view>

#include "osprey/train/model.h"

namespace osprey::train {

// ValueError naming the kind and the choices for anything but "mlp" or "cnn".
Model fashion_mnist_model(std::string_view kind);

}  // namespace osprey::train
