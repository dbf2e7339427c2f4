#include "osprey/core/error.h"

namespace osprey::detail {

void throw_internal(const char* cond, const char* file, int line, const std::string& msg) {
  throw InternalError(fmt::format("internal error at {}:{}: {} ({}); please report this as a bug",
                                  file, line, msg, cond));
}

}  // namespace osprey::detail
