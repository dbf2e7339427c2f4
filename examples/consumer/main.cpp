// Trains a small classifier with the Keras-style API of an installed osprey, saves it, loads it
// back and checks that the loaded model predicts what the trained one does. Exit code 0 when the
// model learned (accuracy above 0.9 on separable data) and the round trip is exact.
#include <fmt/format.h>
#include <osprey/osprey.h>

#include <filesystem>

namespace os = osprey;

int main() {
  // Two Gaussian blobs, labels 0 and 1: [512, 4] -> [512].
  const os::Tensor noise = os::random_normal({512, 4}, {.seed = 7, .stddev = 0.5});
  std::vector<float> centre(512 * 4), labels(512);
  for (int64_t i = 0; i < 512; ++i) {
    labels[static_cast<size_t>(i)] = static_cast<float>(i % 2);
    for (int64_t j = 0; j < 4; ++j)
      centre[static_cast<size_t>(i * 4 + j)] = i % 2 == 0 ? -1.0f : 1.0f;
  }
  const os::Tensor x = os::add(os::from_vector(centre, {512, 4}), noise);
  const os::Tensor y = os::from_vector(labels, {512});

  auto model = os::Sequential({os::layers::Dense(8, "relu"), os::layers::Dense(2, "softmax")});
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  model.fit(x, y, {.batch_size = 32, .epochs = 40, .verbose = 0, .seed = 1});
  const auto logs = model.evaluate(x, y, {.batch_size = 128});

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "osprey_consumer_model";
  std::filesystem::remove_all(dir);
  model.save(dir.string());
  auto loaded = os::load_model(dir.string());
  const os::Tensor a = model.predict(x), b = loaded.predict(x);
  std::filesystem::remove_all(dir);
  // The storage types' conversions are inline in osprey's headers (F16C for float16): they must
  // compile in a project that sets no flags of its own.
  const bool same = a.to_vector<float>() == b.to_vector<float>() &&
                    static_cast<float>(os::float16(0.333f)) == 0.3330078125f;
  fmt::print("osprey {}: accuracy {:.3f}, reloaded model predicts the same: {}\n", os::kVersion,
             logs.at("accuracy"), same);
  return logs.at("accuracy") > 0.9 && same ? 0 : 1;
}
