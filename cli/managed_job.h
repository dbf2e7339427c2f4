// Managed-job conventions (Vertex AI custom jobs, seed 002): the platform names the folders for
// the model, the checkpoints and the TensorBoard logs in AIP_* variables, so a job written for
// it runs unchanged. A flag the user gave wins over the variable.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli/usage_error.h"
#include "osprey/core/error.h"

namespace osprey::cli {

// field = $var when it is set and not empty and `flag` was not given on the command line.
inline void default_from_managed_job(const CLI::App& cmd, const char* flag, const char* var,
                                     std::string& field) {
  const char* value = std::getenv(var);
  if (value != nullptr && *value != '\0' && cmd.get_option(flag)->count() == 0) field = value;
}

// A folder the command will write into (a log folder): a file of that name in the way is bad usage,
// found before any work is done rather than when the first log is written.
inline void check_folder_option(const char* command, const char* flag, const std::string& path) {
  OSPREY_CHECK_T(
      cli::UsageError,
      path.empty() || !std::filesystem::exists(path) || std::filesystem::is_directory(path),
      "osprey {}: {} {}: a file of that name exists; expected a folder", command, flag, path);
}

}  // namespace osprey::cli
