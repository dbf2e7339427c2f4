// The step executor of PipelineParallel (one per compiled model): replicas of the network (the
// first is the compiled network itself), each cut into stages that run on their own virtual
// devices (persistent worker threads) and pass activations and gradients with send/recv on an
// in-process communicator, in the order pipeline_schedule.h gives each stage; or, across the
// workers of a multi-worker job, one stage per worker over a cross-process communicator.
#pragma once

#include <memory>

#include "osprey/distribute/pipeline/pipeline_parallel.h"

namespace osprey::distribute {

std::unique_ptr<train::StepExecutor> make_pipeline_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer,
    const PipelineOptions& options, std::shared_ptr<PipelineParallel::Shared> shared,
    std::shared_ptr<WorkerGroup> group);

}  // namespace osprey::distribute
