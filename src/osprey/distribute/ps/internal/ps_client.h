// PsClient: a training process's connection to every parameter server of the job. It binds a
// model's variables to a ShardingPlan, then registers them (the chief), pulls them into the
// model, and pushes their gradients, calling every ps at once. A ps that is down or restarting
// is retried until the timeout (a restarted ps restores its shard from its checkpoint; a share
// pushed twice counts once in sync training). Internal to distribute/ (gRPC types).
//   PsClient client({.addresses = {"127.0.0.1:5001"}});
//   client.bind(plan, trainable, state);
//   client.register_model(config, /*overwrite=*/true);   // the chief
//   auto versions = client.pull();                        // into the variables
//   ... backward ...
//   auto pushed = client.push({.step = s, .share = i, .base_versions = versions, .weight = 32});
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/distribute/ps/parameter_shard.h"
#include "osprey/distribute/ps/ps.grpc.pb.h"
#include "osprey/distribute/ps/variable_sharding.h"

namespace osprey::distribute::ps {

struct PsClientOptions {
  std::vector<std::string> addresses;  // HOST:PORT of each ps task, by task index
  std::string token{};
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  int64_t max_message_bytes = int64_t{256} << 20;
  bool bf16_gradients = false;
};

struct PushCall {
  int64_t step = 0;
  int share = 0;
  std::vector<int64_t> base_versions;  // per ps, from pull()
  double weight = 1.0;
  int worker = 0;
};

struct PushSummary {
  int applied = 0, aggregating = 0, dropped = 0;  // ps counts by outcome (duplicates: applied)
  int64_t max_staleness = 0;
  int64_t bytes = 0;  // request bytes sent
};

class PsClient {
 public:
  explicit PsClient(PsClientOptions options);
  int num_ps() const { return static_cast<int>(stubs_.size()); }
  const PsClientOptions& options() const { return options_; }

  // The variables the plan covers: plan.variables lists trainable then state, in that order and
  // with the same paths. Every variable must be contiguous float32 (ValueError otherwise).
  void bind(ShardingPlan plan, std::vector<autograd::Variable> trainable,
            std::vector<autograd::Variable> state);
  bool bound() const { return !plan_.variables.empty(); }
  const ShardingPlan& plan() const { return plan_; }

  // Registers the bound variables' current values on their ps (see ParameterShard).
  std::vector<RegisterReply> register_model(const ShardConfig& config, bool overwrite);
  // Copies every ps's values into the bound variables; returns each ps's version.
  std::vector<int64_t> pull();
  // Pushes the trainable variables' gradients (and the state's values) to every ps.
  PushSummary push(const PushCall& call);
  std::vector<StatsReply> stats(bool reset);
  std::vector<CheckpointReply> checkpoint();
  // Bytes of the last pull's replies.
  int64_t last_pull_bytes() const { return last_pull_bytes_; }

 private:
  // Runs one call on every ps at once (`start` issues ps i's asynchronous call), retrying the
  // ones that fail transiently until the timeout; throws the first lasting failure.
  template <class Request, class Reply, class Start>
  void call_all(const char* method, const std::vector<Request>& requests,
                std::vector<Reply>& replies, Start start);
  std::string describe(int ps) const;

  PsClientOptions options_;
  std::vector<std::unique_ptr<ParameterServer::Stub>> stubs_;
  ShardingPlan plan_;
  std::vector<autograd::Variable> trainable_, state_;
  int64_t last_pull_bytes_ = 0;
};

}  // namespace osprey::distribute::ps
