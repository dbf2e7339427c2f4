// UsageError: what a subcommand throws when its own checks refuse what the user gave the command
// (an option value, a combination of options, a cluster spec in the environment). main() exits 2
// for it, as for CLI11's parse errors; every other error, a ValueError deep inside fit included,
// is a failure and exits 1.
//   OSPREY_CHECK_T(cli::UsageError, devices == 1, "osprey train: --devices {} needs ...", devices);
//   auto strategy = as_usage_error([&] { return make_strategy(args); });  // its ValueErrors: usage
#pragma once

#include <utility>

#include "osprey/core/error.h"

namespace osprey::cli {

class UsageError : public ValueError {
 public:
  using ValueError::ValueError;
};

// Thrown by a subcommand to end osprey with `code` once the stack has unwound (its objects
// destroyed, their threads joined), not as a failure: main returns it. A tuner worker whose share
// of trials is done ends this way (tune::kExitNextTrial).
struct ExitCode {
  int code = 0;
};

// Runs f; a ValueError it throws becomes a UsageError with the same message. For library calls
// that check the command's input for it (a strategy built from the options and OSPREY_CONFIG).
template <class F>
decltype(auto) as_usage_error(F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const UsageError&) {
    throw;
  } catch (const ValueError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace osprey::cli
