// ConfigReader: typed, checked reads of a Keras-style config object for from_config(). Every
// error is a ValueError naming the owner and the field ("Adam: config field "beta_1" must be a
// number. Received: "x""); finish() rejects fields nobody read, as Keras rejects unknown kwargs.
// Internal to optim (schedules and optimizers share it); io/json.h is the general-purpose one.
//   detail::ConfigReader r(config, "Adam");
//   double beta_1 = r.number("beta_1", 0.9);
//   r.finish();
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace osprey::optim::detail {

class ConfigReader {
 public:
  // Throws unless config is a JSON object.
  ConfigReader(const nlohmann::json& config, std::string owner);

  bool has(std::string_view key) const;
  // The field, or nullptr when absent; marks it read.
  const nlohmann::json* raw(std::string_view key);
  double number(std::string_view key, double fallback);
  // Absent or null -> nullopt.
  std::optional<double> optional_number(std::string_view key);
  int64_t integer(std::string_view key, int64_t fallback);
  bool boolean(std::string_view key, bool fallback);
  std::string string(std::string_view key, std::string fallback);
  std::vector<double> numbers(std::string_view key);  // required array of numbers
  // Accepts a field only when it is absent, null or equals `inert` (Keras options osprey does
  // not implement yet, such as use_ema); anything else is a NotImplementedError.
  void unsupported(std::string_view key, const nlohmann::json& inert);
  // Throws ValueError listing the fields never read.
  void finish() const;

  const std::string& owner() const noexcept { return owner_; }

 private:
  [[noreturn]] void type_error(std::string_view key, std::string_view expected,
                               const nlohmann::json& got) const;
  const nlohmann::json& config_;
  std::string owner_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace osprey::optim::detail
