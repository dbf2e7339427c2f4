#include "osprey/train/logs.h"

#include <fmt/format.h>

#include "osprey/core/error.h"

namespace osprey::train {

void Logs::set(const std::string& key, double value) {
  for (auto& [k, v] : items_) {
    if (k == key) {
      v = value;
      return;
    }
  }
  items_.emplace_back(key, value);
}

std::optional<double> Logs::get(const std::string& key) const {
  for (const auto& [k, v] : items_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

double Logs::at(const std::string& key) const {
  if (auto v = get(key)) return *v;
  std::string known;
  for (const auto& [k, v] : items_) known += (known.empty() ? "" : ", ") + k;
  OSPREY_THROW(ValueError, "logs have no '{}'. Available: {}", key,
               known.empty() ? "(none)" : known);
}

std::string Logs::format() const {
  std::string out;
  for (const auto& [k, v] : items_) {
    const double a = std::abs(v);
    out += (a != 0 && (a < 1e-3 || a >= 1e5)) ? fmt::format(" - {}: {:.4e}", k, v)
                                              : fmt::format(" - {}: {:.4f}", k, v);
  }
  return out;
}

}  // namespace osprey::train
