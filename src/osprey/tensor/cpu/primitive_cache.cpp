#include "osprey/tensor/cpu/primitive_cache.h"

#include <atomic>

namespace osprey::cpu {

namespace {
std::atomic<int64_t> g_created{0};
}  // namespace

void note_primitive_created() noexcept { g_created.fetch_add(1, std::memory_order_relaxed); }
int64_t dnnl_primitives_created() noexcept { return g_created.load(std::memory_order_relaxed); }

void PrimitiveKey::add_tensor(const Tensor& t) {
  add(static_cast<int64_t>(t.dtype()) | (static_cast<int64_t>(t.ndim()) << 8));
  for (int i = 0; i < t.ndim(); ++i) add(t.shape()[i]);
  for (int i = 0; i < t.ndim(); ++i) add(t.strides()[i]);
}

CacheEntry* PrimitiveCache::lookup(const PrimitiveKey& key, bool& found) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(key);
  found = it != map_.end();
  return found ? it->second.get() : nullptr;
}

CacheEntry* PrimitiveCache::insert(const PrimitiveKey& key, std::unique_ptr<CacheEntry> e) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = map_.try_emplace(key, std::move(e));
  return it->second.get();
}

size_t PrimitiveCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return map_.size();
}

PrimitiveCache& primitive_cache() {
  // Leaked on purpose: primitives must outlive every static tensor and thread.
  static PrimitiveCache* c = new PrimitiveCache();
  return *c;
}

}  // namespace osprey::cpu
