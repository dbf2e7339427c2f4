// The primitive cache of the fast CPU backend: a hashed POD key (op kind, shapes, strides,
// dtypes, attributes, and the thread count of the calling thread) -> an entry created once (a
// oneDNN primitive with its memory descriptors, or a note that oneDNN cannot do this case and the
// reference kernel must). A training step creates no primitive after the first;
// dnnl_primitives_created() lets tests check that.
//   PrimitiveKey k(OpKind::matmul);  k.add_tensor(a);  k.add(flags);
//   auto* e = primitive_cache().get_or_create(k, [&] { return make_entry(...); });
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/tensor/tensor.h"

namespace osprey::cpu {

enum class OpKind : uint8_t {
  matmul,
  conv_fwd,
  conv_bwd_data,
  conv_bwd_weights,
  pool_fwd,
  pool_bwd,
  bnorm_fwd,
  bnorm_bwd,
  lnorm_fwd,
  lnorm_bwd,
  softmax_fwd,
  softmax_bwd,
  eltwise_fwd,
  eltwise_bwd,
  reorder,
  matmul_int8,
  conv2d_int8,
  rnn_fwd,
  rnn_bwd,
};

// A key of up to kMax 64-bit words with its hash computed as it grows. Built on the stack per
// call: no allocation, no strings.
class PrimitiveKey {
 public:
  static constexpr int kMax = 96;
  // The thread count is part of every key, as in oneDNN's own cache: a primitive plans its work
  // (blocking, per-thread scratchpad) for the threads it was created with and opens a team of
  // that size, so a replica worker limited to 1 thread must not run one made for 2 (parallel.h).
  explicit PrimitiveKey(OpKind kind) noexcept {
    add(static_cast<int64_t>(kind));
    add(num_threads());
  }
  void add(int64_t v) {
    OSPREY_ASSERT(n_ < kMax, "PrimitiveKey: more than {} words", kMax);
    v_[n_++] = v;
    hash_ = (hash_ ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
    hash_ ^= hash_ >> 29;
  }
  void add_double(double d) {
    int64_t v;
    std::memcpy(&v, &d, sizeof v);
    add(v);
  }
  // dtype, rank, sizes and strides.
  void add_tensor(const Tensor& t);
  uint64_t hash() const noexcept { return hash_; }
  bool operator==(const PrimitiveKey& o) const noexcept {
    return n_ == o.n_ && hash_ == o.hash_ && std::memcmp(v_, o.v_, sizeof(int64_t) * n_) == 0;
  }

 private:
  int64_t v_[kMax];
  int n_ = 0;
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

struct PrimitiveKeyHash {
  size_t operator()(const PrimitiveKey& k) const noexcept { return k.hash(); }
};

// Base of everything the cache holds. An entry is immutable after creation (apart from
// internally synchronized members) and lives until the process ends.
class CacheEntry {
 public:
  virtual ~CacheEntry() = default;
};

class PrimitiveCache {
 public:
  // The entry for key; creates it with make() (outside the lock) when absent. make() may return
  // nullptr to record "unsupported: use the reference kernel", which is cached too. Thread-safe.
  template <class E, class Make>
  E* get(const PrimitiveKey& key, Make&& make) {
    bool found = false;
    CacheEntry* e = lookup(key, found);
    if (!found) e = insert(key, make());
    return static_cast<E*>(e);
  }
  size_t size() const;

 private:
  CacheEntry* lookup(const PrimitiveKey& key, bool& found) const;
  // Keeps an entry another thread inserted meanwhile (and drops e).
  CacheEntry* insert(const PrimitiveKey& key, std::unique_ptr<CacheEntry> e);

  mutable std::mutex mutex_;
  std::unordered_map<PrimitiveKey, std::unique_ptr<CacheEntry>, PrimitiveKeyHash> map_;
};

PrimitiveCache& primitive_cache();

// oneDNN primitives created by the fast backend since the process started.
int64_t dnnl_primitives_created() noexcept;

}  // namespace osprey::cpu
