// PipelineParallel: the layers of a Sequential model split into stages, each on its own virtual
// device, with every global batch cut into micro-batches that flow through the stages (seed
// 002's pipeline parallelism). Activations go forward and their gradients back with the
// communicator's send/recv. Schedules (pipeline_schedule.h): GPipe and 1F1B, which update once
// per step and so give the single-device gradient of the same micro-batches; and PipeDream's
// asynchronous 1F1B, where each stage updates after every micro-batch and weight stashing makes a
// micro-batch's backward use the weight version its forward used. With replicas > 1, that many
// pipelines train on shares of the batch and all-reduce each stage's gradients. Launched as
// several workers (mpirun, OSPREY_CONFIG), worker s runs stage s.
//   PipelineParallel pipe({.stages = 2, .micro_batches = 8,
//                          .schedule = PipelineSchedule::one_f_one_b});
//   model.compile("adam", "mse", {}, {.strategy = std::make_shared<PipelineParallel>(pipe)});
//   model.fit(x, y, {.batch_size = 64});          // 8 micro-batches of 8 rows
//   pipe.stats().bubble();                         // measured idle fraction
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "osprey/distribute/cluster/worker_group.h"
#include "osprey/distribute/pipeline/pipeline_schedule.h"
#include "osprey/distribute/strategy_base.h"

namespace osprey::distribute {

struct PipelineOptions {
  int stages = 2;
  int micro_batches = 4;  // per step and pipeline; the batch share must divide by it
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  // The index of the first layer of each stage after the first (stages - 1 increasing entries);
  // empty: split where the measured per-layer forward and backward times balance best.
  std::vector<int> split_points{};
  int replicas = 1;           // data-parallel pipelines
  int threads_per_stage = 0;  // each stage's kernel threads; 0: num_threads() / devices
  // Keep every stage in this process even when it was launched as one of several workers
  // (mpirun, OSPREY_CONFIG); by default worker s runs stage s (stages must equal the workers).
  bool single_process = false;
};

// What a pipeline did, summed over the steps since the last reset (stats() of the strategy).
// Across workers every worker's stats cover every stage (each step's stage records are shared).
struct PipelineStats {
  int64_t steps = 0;
  double wall_seconds = 0.0;              // the schedules' spans (the update after excluded)
  std::vector<double> busy_seconds;       // per stage: time inside F and B, not waiting
  std::vector<int> max_live_activations;  // per stage: micro-batches held between F and B
  std::vector<int> split_points;          // the stages' first layers the last step used
  // PipeDream: for every (stage, micro-batch) of the last step, the weight version its forward
  // used and the one its backward used (equal under weight stashing), and the largest gap
  // between a forward's version and the stage's newest version when its backward ran.
  struct Versions {
    int stage = 0, micro_batch = 0;
    int64_t forward = 0, backward = 0, newest = 0;
  };
  std::vector<Versions> versions;
  int64_t max_version_gap = 0;
  // 1 - busy / (stages * wall): the measured bubble (idle fraction) of the pipeline.
  double bubble() const;
};

class PipelineParallel final : public StrategyBase {
 public:
  explicit PipelineParallel(PipelineOptions options = {});
  std::string name() const override { return "PipelineParallel"; }
  std::string describe() const override;
  int num_replicas_in_sync() const override { return options_.replicas; }
  int num_workers() const noexcept override { return group_ ? group_->size() : 1; }
  int worker_rank() const noexcept override { return group_ ? group_->rank() : 0; }
  // The workers the stages span (null: this process alone), connected at construction.
  const std::shared_ptr<WorkerGroup>& worker_group() const noexcept { return group_; }
  const PipelineOptions& options() const noexcept { return options_; }
  std::unique_ptr<train::StepExecutor> make_executor(
      std::shared_ptr<models::Network> network,
      std::shared_ptr<optim::Optimizer> optimizer) const override;
  std::shared_ptr<const train::Strategy> clone() const override {
    return std::make_shared<PipelineParallel>(*this);
  }
  // Shared by copies of this strategy and the executors they make.
  PipelineStats stats() const;
  void reset_stats() const;

  struct Shared {
    std::mutex mutex;
    PipelineStats stats;
  };

 private:
  PipelineOptions options_;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<WorkerGroup> group_;  // the workers the stages span; null: this process
};

}  // namespace osprey::distribute
