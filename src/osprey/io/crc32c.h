// CRC32C (Castagnoli, the iSCSI/ext4/LevelDB checksum): checksums checkpoint payloads so that a
// torn or bit-rotted file is detected on load instead of silently training on garbage.
// Written by hand on purpose: it is one instruction per 8 bytes on x86-64-v3 (SSE4.2 crc32, the
// baseline osprey builds for) plus a 30-line table fallback, while zlib's crc32 is the other
// polynomial and no chosen dependency ships CRC32C.
//   uint32_t c = crc32c(header.data(), header.size());
//   c = crc32c(payload.data(), payload.size(), c);  // extends: same as one call over both
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace osprey::io {

// CRC32C of n bytes, continuing from the CRC of the bytes before them (0 for a fresh start).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0) noexcept;
inline uint32_t crc32c(std::string_view s, uint32_t crc = 0) noexcept {
  return crc32c(s.data(), s.size(), crc);
}

namespace detail {
// The two implementations crc32c() picks between; tests hold one against the other.
uint32_t crc32c_software(const void* data, size_t n, uint32_t crc) noexcept;
bool crc32c_hardware_available() noexcept;
uint32_t crc32c_hardware(const void* data, size_t n, uint32_t crc) noexcept;  // needs SSE4.2
}  // namespace detail

}  // namespace osprey::io
