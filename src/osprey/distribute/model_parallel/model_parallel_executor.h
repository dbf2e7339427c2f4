// The step executor of ModelParallel (one per compiled model). Every mesh device is a virtual
// device (a persistent worker thread) holding its own copy of the network in which each layer
// with a split kernel is replaced by its sharded form (sharded_layer.h), and its own optimizer,
// whose slots therefore have the shapes of the device's shards. Devices sharing a batch
// coordinate form a model group (the layers' collectives); devices sharing a model coordinate
// form a data group (the gradients' mean). The compiled network stays whole on the host: the
// devices take their shards from it (sync_replicas) and give them back at each epoch's end.
#pragma once

#include <memory>

#include "osprey/distribute/model_parallel/model_parallel.h"

namespace osprey::distribute {

std::unique_ptr<train::StepExecutor> make_model_parallel_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer,
    const ModelParallel& strategy);

}  // namespace osprey::distribute
