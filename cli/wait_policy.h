// How the OpenMP threads of an osprey process wait when idle. libgomp's default spins up to
// 300,000 times before sleeping, so two trainings sharing 2 cores each ran at 8% of their solo
// speed; OMP_WAIT_POLICY=PASSIVE fixes that (81%) but costs a solo run 15%; GOMP_SPINCOUNT=1000
// keeps the solo speed (+0.4%) and gives each of the pair 56% (bench/share_cores.sh, RESULTS.md).
// libgomp reads these only when it loads, so `osprey` sets them and re-executes itself, and
// `osprey launch` hands them to its workers; a user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace osprey::cli {

inline constexpr const char* kSharedCoreSpinCount = "1000";

// The variable to pass on: the user's OMP_WAIT_POLICY or GOMP_SPINCOUNT when set (either may be
// null), else GOMP_SPINCOUNT=kSharedCoreSpinCount.
inline std::pair<std::string, std::string> wait_setting(const char* user_wait_policy,
                                                        const char* user_spin_count) {
  if (user_wait_policy != nullptr) return {"OMP_WAIT_POLICY", user_wait_policy};
  if (user_spin_count != nullptr) return {"GOMP_SPINCOUNT", user_spin_count};
  return {"GOMP_SPINCOUNT", kSharedCoreSpinCount};
}

}  // namespace osprey::cli
