#include "osprey/io/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace osprey::io {

namespace detail {

namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // Castagnoli polynomial, bit-reflected

// Slice-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
    t[0][b] = c;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  }
  return t;
}
constexpr auto kTables = make_tables();

}  // namespace

uint32_t crc32c_software(const void* data, size_t n, uint32_t crc) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // little-endian load
    w ^= c;
    c = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
        kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^ kTables[2][(w >> 40) & 0xff] ^
        kTables[1][(w >> 48) & 0xff] ^ kTables[0][w >> 56];
  }
  for (; n > 0; --n, ++p) c = (c >> 8) ^ kTables[0][(c ^ *p) & 0xffu];
  return ~c;
}

bool crc32c_hardware_available() noexcept {
#if defined(__SSE4_2__)
  return true;
#else
  return false;
#endif
}

uint32_t crc32c_hardware(const void* data, size_t n, uint32_t crc) noexcept {
#if defined(__SSE4_2__)
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
#else
  return crc32c_software(data, n, crc);
#endif
}

}  // namespace detail

uint32_t crc32c(const void* data, size_t n, uint32_t crc) noexcept {
  if (n == 0) return crc;
  return detail::crc32c_hardware_available() ? detail::crc32c_hardware(data, n, crc)
                                             : detail::crc32c_software(data, n, crc);
}

}  // namespace osprey::io
