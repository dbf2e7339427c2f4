#include <osprey/osprey.h>

#include <cstdio>
namespace os = osprey;

// Every task of the cluster runs this program; OSPREY_CONFIG (or TF_CONFIG) says which task it
// is: `osprey launch --workers 2 --ps 1 -- build/examples/example_guide_parameter_server` starts
// them all.
int main() {
  os::distribute::ParameterServerOptions options;
  options.replicas_to_aggregate = 1;  // of 2 workers: each step applies the first share to arrive
  options.variable_partitioner = os::distribute::ps::min_size_partitioner(64 << 10, 2);
  os::distribute::ParameterServerStrategy strategy(options);

  auto data = os::datasets::fashion_mnist::load({.flatten = true});
  os::Model model;
  {
    auto scope = strategy.scope();  // build and compile inside the scope
    model = os::Sequential({os::layers::Dense(256, "relu"), os::layers::Dense(10, "softmax")});
    model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  }
  // On the chief, fit sends each global batch's shares to the workers; on a worker, fit serves
  // them until the chief's fit ends. The weights live on the ps; the chief's model gets them at
  // the end of each epoch.
  model.fit(data.train.x, data.train.y,
            {.batch_size = 64 * strategy.num_replicas_in_sync(),
             .epochs = 2,
             .verbose = strategy.is_chief() ? 1 : 0,
             .steps_per_epoch = 100});
  const auto test = model.evaluate(data.test.x, data.test.y, {.batch_size = 256, .verbose = 0});
  if (!strategy.is_chief()) return 0;
  std::printf("test accuracy: %.4f\n", test.at("accuracy"));
  return test.at("accuracy") > 0.75 ? 0 : 1;
}
