// Multi-worker training as docs/multi_worker.md shows it. Alone it is a single worker; started by
// `osprey launch -n 2 -- example_multi_worker` (or mpirun, srun, OSPREY_CONFIG on each host) the
// same program trains on every worker. Small synthetic data, so it runs anywhere in a second.
#include <fmt/format.h>
#include <osprey/osprey.h>

namespace os = osprey;

int main() {
  os::distribute::MultiWorkerMirroredStrategy strategy;  // connects the workers (a collective)
  const os::Tensor x = os::random_normal({512, 8}, {.seed = 1});
  const os::Tensor y = os::sum(x, {1}, true);  // learn the row sum
  os::Model model;
  {
    auto scope = strategy.scope();
    model =
        os::Sequential({os::layers::Dense(16, "relu"), os::layers::Dense(1)}, {.input_shape = {8}});
    model.compile("adam", "mse");
  }
  // The batch size is global: 32 rows per replica.
  auto history = model.fit(
      x, y, {.batch_size = 32 * strategy.num_replicas_in_sync(), .epochs = 20, .verbose = 0});
  if (strategy.is_chief()) {
    fmt::print("{} replicas in sync on {} workers: loss {:.4f} -> {:.4f}\n",
               strategy.num_replicas_in_sync(), strategy.num_workers(),
               history.history["loss"].front(), history.history["loss"].back());
  }
  return history.history["loss"].back() < history.history["loss"].front() ? 0 : 1;
}
