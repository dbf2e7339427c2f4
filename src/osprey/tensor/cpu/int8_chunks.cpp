// The out-of-line parts of the int8 chunk scheme (int8_chunks.h): exact execution without VNNI,
// the packed weight cache and the dequantization loop.
#include "osprey/tensor/cpu/int8_chunks.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "osprey/tensor/cpu/dnnl_info.h"

namespace osprey::cpu {

namespace {

// memcmp(a, b, n) == 0, in parallel chunks of at least 64 KiB.
bool same_bytes(const int8_t* a, const int8_t* b, size_t n) {
  std::atomic<bool> same{true};
  parallel_for(0, static_cast<int64_t>(n), 65536, [&](int64_t lo, int64_t hi) {
    if (std::memcmp(a + lo, b + lo, static_cast<size_t>(hi - lo)) != 0)
      same.store(false, std::memory_order_relaxed);
  });
  return same.load();
}

// True when a byte of x[0, n) is negative as an int8 (its top bit set): the bytes OR'ed 32 at a
// time.
bool any_negative(const int8_t* x, int64_t n) {
  __m256i acc = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc = _mm256_or_si256(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
  }
  bool neg = _mm256_movemask_epi8(acc) != 0;
  for (; i < n; ++i) neg = neg || x[i] < 0;
  return neg;
}

}  // namespace

dnnl_dt int8_src_type() noexcept { return native_int8() ? dnnl_dt::s8 : dnnl_dt::u8; }

void execute_int8(const Int8Entry& e, const int8_t* src, void* packed, void* sums) {
  void* x = const_cast<int8_t*>(src);
  if (!e.u8_src || !any_negative(src, e.src_bytes)) return e.op->execute({x, packed, sums});
  thread_local std::vector<uint8_t> pos, neg;
  thread_local std::vector<int32_t> neg_sums;
  const auto n = static_cast<size_t>(e.src_bytes);
  pos.resize(n);
  neg.resize(n);
  neg_sums.resize(static_cast<size_t>(e.sums));
  // The byte as unsigned (two's complement): x itself for x >= 0, 256 + x for x < 0, whose
  // negation modulo 256 is -x (128 for -128, which fits a u8).
  for (size_t i = 0; i < n; ++i) {
    const auto u = static_cast<uint8_t>(src[i]);
    pos[i] = u < 128 ? u : uint8_t{0};
    neg[i] = u < 128 ? uint8_t{0} : static_cast<uint8_t>(256 - u);
  }
  e.op->execute({pos.data(), packed, sums});
  e.op->execute({neg.data(), packed, neg_sums.data()});
  auto* out = static_cast<int32_t*>(sums);
  for (int64_t i = 0; i < e.sums; ++i) out[i] -= neg_sums[static_cast<size_t>(i)];
}

std::shared_ptr<const PackedWeights> PackedWeightCache::get(const Tensor& b, const Int8Entry& e) {
  const auto* data = static_cast<const int8_t*>(b.raw_data());
  const size_t n = static_cast<size_t>(b.numel());
  std::shared_ptr<const PackedWeights> found;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& p : map_[data]) {
      if (p->md == e.packed_b && p->plain.size() == n) found = p;
    }
  }
  if (found != nullptr && same_bytes(found->plain.data(), data, n)) return found;
  auto p = std::make_shared<PackedWeights>();
  p->md = e.packed_b;
  p->plain.assign(data, data + n);
  p->packed = Tensor::empty({static_cast<int64_t>(e.packed_b.get_size())}, {DType::int8});
  dnnl::memory src(e.plain_b, engine(), const_cast<int8_t*>(data));
  dnnl::memory dst(e.packed_b, engine(), p->packed.raw_data());
  dnnl::stream st = stream();
  dnnl::reorder(src, dst).execute(st, src, dst);
  st.wait();
  std::lock_guard<std::mutex> lock(mutex_);
  if (map_.size() > kMaxTensors) map_.clear();  // entries in use stay alive through shared_ptr
  auto& list = map_[data];
  std::erase_if(list, [&](const auto& q) { return q->md == p->md; });
  list.push_back(p);
  return p;
}

PackedWeightCache& packed_weights() {
  static PackedWeightCache cache;
  return cache;
}

const float* reciprocals(const Tensor& b_scale) {
  thread_local std::vector<float> recip;
  const int64_t n = b_scale.numel();
  recip.resize(static_cast<size_t>(n));
  const float* sb = b_scale.data<float>();
  for (int64_t j = 0; j < n; ++j) recip[static_cast<size_t>(j)] = 1.0f / sb[j];
  return recip.data();
}

void dequantize_rows(char* o, int64_t lo, int64_t hi, int64_t n, int64_t rows_per_scale,
                     const Dequant& d) {
  // Locals, not struct members behind a pointer: the byte stores may alias those, which stops
  // vectorization. The bias and relu choices are hoisted out of the inner loop.
  const int64_t n_local = n, rows_local = rows_per_scale;
  const float* __restrict rb_local = d.rb;
  const float* __restrict bias_local = d.bias;
  const bool relu_local = d.relu;
  for (int64_t i = lo; i < hi; ++i) {
    const float ra = 1.0f / d.a_scale[i / rows_local];
    char* __restrict row = o + i * n_local * 4;
    for (int64_t j = 0; j < n_local; ++j) {
      int32_t acc;
      std::memcpy(&acc, row + j * 4, 4);
      float v = std::fma(static_cast<float>(acc), ra * rb_local[j],
                         bias_local != nullptr ? bias_local[j] : 0.0f);
      if (relu_local) v = v > 0.0f ? v : 0.0f;
      std::memcpy(row + j * 4, &v, 4);
    }
  }
}

}  // namespace osprey::cpu
