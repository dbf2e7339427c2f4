// The scheme matmul_int8 and conv2d_int8 (NHWC, groups 1) share: the threads claim cache-sized
// chunks of the rows (samples) and, for each, run a cached one-thread oneDNN s8 x s8 -> s32
// primitive (AVX512-VNNI or AMX where the CPU has them) on weights packed once and cached, then
// dequantize the chunk's int32 sums in place while they are still in its cache. Internal to
// tensor/cpu/: matmul_int8.cpp and conv2d_int8.cpp run their primitives through run_chunks.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "osprey/core/parallel.h"
#include "osprey/tensor/cpu/dnnl_util.h"

namespace osprey::cpu {

// An int8 primitive (matmul or convolution) with its weights' plain and preferred layouts, and
// the sizes of one execution's int8 input and int32 sums.
struct Int8Entry : CacheEntry {
  std::unique_ptr<DnnlOp> op;
  dnnl::memory::desc plain_b, packed_b;
  bool u8_src = false;  // reads its input as u8 (int8_src_type())
  int64_t src_bytes = 0, sums = 0;
};

// The type an int8 primitive reads its (int8) activations as. With VNNI or AMX, s8: oneDNN adds
// 128 and subtracts a compensation, exactly, in 32-bit sums. Without VNNI, oneDNN's AVX2 kernels
// add pairs of u8 x s8 products in 16-bit lanes (vpmaddubsw), which saturate past 32767; the s8
// path's +128 makes a pair reach 2 * 255 * 127, and results were off by up to 0.3 in the int8
// tests. There the primitives read u8 and execute_int8 feeds them values 0..128 only: a pair of
// products is then within [-32768, 32512], and every sum is exact on every ISA.
dnnl_dt int8_src_type() noexcept;

// Runs e on src (e.src_bytes of int8) into its int32 sums (e.sums). For a u8 primitive an input
// with negative values runs twice, on max(x, 0) and on max(-x, 0), and the second sums are
// subtracted (the products are linear in x, and integer sums exact); an input without negative
// values (images, what follows a relu) runs once, as is.
void execute_int8(const Int8Entry& e, const int8_t* src, void* packed, void* sums);

// Weights packed for one primitive's layout, with the plain bytes they were packed from.
struct PackedWeights {
  dnnl::memory::desc md;
  std::vector<int8_t> plain;
  Tensor packed;
};

// The packed weights of each weight tensor, per primitive layout. The weights go to oneDNN in the
// blocked layout it asks for (format "any"): with plain [K, N] weights it re-packs them on every
// call, 4x slower at [256, 784] x [784, 512] on AMX. The packed copy is cached per weight tensor
// and primitive layout and checked against a copy of the plain bytes on every call (each thread
// compares them for its own chunks: ~400 KB for the MLP's first kernel, from cache), so weights
// changed in place (set_weights, load) repack.
class PackedWeightCache {
 public:
  // The packed form of b (plain [K, N] int8) in layout e.packed_b, packing it when absent or stale.
  std::shared_ptr<const PackedWeights> get(const Tensor& b, const Int8Entry& e);

 private:
  static constexpr size_t kMaxTensors = 256;
  std::mutex mutex_;
  std::map<const void*, std::vector<std::shared_ptr<const PackedWeights>>> map_;
};

// The process-wide cache.
PackedWeightCache& packed_weights();

// The cached s8 x s8 -> s32 matmul primitive for [m, k] x [k, n] (null: unsupported). Defined in
// matmul_int8.cpp; conv2d_int8 also runs convolutions with few taps as this matmul.
Int8Entry* matmul_entry(int64_t m, int64_t k, int64_t n);

// 1 / b_scale, once per call, not once per element (the same float32 the reference divides by).
// In a thread-local buffer of the calling thread, valid until its next call.
const float* reciprocals(const Tensor& b_scale);

// What the dequantization of a row needs: act(fma(acc, (1 / a_scale) * rb[j], bias[j])), with
// rb = reciprocals(b_scale), bias null or [n], and relu the only activation done inline. oneDNN 2.6
// has no per-row output scales for matmul nor runtime output scales for convolutions, which is why
// the dequantization is a loop of ours.
struct Dequant {
  const float* a_scale;  // one per sample
  const float* rb;
  const float* bias;
  bool relu;
};

// Serially dequantizes in place the int32 sums of rows [lo, hi) of n columns (row i belongs to
// sample i / rows_per_scale). Each 4-byte slot holds an int32 and becomes its float32 value
// (memcpy keeps the type punning defined; it compiles to plain loads and stores).
void dequantize_rows(char* o, int64_t lo, int64_t hi, int64_t n, int64_t rows_per_scale,
                     const Dequant& d);

// The int32 sums of one chunk stay in this much cache before they are dequantized (and pooled):
// half the 2 MiB L2 of a core here, leaving room for the chunk's int8 input and the weights.
constexpr int64_t kChunkBytes = int64_t{1} << 20;

// Runs [0, count) rows (or samples) in chunks of at most `chunk` (and at most a thread's share,
// so every thread gets work) with one-thread primitives (entry_for(mb) for mb rows): the threads
// claim chunks in turn, and body(entry, packed weights, first row, mb) runs a chunk and
// post-processes its int32 sums on the thread that wrote them, while they are in its cache. One
// parallel region per call, not one for oneDNN and one per pass after it (each a barrier, and the
// passes re-read sums another core wrote); rows are independent, and a chunk's result does not
// depend on the thread that runs it. Claiming (rather than a fixed half each) lets one thread
// take over the chunks of another that the OS has descheduled, which on these shared machines is
// what stalls a barrier. False when oneDNN has no primitive for a chunk (the caller then runs the
// reference kernel).
template <class EntryFor, class Body>
bool run_chunks(int64_t count, int64_t grain, int64_t chunk, const Tensor& weights,
                EntryFor&& entry_for, Body&& body) {
  const int64_t threads =
      std::clamp<int64_t>(count / std::max<int64_t>(grain, 1), 1, num_threads());
  chunk = std::clamp<int64_t>(chunk, 1, (count + threads - 1) / threads);
  const int64_t chunks = (count + chunk - 1) / chunk;
  std::atomic<int64_t> next{0};
  std::atomic<bool> ok{true};
  parallel_for(0, threads, 1, [&](int64_t, int64_t) {
    const ThreadLimitGuard one_thread(1);
    for (int64_t c = next.fetch_add(1); c < chunks && ok.load(std::memory_order_relaxed);
         c = next.fetch_add(1)) {
      const int64_t s = c * chunk, mb = std::min(chunk, count - s);
      Int8Entry* e = entry_for(mb);
      if (e == nullptr) {
        ok.store(false);
        return;
      }
      const std::shared_ptr<const PackedWeights> packed = packed_weights().get(weights, *e);
      body(*e, packed->packed.raw_data(), s, mb);
    }
  });
  return ok.load();
}

}  // namespace osprey::cpu
