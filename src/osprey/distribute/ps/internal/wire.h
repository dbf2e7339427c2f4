// Tensors to and from ps.proto's TensorData. Everything that arrives over the network is outside
// input: from_wire checks the dtype name, the shape and the byte count against each other before
// it allocates, and names the message and the tensor in its errors. Internal to distribute/ (it
// exposes protobuf types); not installed.
#pragma once

#include <string>
#include <string_view>

#include "osprey/distribute/ps/ps.pb.h"
#include "osprey/tensor/tensor.h"

namespace osprey::distribute::ps {

// Fills `out` with t's name, shape, dtype and elements. bf16: a float32 tensor is sent as
// bfloat16 (round to nearest even), half the bytes; other dtypes are sent as they are.
void to_wire(const Tensor& t, const std::string& name, TensorData* out, bool bf16 = false);

// The tensor `d` describes (a new contiguous tensor on the CPU). Throws ValueError naming
// `what` ("Push from worker 1") and d.name() for an unknown dtype, a negative dimension, or a
// data size that is not numel x the dtype's size.
Tensor from_wire(const TensorData& d, std::string_view what);

// A new float32 tensor of d's shape holding d's elements, which must be float32 or bfloat16
// (what a parameter server accepts as gradients). Checks as from_wire, before it allocates.
Tensor floats_from_wire(const TensorData& d, std::string_view what);

// d's elements as float32 into dst, which holds n floats: d must be float32 or bfloat16 with n
// elements (ValueError naming `what`, d.name() and both shapes otherwise). No allocation.
void read_floats(const TensorData& d, float* dst, int64_t n, std::string_view what);

}  // namespace osprey::distribute::ps
