#include "osprey/data/text/utf8.h"

#include "osprey/core/error.h"

namespace osprey::data::text::detail {

Decoded decode_one(std::string_view s, size_t at) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[at + i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return {c, 1};
  size_t n = 0;
  char32_t code = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2, code = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, code = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, code = c & 0x07;
  } else {
    return {0, 0};
  }
  if (at + n > s.size()) return {0, 0};
  for (size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xC0) != 0x80) return {0, 0};
    code = (code << 6) | (b(i) & 0x3F);
  }
  static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kMin[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {0, 0};
  return {code, n};
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::vector<char32_t> code_points(std::string_view s, const char* who) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t at = 0; at < s.size();) {
    const Decoded d = decode_one(s, at);
    OSPREY_CHECK(d.length > 0, "{}: the text is not valid UTF-8 at byte {}", who, at);
    out.push_back(d.code);
    at += d.length;
  }
  return out;
}

void check_utf8(std::string_view s, const char* who) {
  for (size_t at = 0; at < s.size();) {
    const Decoded d = decode_one(s, at);
    OSPREY_CHECK(d.length > 0, "{}: the text is not valid UTF-8 at byte {}", who, at);
    at += d.length;
  }
}

}  // namespace osprey::data::text::detail
