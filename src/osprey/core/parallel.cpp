#include "osprey/core/parallel.h"

#include <omp.h>

#include <charconv>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>

#include "osprey/core/error.h"
#include "osprey/core/thread_sanitizer.h"

namespace osprey {

namespace {
int initial_threads() {
  for (const char* var : {"OSPREY_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* env = std::getenv(var);
    if (env == nullptr || *env == '\0') continue;
    std::string_view s(env);
    int v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && v > 0) return v;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int& thread_setting() {
  static int n = [] {
    const int v = initial_threads();
    omp_set_num_threads(v);
    return v;
  }();
  return n;
}

thread_local int t_limit = 0;
}  // namespace

int num_threads() noexcept { return t_limit > 0 ? t_limit : thread_setting(); }

void set_num_threads(int n) {
  OSPREY_CHECK(n >= 1, "set_num_threads: the thread count must be at least 1. Received: {}", n);
  thread_setting() = n;
  if (t_limit == 0) omp_set_num_threads(n);
}

void set_thread_limit(int n) {
  OSPREY_CHECK(n >= 0, "set_thread_limit: the limit must be at least 0 (0: none). Received: {}", n);
  t_limit = n;
  // OpenMP's count is per thread too (libgomp keeps an ICV per thread): oneDNN reads it.
  omp_set_num_threads(num_threads());
}

int thread_limit() noexcept { return t_limit; }

ThreadLimitGuard::ThreadLimitGuard(int n) : previous_(t_limit) { set_thread_limit(n); }
ThreadLimitGuard::~ThreadLimitGuard() { set_thread_limit(previous_); }

bool in_parallel_region() noexcept { return omp_in_parallel() != 0; }

int64_t num_chunks(int64_t n, int64_t grain) noexcept {
  if (n <= 0) return 0;
  if (grain < 1) grain = 1;
  return (n + grain - 1) / grain;
}

// Under TSan (thread_sanitizer.h), the region's start orders the caller's writes before each
// chunk, and its end each chunk's writes before the caller goes on; two chunks stay unordered,
// so a race between them is still reported. parallel_for itself is not instrumented: GCC hands
// the region its captures through a block it writes after happens_before and its threads read
// before happens_after. The body, fn, is instrumented.
#ifdef OSPREY_THREAD_SANITIZER
__attribute__((no_sanitize("thread")))
#endif
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int threads = num_threads();
  if (threads == 1 || n <= grain || in_parallel_region()) {
    fn(begin, end);
    return;
  }
  const int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  std::exception_ptr error;
  std::mutex error_mutex;
  char region_start = 0, region_end = 0;  // only their addresses matter, to TSan
  happens_before(&region_start);
#pragma omp parallel for num_threads(static_cast <int>(chunks)) schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    happens_after(&region_start);
    try {
      fn(begin + chunk_begin(n, chunks, c), begin + chunk_begin(n, chunks, c + 1));
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
    happens_before(&region_end);
  }
  happens_after(&region_end);
  if (error) std::rethrow_exception(error);
}

}  // namespace osprey
