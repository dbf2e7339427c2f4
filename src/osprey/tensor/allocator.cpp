#include "osprey/tensor/allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

#include "osprey/core/error.h"
#include "osprey/core/trace.h"

namespace osprey {

namespace {
constexpr size_t kAlign = 64;
constexpr size_t kHugePage = size_t{2} << 20;

void* system_allocate(size_t bytes) {
  const size_t align = bytes >= kHugePage ? kHugePage : kAlign;
  // posix_memalign, not aligned_alloc: a large block's size need not be a multiple of 2 MiB.
  void* p = nullptr;
  if (posix_memalign(&p, align, bytes) != 0) p = nullptr;
  if (p == nullptr) {
    OSPREY_THROW(Error, "out of memory: failed to allocate {} bytes for a tensor", bytes);
  }
  if (bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}
}  // namespace

Allocator& Allocator::instance() {
  // Leaked on purpose: tensors held in static storage may be freed after main returns.
  static Allocator* a = new Allocator();
  return *a;
}

Allocator::~Allocator() { release_cached(); }

size_t Allocator::round_size(size_t bytes) noexcept {
  if (bytes == 0) bytes = 1;
  if (bytes <= 4096) return (bytes + kAlign - 1) / kAlign * kAlign;
  // Classes of 1/8 of a power of two: at most 12.5% waste with few lists. Large blocks too:
  // rounding them up to whole 2 MiB pages instead wasted a third of a 4.5 MiB activation (a
  // GPT's [12, 256, 384] float32), and a step holds dozens of them.
  size_t p = 4096;
  while (p * 2 <= bytes) p *= 2;
  const size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

void* Allocator::allocate(size_t bytes) {
  const size_t size = round_size(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.allocations;
    stats_.bytes_in_use += static_cast<int64_t>(size);
    if (trace::enabled()) {  // the profiler's memory counters
      trace::counter("bytes_in_use", static_cast<double>(stats_.bytes_in_use));
      if (stats_.bytes_in_use > stats_.peak_bytes_in_use) {
        trace::counter("peak_bytes_in_use", static_cast<double>(stats_.bytes_in_use));
      }
    }
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      ++stats_.cache_hits;
      stats_.bytes_cached -= static_cast<int64_t>(size);
      return p;
    }
    ++stats_.system_allocations;
  }
  try {
    return system_allocate(size);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytes_in_use -= static_cast<int64_t>(size);
    --stats_.system_allocations;
    throw;
  }
}

void Allocator::deallocate(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  const size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= static_cast<int64_t>(size);
  trace::counter("bytes_in_use", static_cast<double>(stats_.bytes_in_use));
  stats_.bytes_cached += static_cast<int64_t>(size);
  try {
    free_[size].push_back(p);
  } catch (...) {
    stats_.bytes_cached -= static_cast<int64_t>(size);
    ++stats_.system_frees;
    std::free(p);
  }
}

AllocatorStats Allocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Allocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void Allocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, blocks] : free_) {
    for (void* p : blocks) {
      std::free(p);
      ++stats_.system_frees;
    }
    blocks.clear();
  }
  stats_.bytes_cached = 0;
}

}  // namespace osprey
