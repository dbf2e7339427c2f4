// matmul_int8: a_q [M, K] int8 x b_q [K, N] int8 -> out [M, N] float32, dequantized by one
// scale per row of a and per column of b, plus bias and activation. Runs on the chunk scheme of
// int8_chunks.h: chunks of rows go through a cached one-thread oneDNN int8 -> s32 matmul (s8 x s8
// with VNNI, u8 x s8 without: see int8_src_type) and are dequantized while their sums are in
// cache. int8_matmul_impl names the implementation.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "osprey/tensor/cpu/int8_chunks.h"
#include "osprey/tensor/cpu/kernels.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::cpu {

namespace {

std::unique_ptr<Int8Entry> make_entry(int64_t m, int64_t k, int64_t n) {
  auto e = std::make_unique<Int8Entry>();
  try {
    const auto amd = make_md({m, k}, int8_src_type(), {k, 1});
    e->plain_b = make_md({k, n}, dnnl_dt::s8, {n, 1});
    const dnnl::memory::desc any_b({k, n}, dnnl_dt::s8, dnnl::memory::format_tag::any);
    const auto omd = make_md({m, n}, dnnl_dt::s32, {n, 1});
    const dnnl::primitive_attr attr = base_attr();
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(amd, any_b, omd), attr, engine());
    e->packed_b = pd.weights_desc();
    e->u8_src = int8_src_type() == dnnl_dt::u8;
    e->src_bytes = m * k;
    e->sums = m * n;
    e->op = std::make_unique<DnnlOp>(
        pd, std::vector<DnnlOp::Arg>{
                {DNNL_ARG_SRC, amd}, {DNNL_ARG_WEIGHTS, e->packed_b}, {DNNL_ARG_DST, omd}});
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return e;
}

// Rows of an int8 product per thread at least: one AMX tile is 16 rows.
constexpr int64_t kMinRowsPerThread = 16;

}  // namespace

Int8Entry* matmul_entry(int64_t m, int64_t k, int64_t n) {
  PrimitiveKey key(OpKind::matmul_int8);
  key.add(m);
  key.add(k);
  key.add(n);
  return primitive_cache().get<Int8Entry>(key, [&] { return make_entry(m, k, n); });
}

void matmul_int8(const Tensor& a_q, const Tensor& a_scale, const Tensor& b_q, const Tensor& b_scale,
                 const Tensor* bias, Tensor& out, Activation activation) {
  const int64_t m = a_q.shape()[0], k = a_q.shape()[1], n = b_q.shape()[1];
  if (out.numel() == 0) return;
  if (k == 0) return reference::matmul_int8(a_q, a_scale, b_q, b_scale, bias, out, activation);
  const bool relu = activation == Activation::relu;
  const Dequant d{a_scale.data<float>(), reciprocals(b_scale),
                  bias != nullptr ? bias->data<float>() : nullptr, relu};
  const auto* a = static_cast<const int8_t*>(a_q.raw_data());
  char* o = static_cast<char*>(out.raw_data());
  const auto entry_for = [&](int64_t mb) { return matmul_entry(mb, k, n); };
  const int64_t chunk = std::max<int64_t>(1, kChunkBytes / (4 * n));
  const bool ok = run_chunks(m, kMinRowsPerThread, chunk, b_q, entry_for,
                             [&](const Int8Entry& e, void* packed, int64_t r, int64_t mb) {
                               execute_int8(e, a + r * k, packed, o + r * n * 4);
                               dequantize_rows(o, r, r + mb, n, 1, d);
                             });
  if (!ok) return reference::matmul_int8(a_q, a_scale, b_q, b_scale, bias, out, activation);
  if (activation != Activation::none && !relu) unary(unary_op_of(activation), out, out, {});
}

std::string int8_matmul_impl(int64_t m, int64_t k, int64_t n) {
  auto e = make_entry(m, k, n);
  return e == nullptr ? std::string() : std::string(e->op->impl());
}

}  // namespace osprey::cpu
