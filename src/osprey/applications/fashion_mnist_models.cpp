#include "osprey/applications/fashion_mnist_models.h"

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"

namespace osprey::applications {

Model fashion_mnist_model(std::string_view kind) {
  if (kind == "mlp") {
    return Sequential({layers::Flatten(), layers::Dense(512, "relu"), layers::Dense(256, "relu"),
                       layers::Dense(10, "softmax")},
                      {.input_shape = {28, 28}});
  }
  OSPREY_CHECK(kind == "cnn", "fashion_mnist_model: unknown model '{}' (choose mlp or cnn)", kind);
  return Sequential({layers::Reshape({28, 28, 1}), layers::Conv2D(32, 3, {.activation = "relu"}),
                     layers::MaxPooling2D(2), layers::Conv2D(64, 3, {.activation = "relu"}),
                     layers::MaxPooling2D(2), layers::Flatten(), layers::Dense(128, "relu"),
                     layers::Dense(10, "softmax")},
                    {.input_shape = {28, 28}});
}

}  // namespace osprey::applications
