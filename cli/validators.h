// Checks of option values whose refusals read like osprey's other errors: what was expected and
// what was received ("--epochs: must be positive. Received: 0"). CLI11's own PositiveNumber prints
// its range up to DBL_MAX (a 309-digit number), and an unsigned option silently takes "-1" as
// 2^64 - 1; these refuse before the value is converted.
//   cmd->add_option("--epochs", epochs, "Epochs")->check(cli::kPositive);
#pragma once

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace osprey::cli {

namespace detail {
// "" when `text` is a number that `ok` accepts, else what was wrong.
template <class Ok>
std::string check_number(const std::string& text, const char* expected, Ok ok) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
    return "must be a number. Received: '" + text + "'";
  return ok(value) ? std::string() : std::string("must be ") + expected + ". Received: " + text;
}
}  // namespace detail

inline const CLI::Validator kPositive(
    [](const std::string& text) {
      return detail::check_number(text, "positive", [](double v) { return v > 0; });
    },
    "POSITIVE");
inline const CLI::Validator kNonNegative(
    [](const std::string& text) {
      return detail::check_number(text, "zero or more", [](double v) { return v >= 0; });
    },
    "NON-NEGATIVE");

}  // namespace osprey::cli
