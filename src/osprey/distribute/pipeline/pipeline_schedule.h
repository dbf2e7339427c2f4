// The order in which each stage of a pipeline runs the forward (F) and backward (B) passes of a
// step's micro-batches, for the three schedules PipelineParallel offers, and how layers are
// split into stages of balanced cost. Plain functions of (schedule, stage, stages, micro-batches)
// so the orders are testable by themselves:
//   GPipe (Huang et al. 2019): every F, then every B in reverse (fill, drain); p - 1 idle slots
//     at each end, bubble (p-1)/(m+p-1), m micro-batches' activations alive at once.
//   1F1B (PipeDream-Flush, Narayanan et al. 2021): stage s runs p - s - 1 warm-up forwards, then
//     alternates one F and one B, then drains: the same bubble, at most p - s activations alive.
//   PipeDream (Narayanan et al. 2019): the 1F1B order, but each stage updates its weights after
//     every micro-batch's B instead of once per step; weight stashing keeps each micro-batch's
//     F and B on the same weight version.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace osprey::distribute {

enum class PipelineSchedule : uint8_t { gpipe, one_f_one_b, pipedream };
std::string to_string(PipelineSchedule schedule);
// "gpipe", "1f1b" (or "one_f_one_b"), "pipedream"; ValueError listing them otherwise.
PipelineSchedule parse_pipeline_schedule(const std::string& name);

struct PipelineOp {
  bool forward = true;
  int micro_batch = 0;
  bool operator==(const PipelineOp&) const = default;
};

// Stage `stage`'s ops for one step of `micro_batches`, in order.
std::vector<PipelineOp> stage_ops(PipelineSchedule schedule, int stage, int stages,
                                  int micro_batches);
// (p - 1) / (m + p - 1): the idle fraction of a fill-drain pipeline with equal stage times.
double theoretical_bubble(int stages, int micro_batches);

// Contiguous stages of layers whose summed costs have the smallest possible maximum (the linear
// partition problem, by dynamic programming). Returns the index of each stage's first layer,
// stages - 1 entries (stage 0 starts at 0). ValueError when there are fewer layers than stages.
std::vector<int> balance_stages(const std::vector<double>& costs, int stages);

}  // namespace osprey::distribute
