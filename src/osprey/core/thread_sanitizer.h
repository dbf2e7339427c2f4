#pragma once
// Happens-before edges that ThreadSanitizer cannot see for itself. The runtimes osprey hands work
// to (GCC's OpenMP, gRPC's completion threads) are not built with TSan, so the order they give, a
// caller's writes before the work they start, is invisible to it, and every value handed over
// would be reported as a race. Where osprey starts such work it says so: happens_before(token) on
// the handing thread, happens_after(token) on the receiving one (as LLVM's Archer does for its own
// OpenMP runtime). Outside a TSan build both are empty.

#if defined(__SANITIZE_THREAD__)
#define OSPREY_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OSPREY_THREAD_SANITIZER 1
#endif
#endif

#ifdef OSPREY_THREAD_SANITIZER
extern "C" void __tsan_acquire(void* addr);  // NOLINT(bugprone-reserved-identifier)
extern "C" void __tsan_release(void* addr);  // NOLINT(bugprone-reserved-identifier)
#endif

namespace osprey {

// What this thread wrote so far is ordered before what a later happens_after(token) is followed by.
inline void happens_before(const void* token) {
#ifdef OSPREY_THREAD_SANITIZER
  __tsan_release(const_cast<void*>(token));
#else
  (void)token;
#endif
}

// What follows is ordered after every happens_before(token) that came before it.
inline void happens_after(const void* token) {
#ifdef OSPREY_THREAD_SANITIZER
  __tsan_acquire(const_cast<void*>(token));
#else
  (void)token;
#endif
}

}  // namespace osprey
