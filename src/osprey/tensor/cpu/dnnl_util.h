// oneDNN plumbing shared by the fast CPU kernels: the one engine, a stream per calling thread,
// dtype mapping, memory descriptors built from a Tensor's sizes and strides, and DnnlOp — a
// created primitive with the memory descriptors of its arguments, executed many times on new
// data pointers through the C API (no per-call std::unordered_map, no per-call memory objects).
//   auto* op = cache.get_or_create<DnnlOp>(key, [&] { return std::make_unique<DnnlOp>(pd, args);
//   }); op->execute({x.raw_data(), y.raw_data()});
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <oneapi/dnnl/dnnl.hpp>
#include <utility>
#include <vector>

#include "osprey/tensor/backend.h"
#include "osprey/tensor/cpu/primitive_cache.h"
#include "osprey/tensor/tensor.h"

namespace osprey::cpu {

using dnnl_dims = dnnl::memory::dims;
using dnnl_dt = dnnl::memory::data_type;

// The CPU engine (index 0) every primitive is created on.
const dnnl::engine& engine();
// A stream on engine() for the calling thread (streams are not shared between threads).
const dnnl::stream& stream();

// The oneDNN data type of d, or undef when oneDNN has none (float64, int64, bool, float8).
dnnl_dt to_dnnl(DType d) noexcept;
// True when oneDNN primitives take d as an activation type here: float32, and bfloat16 where the
// CPU computes it natively (AVX512_BF16 or AMX). Elsewhere oneDNN has its reference bf16 kernels
// (no AVX-512: about 170x slower than float32) or an emulation (AVX-512 without BF16: 1.7-2.5x
// slower than float32), and osprey runs float32 kernels on bfloat16 storage instead.
bool dnnl_float_ok(DType d) noexcept;

// The oneDNN eltwise algorithm of a fused activation (post-ops of matmul and convolution);
// undef for none.
dnnl::algorithm eltwise_algorithm(Activation a) noexcept;

// True when a kernel whose defined tensors (nulls are skipped) all hold one 16-bit float type
// runs its float32 path on float32 copies and stores the result back in that type: float16
// always (no f16 arithmetic on these CPUs, no f16 kernels in oneDNN for them), bfloat16 where the
// ISA (cap included) has no AVX512_BF16 (dnnl_float_ok). The numerics are mixed precision's:
// 16-bit storage, float32 math, each result rounded to the 16-bit type.
bool half_via_float32(std::initializer_list<const Tensor*> ts) noexcept;
// A float32 copy of *t, undefined for null.
Tensor float32_copy(const Tensor* t);
// A contiguous float32 tensor of t's shape, for a kernel's float32 result before it is stored
// into t.
Tensor float32_like(const Tensor& t);

// Gives size-1 dims with stride 0 (from expand) an outermost stride: any stride is valid there,
// but oneDNN's layout checks look at every stride. Positive strides are kept: they carry the
// layout (an NHWC tensor with C = 1 has C stride 1, which makes oneDNN see nhwc, not nchw).
void fix_unit_strides(const dnnl_dims& dims, dnnl_dims& strides);
// A memory descriptor with the given sizes and strides (in elements), size-1 dims fixed as
// above. Throws dnnl::error if oneDNN rejects the layout.
dnnl::memory::desc make_md(const dnnl_dims& dims, dnnl_dt dt, const dnnl_dims& strides);
// The tensor's own sizes and strides, with the axes reordered by perm (oneDNN axis i is the
// tensor's axis perm[i]); no perm means identity.
dnnl::memory::desc tensor_md(const Tensor& t, std::initializer_list<int> perm = {});
// Sizes and strides of t as oneDNN dims, reordered by perm.
void tensor_dims(const Tensor& t, std::initializer_list<int> perm, dnnl_dims& dims,
                 dnnl_dims& strides);
// True when no stride of t is negative and no axis of size > 1 has stride 0 (oneDNN requires
// non-overlapping plain layouts).
bool dnnl_layout_ok(const Tensor& t) noexcept;

// A growable per-thread buffer from the caching allocator, for oneDNN scratchpads.
void* thread_scratch(size_t bytes);

// Increments the count of created primitives (see dnnl_primitives_created()).
void note_primitive_created() noexcept;

// One created primitive and the descriptors of the arguments it binds, in a fixed order.
// execute() is safe from several threads at once: the cached memory objects are used by one
// caller at a time, a concurrent caller wraps its pointers in temporary memory objects.
class DnnlOp : public CacheEntry {
 public:
  struct Arg {
    int id;  // DNNL_ARG_*
    dnnl::memory::desc md;
  };
  DnnlOp(const dnnl::primitive_desc_base& pd, std::vector<Arg> args);

  // Pointers in the order of args; the scratchpad is bound here from a per-thread buffer.
  void execute(std::initializer_list<void*> ptrs) const;
  const dnnl::memory::desc& arg_md(size_t i) const { return args_[i].md; }
  const char* impl() const noexcept { return impl_.c_str(); }
  // True when oneDNN picked its reference (naive) implementation.
  bool is_reference_impl() const noexcept { return impl_.rfind("ref", 0) == 0; }

 private:
  dnnl::primitive prim_;
  std::vector<Arg> args_;
  std::vector<dnnl::memory> mems_;  // one per arg, handle set per call
  dnnl::memory::desc scratch_md_;
  dnnl::memory scratch_mem_;
  size_t scratch_bytes_ = 0;
  std::string impl_;
  mutable std::atomic<bool> busy_{false};
};

// Attributes every osprey primitive uses: a user-provided scratchpad.
dnnl::primitive_attr base_attr();

}  // namespace osprey::cpu
