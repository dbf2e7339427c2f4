#include "osprey/nn/name_scope.h"

#include <mutex>

namespace osprey::nn {

namespace {
std::mutex g_names_mutex;
std::map<std::string, int>& process_counters() {
  static std::map<std::string, int> counters;
  return counters;
}
thread_local NameScope* t_innermost = nullptr;

std::string numbered(const std::string& base, int n) {
  return n == 0 ? base : base + "_" + std::to_string(n);
}
}  // namespace

NameScope::NameScope() : outer_(t_innermost) { t_innermost = this; }

NameScope::~NameScope() { t_innermost = outer_; }

std::string unique_name(const std::string& base) {
  if (t_innermost != nullptr) return numbered(base, t_innermost->counters_[base]++);
  std::lock_guard<std::mutex> lock(g_names_mutex);
  return numbered(base, process_counters()[base]++);
}

void clear_session() {
  if (t_innermost != nullptr) {
    t_innermost->counters_.clear();
    return;
  }
  std::lock_guard<std::mutex> lock(g_names_mutex);
  process_counters().clear();
}

}  // namespace osprey::nn
