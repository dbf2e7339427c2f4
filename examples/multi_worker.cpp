// Multi-worker training as docs/multi_worker.md shows it. Alone it is a single worker; started by
// `osprey launch -n 2 -- example_multi_worker` (or mpirun, srun, OSPREY_CONFIG on each host) the
// same program trains on every worker. Small synthetic data, so it runs anywhere in a second.
#include <fmt/format.h>
#include <osprey/io/crc32c.h>
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
  // Every worker ends with the same weights, bit for bit: each prints a CRC32C of their bytes.
  uint32_t checksum = 0;
  for (const os::Tensor& w : model.get_weights()) {
    const os::Tensor c = w.contiguous();
    checksum = os::io::crc32c(c.raw_data(), c.nbytes(), checksum);
  }
  const auto& loss = history.history["loss"];
  fmt::print(
      "worker {} of {}, {} replicas in sync: loss {:.4f} -> {:.4f}, weights checksum {:08x}\n",
      strategy.worker_rank(), strategy.num_workers(), strategy.num_replicas_in_sync(), loss.front(),
      loss.back(), checksum);
  return loss.back() < loss.front() ? 0 : 1;
}
