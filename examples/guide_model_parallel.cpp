// The model-parallel guide's listing (docs/guide/model_parallel.md): seed 001's Keras 3
// DeviceMesh / LayoutMap / ModelParallel program in osprey C++, on eight virtual CPU devices.
// It trains an MLP with its kernels split over the "model" axis and the batch over "data", and
// checks that the result is the one-device model's.
#include <osprey/osprey.h>

#include <cmath>
#include <cstdio>

namespace os = osprey;

os::Model build_model() {
  os::nn::clear_session();
  return os::Sequential(
      {os::layers::Dense(64, "relu"), os::layers::Dense(32, "relu"), os::layers::Dense(8)},
      {.input_shape = {16}});
}

int main() {
  const os::Tensor x = os::random_normal({256, 16}, {.seed = 1});
  const os::Tensor y = os::random_normal({256, 8}, {.seed = 2});
  const std::vector<os::Tensor> initial = build_model().get_weights();

  // Eight devices as a 2 x 4 grid with named axes.
  os::distribution::DeviceMesh mesh({2, 4}, {"data", "model"});
  for (const os::autograd::Variable& v : build_model().network().variables())
    std::puts(v.name().c_str());

  // Regexes on variable paths: a kernel split on its columns (output features) is
  // column-parallel, on its rows (input features) row-parallel.
  os::distribution::LayoutMap layout_map(mesh);
  layout_map["sequential/dense/kernel"] = {std::nullopt, "model"};
  layout_map["sequential/dense/bias"] = {"model"};
  layout_map["sequential/dense_1/kernel"] = {"model", std::nullopt};

  os::distribution::ModelParallel model_parallel(layout_map, /*batch_dim_name=*/"data");
  os::distribution::set_distribution(model_parallel);

  os::Model model = build_model();
  model.set_weights(initial);
  // What each device will hold, before anything is allocated, and what no rule matched.
  std::fputs(model_parallel.memory_report(model.network(), 32, 2).to_string().c_str(), stdout);
  for (const std::string& path : model_parallel.unmatched_variables(model.network()))
    std::printf("replicated (no rule): %s\n", path.c_str());

  model.compile("adam", "mse");
  model.fit(x, y, {.batch_size = 32, .epochs = 2, .verbose = 0, .shuffle = false});
  std::fputs(os::distribution::sharding(model.network().variables()[0]).c_str(), stdout);

  // The same training on one device.
  os::distribution::set_distribution(std::nullopt);
  os::Model single = build_model();
  single.set_weights(initial);
  single.compile("adam", "mse");
  single.fit(x, y, {.batch_size = 32, .epochs = 2, .verbose = 0, .shuffle = false});
  double worst = 0.0;
  const auto a = model.get_weights(), b = single.get_weights();
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::fmax(worst, os::max(os::abs(os::sub(a[i], b[i]))).item());
  std::printf("largest difference from one device: %.2g\n", worst);
  return worst < 1e-5 ? 0 : 1;
}
