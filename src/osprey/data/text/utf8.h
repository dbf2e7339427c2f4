// UTF-8 by hand, for the tokenizers: the standard library has no decoder (codecvt is deprecated)
// and ICU would be a large dependency for two small loops. Strict: overlong forms, surrogates and
// code points past U+10FFFF are invalid, as Python's decoder says.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace osprey::data::text::detail {

struct Decoded {
  char32_t code;
  size_t length;  // 0: invalid
};

// The code point that starts at byte `at` of `s` (at < s.size()).
Decoded decode_one(std::string_view s, size_t at);

void append_utf8(std::string& out, char32_t c);

// Every code point of `s`; ValueError naming `who` and the byte offset of the first invalid one.
std::vector<char32_t> code_points(std::string_view s, const char* who);

// ValueError as code_points', without collecting the code points.
void check_utf8(std::string_view s, const char* who);

}  // namespace osprey::data::text::detail
