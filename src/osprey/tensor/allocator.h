// The caching allocator behind every tensor's storage. Freed blocks are kept in per-size free
// lists and handed out again, so a training step in steady state never calls the system
// allocator: on these VMs the first touch of a fresh 4 KiB page costs about 11 us, and memory
// returned to the OS and taken back each step is the single biggest slowdown there is.
// Blocks are 64-byte aligned; blocks of 2 MiB and more are 2 MiB aligned and madvise'd
// MADV_HUGEPAGE.
//   void* p = Allocator::instance().allocate(bytes);  ...  Allocator::instance().deallocate(p,
//   bytes);
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace osprey {

struct AllocatorStats {
  int64_t system_allocations = 0;  // calls into the system allocator (the costly kind)
  int64_t system_frees = 0;
  int64_t allocations = 0;  // requests served, cached or not
  int64_t cache_hits = 0;
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_cached = 0;  // held in free lists, ready for reuse
};

class Allocator {
 public:
  static Allocator& instance();

  void* allocate(size_t bytes);
  void deallocate(void* p, size_t bytes) noexcept;
  // Size actually reserved for a request: allocation classes keep the free lists few.
  static size_t round_size(size_t bytes) noexcept;

  AllocatorStats stats() const;
  void reset_peak();
  // Returns every cached block to the system (for tests and memory-pressure callers).
  void release_cached();

  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  ~Allocator();

 private:
  Allocator() = default;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // rounded size -> free blocks
  AllocatorStats stats_;
};

}  // namespace osprey
