// For tests: the message of the exception a call throws, so a test of bad input compares the exact
// text a user would read. Test-only: not installed (install skips *_test* headers).
//   EXPECT_EQ(testing::error_of<IoError>([&] { read_npy(path); }), "npy file 'x.npy': ...");
#pragma once

#include <exception>
#include <string>

namespace osprey::testing {

// Another exception type, or none, gives a text no expected message equals.
template <class E, class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "no exception";
}

}  // namespace osprey::testing
