// How ModelParallel runs a layer whose kernel is split over the model axis of a mesh: Dense,
// Conv2D and Embedding as column-parallel (kernel split on its output dimension) or row-parallel
// (split on its input dimension) computations, with the collectives the split requires
// (Megatron-LM's conjugate pairs: an identity whose backward all-reduces before a column split,
// an all-reduce whose backward is the identity after a row split, an all-gather whose backward
// takes this rank's slice, a slice whose backward all-gathers). Every device of a model group
// runs the same code on its own shards; the group's Communicator carries the collectives.
//   auto sharded = make_sharded_layer(dense, ShardMode::column, 2, rank_in_group, group, true);
//   network.replace_sublayer(dense->name(), sharded);   // same name, same weight paths
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "osprey/comm/communicator.h"
#include "osprey/nn/layer.h"

namespace osprey::distribute {

// The differentiable collectives over a model group (each rank holds a 1/size part of `axis`).
// Forward identity, backward all-reduce (sum): the input of a column-parallel layer.
autograd::Variable copy_to_group(const autograd::Variable& x, comm::Communicator& group);
// Forward all-reduce (sum), backward identity: the output of a row-parallel layer.
autograd::Variable reduce_from_group(const autograd::Variable& x, comm::Communicator& group);
// Forward: the ranks' parts concatenated along `axis` in rank order; backward: this rank's part.
autograd::Variable gather_from_group(const autograd::Variable& x, int axis,
                                     comm::Communicator& group);
// Forward: this rank's part of `axis` (size must divide it); backward: the parts' all-gather.
autograd::Variable scatter_to_group(const autograd::Variable& x, int axis,
                                    comm::Communicator& group);

// Which dimension of the kernel the model axis splits. replicated: neither (only the bias is
// split, or nothing).
enum class ShardMode : uint8_t { replicated, column, row };
std::string to_string(ShardMode mode);

// Where each of a sharded layer's weights is split.
struct ShardPlan {
  ShardMode mode = ShardMode::replicated;
  bool bias_sharded = false;  // the bias holds this rank's part of the output features
  // Column layer: leave the output split over the group (the next layer is row-parallel and takes
  // it as it is). Row layer: the input arrives split.
  bool output_split = false;
  bool input_split = false;
};

// The layer that replaces `layer` (a built Dense, Conv2D with groups 1, or Embedding) on one
// device: same name and weight paths, kernel and bias of this rank's shard shapes (their values
// are set by the caller). ValueError naming the layer for another class or an unsupported
// option.
std::shared_ptr<nn::Layer> make_sharded_layer(const nn::Layer& layer, const ShardPlan& plan,
                                              comm::Communicator& group);

// The input dimension (Dense, Conv2D) or vocabulary (Embedding) that a row split divides, and the
// output features a column split divides, of a Dense, Conv2D or Embedding kernel; -1 for others.
int kernel_output_dim(const nn::Layer& layer);
int kernel_input_dim(const nn::Layer& layer);
// "kernel", or "embeddings" for Embedding: the weight whose layout decides the mode.
std::string kernel_name(const nn::Layer& layer);

}  // namespace osprey::distribute
