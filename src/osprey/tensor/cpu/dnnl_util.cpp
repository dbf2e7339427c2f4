#include "osprey/tensor/cpu/dnnl_util.h"

#include <algorithm>
#include <optional>

#include "osprey/core/trace.h"
#include "osprey/tensor/allocator.h"
#include "osprey/tensor/cpu/dnnl_info.h"

namespace osprey::cpu {

const dnnl::engine& engine() {
  static const dnnl::engine* e = [] {
    apply_cpu_isa_cap();
    return new dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return *e;
}

const dnnl::stream& stream() {
  thread_local const dnnl::stream s(engine());
  return s;
}

dnnl_dt to_dnnl(DType d) noexcept {
  switch (d) {
    case DType::float32:
      return dnnl_dt::f32;
    case DType::bfloat16:
      return dnnl_dt::bf16;
    case DType::float16:
      return dnnl_dt::f16;
    case DType::int8:
      return dnnl_dt::s8;
    case DType::uint8:
      return dnnl_dt::u8;
    case DType::int32:
      return dnnl_dt::s32;
    default:
      return dnnl_dt::undef;
  }
}

bool dnnl_float_ok(DType d) noexcept {
  if (d == DType::float32) return true;
  if (d == DType::bfloat16) return native_bf16();
  return false;
}

dnnl::algorithm eltwise_algorithm(Activation a) noexcept {
  switch (a) {
    case Activation::relu:
      return dnnl::algorithm::eltwise_relu;
    case Activation::gelu_tanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::gelu_erf:
      return dnnl::algorithm::eltwise_gelu_erf;
    case Activation::sigmoid:
      return dnnl::algorithm::eltwise_logistic;
    case Activation::tanh:
      return dnnl::algorithm::eltwise_tanh;
    case Activation::none:
      break;
  }
  return dnnl::algorithm::undef;
}

bool half_via_float32(std::initializer_list<const Tensor*> ts) noexcept {
  std::optional<DType> d;  // the first defined tensor's; every other must match it
  for (const Tensor* t : ts) {
    if (t == nullptr || !t->defined()) continue;
    if (!d) d = t->dtype();
    if (t->dtype() != *d) return false;
  }
  return d == DType::float16 || (d == DType::bfloat16 && !dnnl_float_ok(DType::bfloat16));
}

Tensor float32_copy(const Tensor* t) { return t != nullptr ? t->to(DType::float32) : Tensor(); }

Tensor float32_like(const Tensor& t) {
  return Tensor::empty(t.shape(), {DType::float32, t.device()});
}

void fix_unit_strides(const dnnl_dims& dims, dnnl_dims& strides) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != 1 || strides[i] > 0) continue;
    int64_t extent = 1;
    for (size_t j = 0; j < dims.size(); ++j) {
      if (j != i && dims[j] > 1) extent = std::max(extent, dims[j] * strides[j]);
    }
    strides[i] = extent;
  }
}

dnnl::memory::desc make_md(const dnnl_dims& dims, dnnl_dt dt, const dnnl_dims& strides) {
  dnnl_dims s = strides;
  fix_unit_strides(dims, s);
  return dnnl::memory::desc(dims, dt, s);
}

void tensor_dims(const Tensor& t, std::initializer_list<int> perm, dnnl_dims& dims,
                 dnnl_dims& strides) {
  const int nd = t.ndim();
  dims.resize(static_cast<size_t>(nd));
  strides.resize(static_cast<size_t>(nd));
  for (int i = 0; i < nd; ++i) {
    const int ax = perm.size() == 0 ? i : perm.begin()[i];
    dims[static_cast<size_t>(i)] = t.shape()[ax];
    strides[static_cast<size_t>(i)] = t.strides()[ax];
  }
}

dnnl::memory::desc tensor_md(const Tensor& t, std::initializer_list<int> perm) {
  dnnl_dims dims, strides;
  tensor_dims(t, perm, dims, strides);
  return make_md(dims, to_dnnl(t.dtype()), strides);
}

bool dnnl_layout_ok(const Tensor& t) noexcept {
  for (int i = 0; i < t.ndim(); ++i) {
    if (t.strides()[i] < 0) return false;
    if (t.strides()[i] == 0 && t.shape()[i] > 1) return false;
  }
  return true;
}

namespace {
struct ThreadScratch {
  void* p = nullptr;
  size_t n = 0;
  ~ThreadScratch() {
    if (p != nullptr) Allocator::instance().deallocate(p, n);
  }
};
}  // namespace

void* thread_scratch(size_t bytes) {
  thread_local ThreadScratch s;
  if (bytes > s.n) {
    if (s.p != nullptr) Allocator::instance().deallocate(s.p, s.n);
    s.p = nullptr;
    s.n = 0;
    const size_t n = Allocator::round_size(bytes);
    s.p = Allocator::instance().allocate(n);
    s.n = n;
  }
  return s.p;
}

dnnl::primitive_attr base_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

DnnlOp::DnnlOp(const dnnl::primitive_desc_base& pd, std::vector<Arg> args)
    : prim_(pd.get()), args_(std::move(args)) {
  note_primitive_created();
  impl_ = pd.impl_info_str();
  mems_.reserve(args_.size());
  for (const Arg& a : args_)
    mems_.emplace_back(a.md, engine(), static_cast<void*>(DNNL_MEMORY_NONE));
  scratch_md_ = pd.scratchpad_desc();
  scratch_bytes_ = scratch_md_.get_size();
  if (scratch_bytes_ > 0)
    scratch_mem_ = dnnl::memory(scratch_md_, engine(), static_cast<void*>(DNNL_MEMORY_NONE));
}

void DnnlOp::execute(std::initializer_list<void*> ptrs) const {
  constexpr size_t kMaxArgs = 24;  // an LSTM backward binds 19
  OSPREY_ASSERT(ptrs.size() == args_.size() && ptrs.size() < kMaxArgs,
                "DnnlOp::execute: {} pointers for {} arguments", ptrs.size(), args_.size());
  // The profiler shows which implementation oneDNN chose ("brg:avx512_core") on the op's span.
  trace::annotate("kernel", [this] { return impl_; });
  dnnl_exec_arg_t exec[kMaxArgs + 1];
  dnnl::memory temps[kMaxArgs + 1];
  const bool mine = !busy_.exchange(true, std::memory_order_acquire);
  struct Release {
    std::atomic<bool>* flag;
    bool mine;
    ~Release() {
      if (mine) flag->store(false, std::memory_order_release);
    }
  } release{&busy_, mine};
  int n = 0;
  for (void* p : ptrs) {
    const size_t i = static_cast<size_t>(n);
    dnnl_memory_t m;
    if (mine) {
      mems_[i].set_data_handle(p);
      m = mems_[i].get();
    } else {
      temps[i] = dnnl::memory(args_[i].md, engine(), p);
      m = temps[i].get();
    }
    exec[n++] = {args_[i].id, m};
  }
  if (scratch_bytes_ > 0) {
    void* buf = thread_scratch(scratch_bytes_);
    dnnl_memory_t m;
    if (mine) {
      scratch_mem_.set_data_handle(buf);
      m = scratch_mem_.get();
    } else {
      temps[kMaxArgs] = dnnl::memory(scratch_md_, engine(), buf);
      m = temps[kMaxArgs].get();
    }
    exec[n++] = {DNNL_ARG_SCRATCHPAD, m};
  }
  const dnnl_status_t st = dnnl_primitive_execute(prim_.get(), stream().get(), n, exec);
  OSPREY_ASSERT(st == dnnl_success, "oneDNN primitive {} failed to execute: status {}", impl_,
                static_cast<int>(st));
}

}  // namespace osprey::cpu
