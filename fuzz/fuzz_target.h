// What osprey's fuzz targets share. Each target is one LLVMFuzzerTestOneInput: built with clang's
// libFuzzer (scripts/fuzz.sh, OSPREY_FUZZ=ON) it explores inputs under ASan and UBSan; built with
// replay_main.cpp (every build) it runs its corpus and every past finding as a ctest test, so a
// finding stays fixed in the ordinary g++ build too.
//
// The property under test: a parser of bytes osprey did not write either returns or throws an
// osprey::Error naming what is wrong. Anything else escaping (a library's own exception, an
// std::bad_alloc), a crash, a sanitizer report, a hang or an allocation past libFuzzer's
// -malloc_limit_mb is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "osprey/core/error.h"

namespace osprey::fuzz {

// Whether OSPREY_FUZZ_VERBOSE is set: then each refusal is printed, to check that a corpus's
// seeds get past the first checks (`OSPREY_FUZZ_VERBOSE=1 fuzz_csv_replay fuzz/corpus/csv`).
bool verbose();

// Runs fn, swallowing the refusal a bad input must get (osprey::Error); anything else escapes.
template <class F>
void expect_refusal_or_success(F&& fn) {
  try {
    fn();
  } catch (const osprey::Error& e) {
    if (verbose()) std::fprintf(stderr, "refused: %s\n", e.what());
  }
}

// A file holding `bytes`, for the readers that take paths: one per process and extension,
// rewritten for every input and removed at exit.
std::filesystem::path scratch_file(std::string_view bytes, std::string_view extension);

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace osprey::fuzz
