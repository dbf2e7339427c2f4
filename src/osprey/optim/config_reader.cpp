#include "osprey/optim/config_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "osprey/core/error.h"

namespace osprey::optim::detail {

ConfigReader::ConfigReader(const nlohmann::json& config, std::string owner)
    : config_(config), owner_(std::move(owner)) {
  OSPREY_CHECK(config.is_object(), "{}: a config must be a JSON object. Received: {}", owner_,
               config.dump());
}

bool ConfigReader::has(std::string_view key) const {
  return config_.find(std::string(key)) != config_.end();
}

const nlohmann::json* ConfigReader::raw(std::string_view key) {
  const auto it = config_.find(std::string(key));
  if (it == config_.end()) return nullptr;
  read_.emplace(key);
  return &*it;
}

void ConfigReader::type_error(std::string_view key, std::string_view expected,
                              const nlohmann::json& got) const {
  OSPREY_THROW(ValueError, "{}: config field \"{}\" must be {}. Received: {}", owner_, key,
               expected, got.dump());
}

double ConfigReader::number(std::string_view key, double fallback) {
  const nlohmann::json* j = raw(key);
  if (j == nullptr) return fallback;
  if (!j->is_number()) type_error(key, "a number", *j);
  return j->get<double>();
}

std::optional<double> ConfigReader::optional_number(std::string_view key) {
  const nlohmann::json* j = raw(key);
  if (j == nullptr || j->is_null()) return std::nullopt;
  if (!j->is_number()) type_error(key, "a number or null", *j);
  return j->get<double>();
}

int64_t ConfigReader::integer(std::string_view key, int64_t fallback) {
  const nlohmann::json* j = raw(key);
  if (j == nullptr) return fallback;
  // Keras configs written by Python may spell integers as 1000.0.
  // A float is cast only once it is known to be a whole number inside int64's range (a cast of
  // 1e300 or NaN is undefined behaviour); an unsigned above int64's range is refused too.
  if (j->is_number_float()) {
    const double d = j->get<double>();
    if (!(d >= -9.2e18 && d <= 9.2e18) || d != std::floor(d)) type_error(key, "an integer", *j);
    return static_cast<int64_t>(d);
  }
  if (!j->is_number_integer() ||
      (j->is_number_unsigned() &&
       j->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    type_error(key, "an integer", *j);
  }
  return j->get<int64_t>();
}

bool ConfigReader::boolean(std::string_view key, bool fallback) {
  const nlohmann::json* j = raw(key);
  if (j == nullptr) return fallback;
  if (!j->is_boolean()) type_error(key, "a boolean", *j);
  return j->get<bool>();
}

std::string ConfigReader::string(std::string_view key, std::string fallback) {
  const nlohmann::json* j = raw(key);
  if (j == nullptr) return fallback;
  if (!j->is_string()) type_error(key, "a string", *j);
  return j->get<std::string>();
}

std::vector<double> ConfigReader::numbers(std::string_view key) {
  const nlohmann::json* j = raw(key);
  OSPREY_CHECK(j != nullptr, "{}: config field \"{}\" is missing", owner_, key);
  if (!j->is_array()) type_error(key, "an array of numbers", *j);
  std::vector<double> out;
  for (const auto& e : *j) {
    if (!e.is_number()) type_error(key, "an array of numbers", *j);
    out.push_back(e.get<double>());
  }
  return out;
}

void ConfigReader::unsupported(std::string_view key, const nlohmann::json& inert) {
  const nlohmann::json* j = raw(key);
  if (j == nullptr || j->is_null() || *j == inert) return;
  OSPREY_THROW(NotImplementedError, "{}: config field \"{}\" is not supported yet. Received: {}",
               owner_, key, j->dump());
}

void ConfigReader::finish() const {
  std::vector<std::string> unknown;
  for (const auto& [key, value] : config_.items()) {
    if (read_.find(key) == read_.end()) unknown.push_back(key);
  }
  OSPREY_CHECK(unknown.empty(), "{}: argument(s) not recognized: {}", owner_,
               fmt::join(unknown, ", "));
}

}  // namespace osprey::optim::detail
