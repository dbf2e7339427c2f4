// Prebuilt Fashion-MNIST models (like keras.applications: ready-made networks by name) that
// `osprey train` and the benchmarks (bench_train, bench_quant, bench_float8, bench_allreduce,
// bench_multi_worker; bench/compare_torch's PyTorch twins) share, so a figure measured on "the
// MLP" or "the CNN" always means the same network:
//   "mlp": Flatten -> Dense(512, relu) -> Dense(256, relu) -> Dense(10, softmax)
//   "cnn": Conv(32, 3x3, relu) -> MaxPool(2) -> Conv(64, 3x3, relu) -> MaxPool(2) -> Flatten
//          -> Dense(128, relu) -> Dense(10, softmax)
// Both take [N, 28, 28] images scaled to [0, 1], are built (weights made) and not compiled.
//   os::Model model = os::applications::fashion_mnist_model("cnn");
//   model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
#pragma once

#include <string_view>

#include "osprey/train/model.h"

namespace osprey::applications {

// ValueError naming the kind and the choices for anything but "mlp" or "cnn".
Model fashion_mnist_model(std::string_view kind);

}  // namespace osprey::applications
