// The thread pool every kernel shares. It is OpenMP's persistent team, on purpose: Debian's
// oneDNN runs on OpenMP, and a second pool of our own would put four busy threads on two cores
// (each pool spins while the other works). parallel_for splits a range by thread count, which is
// right for elementwise work; reductions instead cut their range with num_chunks/chunk_begin,
// which depend only on the range and the grain, and combine chunk results in chunk order, so a
// sum is bitwise identical on any number of threads.
//   parallel_for(0, n, 4096, [&](int64_t b, int64_t e) { for (auto i = b; i < e; ++i) y[i] = x[i];
//   });
#pragma once

#include <cstdint>
#include <functional>

namespace osprey {

// Threads used by kernels on this thread: its thread limit when one is set (a virtual device's
// share, below), else the process-wide count: OSPREY_NUM_THREADS, else OMP_NUM_THREADS, else the
// core count. set_num_threads changes the process-wide count.
int num_threads() noexcept;
void set_num_threads(int n);

// A virtual CPU device is a worker thread with its own share of the pool: with a limit of n set on
// a thread, num_threads() there is n, and so is the OpenMP team of every parallel region it opens
// (osprey's loops and oneDNN's, whose primitives are cached per thread count: primitive_cache.h).
// Without it, replica threads would each open a team as large as the machine (oversubscription).
// 0 removes the limit. The limit is per thread; other threads are unaffected.
void set_thread_limit(int n);
int thread_limit() noexcept;  // 0 when none is set

// Sets this thread's limit for a scope and restores the previous one (and its OpenMP count).
class [[nodiscard]] ThreadLimitGuard {
 public:
  explicit ThreadLimitGuard(int n);
  ~ThreadLimitGuard();
  ThreadLimitGuard(const ThreadLimitGuard&) = delete;
  ThreadLimitGuard& operator=(const ThreadLimitGuard&) = delete;

 private:
  int previous_;
};

// Calls fn(begin, end) over [begin, end) in chunks of at least `grain` elements, in parallel
// when the range is large enough. Exceptions thrown by fn are rethrown in the caller.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// Deterministic chunking: the number of chunks used for n elements at a given grain (the same
// on every thread count). Chunk c covers [chunk_begin(n, k, c), chunk_begin(n, k, c + 1)).
int64_t num_chunks(int64_t n, int64_t grain) noexcept;
inline int64_t chunk_begin(int64_t n, int64_t chunks, int64_t c) noexcept { return n * c / chunks; }

// True inside a parallel_for body (nested calls then run serially).
bool in_parallel_region() noexcept;

}  // namespace osprey
