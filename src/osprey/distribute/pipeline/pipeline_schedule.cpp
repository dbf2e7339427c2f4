#include "osprey/distribute/pipeline/pipeline_schedule.h"

#include <algorithm>
#include <limits>

#include "osprey/core/error.h"

namespace osprey::distribute {

std::string to_string(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::gpipe:
      return "gpipe";
    case PipelineSchedule::pipedream:
      return "pipedream";
    case PipelineSchedule::one_f_one_b:
      break;
  }
  return "1f1b";
}

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::gpipe;
  if (name == "1f1b" || name == "one_f_one_b") return PipelineSchedule::one_f_one_b;
  if (name == "pipedream") return PipelineSchedule::pipedream;
  OSPREY_THROW(ValueError,
               "PipelineParallel: unknown schedule '{}'; expected gpipe, 1f1b or pipedream", name);
}

std::vector<PipelineOp> stage_ops(PipelineSchedule schedule, int stage, int stages,
                                  int micro_batches) {
  OSPREY_CHECK(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1,
               "stage_ops: expected 0 <= stage < stages and micro_batches >= 1. Received: "
               "stage={}, stages={}, micro_batches={}",
               stage, stages, micro_batches);
  std::vector<PipelineOp> ops;
  if (schedule == PipelineSchedule::gpipe) {
    for (int i = 0; i < micro_batches; ++i) ops.push_back({true, i});
    for (int i = micro_batches; i-- > 0;) ops.push_back({false, i});
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, micro_batches);
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back({true, f});
  while (f < micro_batches) {
    ops.push_back({true, f++});
    ops.push_back({false, b++});
  }
  while (b < micro_batches) ops.push_back({false, b++});
  return ops;
}

double theoretical_bubble(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

std::vector<int> balance_stages(const std::vector<double>& costs, int stages) {
  const int n = static_cast<int>(costs.size());
  OSPREY_CHECK(stages >= 1 && n >= stages,
               "PipelineParallel: {} layers cannot make {} stages of at least one layer each", n,
               stages);
  std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[static_cast<size_t>(i)];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the smallest maximum stage cost splitting the first i layers into k stages;
  // cut[k][i]: where the last of those stages starts.
  std::vector<std::vector<double>> best(static_cast<size_t>(stages) + 1,
                                        std::vector<double>(static_cast<size_t>(n) + 1, inf));
  std::vector<std::vector<int>> cut(static_cast<size_t>(stages) + 1,
                                    std::vector<int>(static_cast<size_t>(n) + 1, 0));
  best[0][0] = 0.0;
  for (int k = 1; k <= stages; ++k) {
    for (int i = k; i <= n; ++i) {
      for (int j = k - 1; j < i; ++j) {
        const double v = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (v < best[k][i]) {
          best[k][i] = v;
          cut[k][i] = j;
        }
      }
    }
  }
  std::vector<int> starts(static_cast<size_t>(stages) - 1);
  int i = n;
  for (int k = stages; k > 1; --k) {
    i = cut[k][i];
    starts[static_cast<size_t>(k) - 2] = i;
  }
  return starts;
}

}  // namespace osprey::distribute
