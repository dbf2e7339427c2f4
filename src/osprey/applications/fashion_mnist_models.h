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
// And the MLP that `osprey tune` searches (bench_tune and bench_tune_scale time the same one), a
// build function over five hyperparameters, compiled:
//   Flatten -> [Dense(units, relu) -> Dropout(dropout) when dropout > 0] x layers
//   -> Dense(10, softmax), with `optimizer` at `learning_rate`
//   os::tune::HyperModelArg build = [](os::tune::HyperParameters& hp) {
//     return os::applications::fashion_mnist_tunable_mlp(hp);
//   };
#pragma once

#include <string_view>

#include "osprey/train/model.h"
#include "osprey/tune/hyperparameters.h"

namespace osprey::applications {

// ValueError naming the kind and the choices for anything but "mlp" or "cnn".
Model fashion_mnist_model(std::string_view kind);

// The tunable MLP's hyperparameters over their default ranges, in the order it declares them:
// units (64-512, step 64, default 256), layers (1-3, default 2), dropout (0-0.5, step 0.1),
// learning_rate (1e-4-1e-2, log, default 1e-3), optimizer (adam, rmsprop or sgd).
tune::HyperParameters fashion_mnist_mlp_space();

// Declares `space`'s hyperparameters in hp (a name hp already holds keeps its declaration), then
// builds and compiles the MLP from hp's values, for sparse_categorical_crossentropy with
// accuracy. `space` may narrow or fix the ranges (a TOML file, a wider benchmark space) but must
// declare all five names; a missing one is hp.get's ValueError naming the known ones.
Model fashion_mnist_tunable_mlp(tune::HyperParameters& hp,
                                const tune::HyperParameters& space = fashion_mnist_mlp_space());

}  // namespace osprey::applications
