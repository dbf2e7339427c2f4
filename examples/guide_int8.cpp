#include <osprey/osprey.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
namespace os = osprey;

int main() {
  // The seed's arithmetic: abs-max scales, an int8 x int8 -> int32 product, then dequantized.
  const auto x = os::from_vector<float>({0.1f, 0.9f, 1.2f, -0.8f}, {2, 2});
  const auto kernel = os::from_vector<float>({-0.1f, -2.2f, 1.1f, 0.7f}, {2, 2});
  const auto int_kernel = os::quantize_columns_int8(kernel);  // int8 values, a scale per column
  const os::Tensor y = os::linear_int8(x, int_kernel);        // x is quantized per row inside
  std::printf("int8 %s\nf32  %s\n", y.to_string().c_str(),
              os::matmul(x, kernel).to_string().c_str());

  // A whole model: train in float32, then quantize("int8") for inference.
  auto data = os::datasets::fashion_mnist::load({.flatten = true});
  auto train = data.train.slice(0, 20000);
  auto model = os::Sequential({os::layers::Dense(256, "relu"), os::layers::Dense(10, "softmax")});
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  model.fit(train.x, train.y, {.batch_size = 128, .epochs = 2, .verbose = 0});
  const double f32 = model.evaluate(data.test.x, data.test.y).at("accuracy");
  model.save("fmnist_f32");

  model.quantize("int8");  // every Dense: int8 kernel, a float32 scale per unit
  model.save("fmnist_int8");
  auto int8 = os::load_model("fmnist_int8");  // QuantizedDense layers come back as saved
  const double i8 = int8.evaluate(data.test.x, data.test.y).at("accuracy");

  std::printf("test accuracy: float32 %.4f, int8 %.4f: %s\n", f32, i8,
              std::fabs(i8 - f32) <= 0.01 ? "int8 within a point of float32" : "too far apart");
  std::printf("model.safetensors: float32 %ju bytes, int8 %ju bytes\n",
              std::filesystem::file_size("fmnist_f32/model.safetensors"),
              std::filesystem::file_size("fmnist_int8/model.safetensors"));
  return std::fabs(i8 - f32) <= 0.01 ? 0 : 1;
}
