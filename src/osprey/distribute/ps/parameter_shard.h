// ParameterShard: what one parameter server holds and does, without the network: its share of
// the model's variables (float32, keyed by path), the optimizer that updates them (its slots live
// here, not on the workers), the version counter, and the two ways gradients become updates:
//  - sync (seed 002's synchronous training with backup replicas): each global step is computed
//    as n shares; the first k shares to arrive are averaged (weighted by their rows) and applied
//    once; later shares of that step are dropped and counted;
//  - async: each gradient is applied when it arrives; its staleness (updates applied since the
//    version it was computed on) is bounded, down-weighted or scales the learning rate.
// A shard checkpoints to a directory (values, optimizer slots, version; atomic) and restores from
// it when it starts. ps_server.h puts it behind gRPC; everything here is thread-safe.
//   ParameterShard shard({.checkpoint_dir = "/tmp/ps0"});
//   shard.register_variables({{"dense/kernel", w}}, {}, config, false);
//   auto r = shard.push({.step = 0, .share = 1, .weight = 32, .gradients = {{"dense/kernel", g}}});
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "osprey/optim/optimizer.h"
#include "osprey/tensor/tensor.h"

namespace osprey::distribute::ps {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct StalenessPolicy {
  int64_t max_staleness = -1;       // -1: no bound
  bool down_weight_beyond = false;  // past the bound: scale by 1/(1+staleness) instead of drop
  bool staleness_aware_lr = false;  // learning rate / max(1, staleness)
};

// What the chief registers, the same for every shard of a job.
struct ShardConfig {
  std::string optimizer{};  // optim::serialize(...).dump()
  std::string mode = "sync";
  int replicas_to_aggregate = 1;  // sync: k
  int total_replicas = 1;         // sync: n (k <= n)
  StalenessPolicy staleness{};
};

struct RegisterResult {
  bool kept_existing = false;
  int64_t version = 0;
  int64_t last_step = -1;
};

struct PushArgs {
  int64_t step = 0;          // sync
  int share = 0;             // sync
  int64_t base_version = 0;  // async
  double weight = 1.0;       // rows in the share
  // float32 gradients by variable name; every name must be one of this shard's variables with
  // the variable's shape. A variable without a gradient in the push is not updated by it.
  NamedTensors gradients{};
  NamedTensors state{};  // non-trainable values, assigned when the push is accepted
  int worker = 0;
};

enum class PushOutcome { applied, aggregating, dropped_late, dropped_stale, duplicate };

struct PushResult {
  PushOutcome outcome = PushOutcome::applied;
  int64_t version = 0;
  int64_t staleness = 0;
};

struct ShardStats {
  int64_t version = 0, pushes = 0, applied = 0, dropped = 0;
  std::vector<int64_t> staleness_histogram{};  // kStalenessBuckets entries, the last "or more"
  int64_t variables = 0, parameters = 0;
};
inline constexpr int kStalenessBuckets = 17;

struct ShardOptions {
  std::string checkpoint_dir{};  // empty: no checkpoints
  std::string name = "ps";       // for messages: "ps 1"
};

class ParameterShard {
 public:
  // Restores from options.checkpoint_dir when it holds a checkpoint (IoError naming the file when
  // it is damaged: nothing is silently dropped).
  explicit ParameterShard(ShardOptions options = {});

  // First registration wins: a shard that already holds variables (registered before, or
  // restored) keeps their values unless overwrite, but the names and shapes must agree
  // (ValueError naming the first that differs). Config is taken from every call (a restarted
  // chief may change k). Throws ValueError for a bad config (mode, k > n, optimizer JSON).
  RegisterResult register_variables(const NamedTensors& variables, const NamedTensors& state,
                                    const ShardConfig& config, bool overwrite);
  // Copies of every variable and state tensor, and the version. ValueError before registration.
  NamedTensors variables() const;
  NamedTensors state() const;
  int64_t version() const;
  // All three at once (one lock), so the version is the one the values belong to: a Pull.
  struct Values {
    NamedTensors variables, state;
    int64_t version = 0;
  };
  Values pull() const;
  // Checks every name and shape (NotFoundError for an unknown name, ValueError for a shape)
  // before it changes anything.
  PushResult push(const PushArgs& args);
  ShardStats stats(bool reset);
  // Writes the checkpoint now (atomically; returns its path and sets *version, when given, to
  // the version it holds). ValueError without a directory or before registration.
  std::string checkpoint(int64_t* version = nullptr);
  // Whether anything changed (a registration, an update, state) since the last checkpoint
  // written or restored: what a periodic checkpoint checks first.
  bool changed_since_checkpoint() const;
  bool registered() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace osprey::distribute::ps
