// Errors and check macros. Everything osprey throws derives from osprey::Error; the library never
// aborts. OSPREY_CHECK guards what a user can get wrong and formats its message (fmt syntax) only
// on failure, following Keras's recipe: what is wrong, what was expected, what was received.
//   OSPREY_CHECK(units > 0, "Dense: units must be positive. Received: units={}", units);
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace osprey {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A bad argument, shape or dtype.
class ValueError : public Error {
 public:
  using Error::Error;
};
// A file that cannot be read or written, or whose content is malformed.
class IoError : public Error {
 public:
  using Error::Error;
};
// A failure of a peer or of the collective layer.
class DistributedError : public Error {
 public:
  using Error::Error;
};
// A feature of an optional dependency osprey was built without, or not written yet.
class NotImplementedError : public Error {
 public:
  using Error::Error;
};
// A broken internal invariant: a bug in osprey.
class InternalError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <class E, class... Args>
[[noreturn]] void throw_formatted(fmt::format_string<Args...> f, Args&&... args) {
  throw E(fmt::format(f, std::forward<Args>(args)...));
}
[[noreturn]] void throw_internal(const char* cond, const char* file, int line,
                                 const std::string& msg);
}  // namespace detail

}  // namespace osprey

#define OSPREY_THROW(Type, ...) ::osprey::detail::throw_formatted<::osprey::Type>(__VA_ARGS__)

#define OSPREY_CHECK(cond, ...)                                             \
  do {                                                                      \
    if (!(cond)) [[unlikely]] {                                             \
      ::osprey::detail::throw_formatted<::osprey::ValueError>(__VA_ARGS__); \
    }                                                                       \
  } while (0)

#define OSPREY_CHECK_T(Type, cond, ...)                               \
  do {                                                                \
    if (!(cond)) [[unlikely]] {                                       \
      ::osprey::detail::throw_formatted<::osprey::Type>(__VA_ARGS__); \
    }                                                                 \
  } while (0)

// Internal invariant; a failure is a bug in osprey and throws InternalError with file and line.
#define OSPREY_ASSERT(cond, ...)                                                             \
  do {                                                                                       \
    if (!(cond)) [[unlikely]] {                                                              \
      ::osprey::detail::throw_internal(#cond, __FILE__, __LINE__, fmt::format(__VA_ARGS__)); \
    }                                                                                        \
  } while (0)
