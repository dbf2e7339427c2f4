// Written by hand: the hook is osprey's own (SQLite's fault injection does the same inside
// SQLite); a shim over libc (LD_PRELOAD) could not tell a checkpoint's write from a log line's.
#include "osprey/core/fault_injection.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace osprey {

namespace {

// The points fault_point knows, in the order the count line lists them.
constexpr std::array<std::string_view, 4> kFaultPoints = {"write", "fsync", "rename", "allreduce"};

struct FaultPlan {
  enum class Mode { kNone, kKill, kFail, kCount };
  Mode mode = Mode::kNone;
  std::string point;
  long at = 1;
};

FaultPlan read_fault_plan() {
  FaultPlan p;
  const char* spec = std::getenv("OSPREY_FAULT_INJECT");
  if (spec == nullptr || *spec == '\0') return p;
  const std::string s(spec);
  if (s == "count") {
    p.mode = FaultPlan::Mode::kCount;
    return p;
  }
  // <point>:<n>[:fail]; anything else is a mistake in a test, said once and ignored.
  const size_t colon = s.find(':');
  const std::string point = s.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : s.substr(colon + 1);
  const size_t colon2 = rest.find(':');
  const std::string number = rest.substr(0, colon2);
  const std::string action = colon2 == std::string::npos ? "kill" : rest.substr(colon2 + 1);
  long n = 0;
  const auto [end_ptr, err] = std::from_chars(number.data(), number.data() + number.size(), n);
  const bool known =
      std::find(kFaultPoints.begin(), kFaultPoints.end(), point) != kFaultPoints.end();
  if (!known || err != std::errc() || end_ptr != number.data() + number.size() || n < 1 ||
      (action != "kill" && action != "fail")) {
    std::fprintf(stderr,
                 "osprey: OSPREY_FAULT_INJECT='%s' is not <point>:<n>[:fail] (points: write, "
                 "fsync, rename, allreduce; n >= 1) or count; ignored\n",
                 spec);
    return p;
  }
  p.mode = action == "fail" ? FaultPlan::Mode::kFail : FaultPlan::Mode::kKill;
  p.point = point;
  p.at = n;
  return p;
}

std::array<std::atomic<long>, kFaultPoints.size()> g_fault_counts{};

void print_fault_counts() {
  std::string line = "osprey: fault points reached:";
  for (size_t i = 0; i < kFaultPoints.size(); ++i)
    line += fmt::format(" {}={}", kFaultPoints[i], g_fault_counts[i].load());
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

int fault_point(const char* point) noexcept {
  static const FaultPlan plan = [] {
    FaultPlan p = read_fault_plan();
    if (p.mode == FaultPlan::Mode::kCount) std::atexit(print_fault_counts);
    return p;
  }();
  if (plan.mode == FaultPlan::Mode::kNone) return 0;
  if (plan.mode == FaultPlan::Mode::kCount) {
    for (size_t i = 0; i < kFaultPoints.size(); ++i) {
      if (kFaultPoints[i] == point) g_fault_counts[i].fetch_add(1, std::memory_order_relaxed);
    }
    return 0;
  }
  static std::atomic<long> seen{0};
  if (plan.point != point) return 0;
  if (seen.fetch_add(1) + 1 != plan.at) return 0;
  if (plan.mode == FaultPlan::Mode::kFail) {
    std::fprintf(stderr, "osprey: fault injection: failed %s #%ld with EIO (OSPREY_FAULT_INJECT)\n",
                 point, plan.at);
    return EIO;
  }
  std::fprintf(stderr, "osprey: fault injection: killed at %s #%ld (OSPREY_FAULT_INJECT)\n", point,
               plan.at);
  std::fflush(stderr);
  ::_exit(137);
}

}  // namespace osprey
