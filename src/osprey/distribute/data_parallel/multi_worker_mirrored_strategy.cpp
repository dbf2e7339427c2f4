#include "osprey/distribute/data_parallel/multi_worker_mirrored_strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "osprey/comm/clock_sync.h"
#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/distribute/data_parallel/mirrored_executor.h"
#include "osprey/distribute/devices.h"

namespace osprey::distribute {

std::vector<AllReducePoint> measure_all_reduce(comm::Communicator& c,
                                               const std::vector<int64_t>& sizes, bool bf16,
                                               int repeats) {
  std::vector<AllReducePoint> curve;
  std::vector<float> buffer;
  for (int64_t bytes : sizes) {
    const int64_t n = bytes / static_cast<int64_t>(sizeof(float));
    buffer.assign(static_cast<size_t>(n), 1.0f);
    std::vector<double> times;
    for (int i = 0; i <= repeats; ++i) {  // the first is a warm-up (page faults, connections)
      const auto start = std::chrono::steady_clock::now();
      if (bf16) {
        c.all_reduce_bf16(buffer.data(), n, comm::ReduceOp::sum);
      } else {
        c.all_reduce(buffer.data(), n, comm::ReduceOp::sum);
      }
      if (i > 0)
        times.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    curve.push_back({bytes, times[times.size() / 2]});
  }
  return curve;
}

int64_t choose_bucket_bytes(const std::vector<AllReducePoint>& curve, bool overlap_possible) {
  OSPREY_CHECK(!curve.empty(), "choose_bucket_bytes: the curve is empty");
  const auto throughput = [](const AllReducePoint& p) {
    return static_cast<double>(p.bytes) / std::max(p.seconds, 1e-12);
  };
  const auto best = std::max_element(curve.begin(), curve.end(), [&](const auto& a, const auto& b) {
    return throughput(a) < throughput(b);
  });
  if (!overlap_possible) return best->bytes;
  for (const auto& p : curve) {
    if (throughput(p) >= 0.9 * throughput(*best)) return p.bytes;
  }
  return best->bytes;
}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(const std::vector<std::string>& devices,
                                                         MultiWorkerOptions options,
                                                         std::optional<ClusterResolver> cluster)
    : StrategyBase(resolve_devices(devices, "MultiWorkerMirroredStrategy")),
      options_(std::move(options)),
      cluster_(cluster ? std::move(*cluster) : ClusterResolver::from_environment()),
      reducers_(std::make_shared<MirroredStrategy::Reducers>()) {
  OSPREY_CHECK(options_.compression == "none" || options_.compression == "bf16",
               "MultiWorkerMirroredStrategy: compression must be none or bf16. Received: '{}'",
               options_.compression);
  const std::string& policy = options_.auto_shard_policy;
  OSPREY_CHECK(policy == "auto" || policy == "data" || policy == "off" || policy == "file",
               "MultiWorkerMirroredStrategy: auto_shard_policy must be auto, data, off or file. "
               "Received: '{}'",
               policy);
  OSPREY_CHECK(policy != "file",
               "MultiWorkerMirroredStrategy: auto_shard_policy 'file' shards by input file, and "
               "osprey has no dataset "
               "source read as one file per shard (IDX, CSV and arrays are single sources): use "
               "'data' (what 'auto' "
               "chooses for them, as tf.data's AUTO falls back to DATA) or shard the dataset "
               "yourself and use 'off'");
  OSPREY_CHECK(
      options_.bucket_bytes >= 0,
      "MultiWorkerMirroredStrategy: bucket_bytes must be at least 0 (0: measured). Received: {}",
      options_.bucket_bytes);
  OSPREY_CHECK(options_.first_bucket_bytes >= 1,
               "MultiWorkerMirroredStrategy: first_bucket_bytes must be at least 1. Received: {}",
               options_.first_bucket_bytes);
  OSPREY_CHECK(options_.threads_per_replica >= 0,
               "MultiWorkerMirroredStrategy: threads_per_replica must be at least 0. Received: {}",
               options_.threads_per_replica);
  group_ = WorkerGroup::connect(cluster_, {.caller = "MultiWorkerMirroredStrategy",
                                           .communication = options_.communication,
                                           .timeout = options_.timeout});
  bucket_bytes_ = options_.bucket_bytes > 0 ? options_.bucket_bytes : kDefaultBucketBytes;
  if (options_.bucket_bytes == 0 && group_->size() > 1) {
    const bool bf16 = options_.compression == "bf16";
    const auto curve =
        measure_all_reduce(*group_->gradients(), {256 << 10, 1 << 20, 4 << 20, 16 << 20}, bf16);
    // Ranks time the curve differently; the chief's choice is everyone's (buckets must match).
    // Overlap needs a core that the replicas' kernels leave free (MirroredOptions::reduce_on).
    const int threads = options_.threads_per_replica > 0
                            ? options_.threads_per_replica
                            : std::max(1, num_threads() / static_cast<int>(devices_.size()));
    const bool overlap = threads * static_cast<int>(devices_.size()) < num_threads();
    float chosen = static_cast<float>(choose_bucket_bytes(curve, overlap));
    group_->outputs()->broadcast(&chosen, 1, 0);
    bucket_bytes_ = static_cast<int64_t>(chosen);
    if (is_chief()) {
      std::string points;
      for (const auto& p : curve) {
        points += fmt::format("{}{} KiB {:.2f} GB/s", points.empty() ? "" : ", ", p.bytes >> 10,
                              static_cast<double>(p.bytes) / p.seconds / 1e9);
      }
      fmt::print(stderr,
                 "osprey: MultiWorkerMirroredStrategy: {} workers over {}{}; gradient buckets of "
                 "{} KiB (all-reduce "
                 "throughput {})\n",
                 num_workers(), backend(), bf16 ? " (bf16 on the wire)" : "", bucket_bytes_ >> 10,
                 points);
    }
  }
}

std::string MultiWorkerMirroredStrategy::describe() const {
  std::string s =
      fmt::format("MultiWorkerMirroredStrategy(worker {} of {}", worker_rank(), num_workers());
  for (const Device& d : devices_) s += ", " + d.to_string();
  return s + ")";
}

train::Strategy::TraceClockOffset MultiWorkerMirroredStrategy::trace_clock_offset() const {
  comm::Communicator* c = group_->outputs();
  if (c == nullptr) return {};
  const comm::ClockOffset o = comm::estimate_clock_offset(*c);
  return {.offset_us = o.offset_us, .uncertainty_us = o.uncertainty_us};
}

std::vector<std::string> MultiWorkerMirroredStrategy::gather_on_chief(
    const std::string& text) const {
  comm::Communicator* c = group_->outputs();
  if (c == nullptr) return {text};
  return comm::gather_strings(*c, text);
}

std::unique_ptr<train::StepExecutor> MultiWorkerMirroredStrategy::make_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer) const {
  MirroredOptions mo{.bucket_bytes = bucket_bytes_,
                     .first_bucket_bytes = options_.first_bucket_bytes,
                     .threads_per_replica = options_.threads_per_replica};
  return make_mirrored_executor(std::move(network), std::move(optimizer),
                                {.replicas = static_cast<int>(devices_.size()),
                                 .options = mo,
                                 .registry = reducers_,
                                 .owner = "MultiWorkerMirroredStrategy",
                                 .workers = group_,
                                 .compress = options_.compression == "bf16",
                                 .per_worker_inputs = options_.auto_shard_policy == "off"});
}

}  // namespace osprey::distribute
