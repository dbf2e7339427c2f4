// Written out here rather than linked: Debian has no farmhash package, the two functions are
// short and frozen by their authors, and the tests pin them to TensorFlow's values.
#include "osprey/data/text/string_hash.h"

#include <cstring>
#include <utility>

namespace osprey::data::text {
namespace {

constexpr uint64_t kK0 = 0xc3a5c85c97cb3127ULL;
constexpr uint64_t kK1 = 0xb492b66fbe98f273ULL;
constexpr uint64_t kK2 = 0x9ae16a3b2f90404fULL;

uint64_t fetch64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian hosts only (x86-64, the targets osprey builds for)
  return v;
}

uint32_t fetch32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t rotr(uint64_t v, int s) { return s == 0 ? v : (v >> s) | (v << (64 - s)); }
uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }

uint64_t hash_len16(uint64_t u, uint64_t v, uint64_t mul) {
  uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

uint64_t hash_len0to16(const char* s, size_t len) {
  if (len >= 8) {
    const uint64_t mul = kK2 + len * 2;
    const uint64_t a = fetch64(s) + kK2;
    const uint64_t b = fetch64(s + len - 8);
    const uint64_t c = rotr(b, 37) * mul + a;
    const uint64_t d = (rotr(a, 25) + b) * mul;
    return hash_len16(c, d, mul);
  }
  if (len >= 4) {
    const uint64_t mul = kK2 + len * 2;
    const uint64_t a = fetch32(s);
    return hash_len16(len + (a << 3), fetch32(s + len - 4), mul);
  }
  if (len > 0) {
    const auto a = static_cast<uint8_t>(s[0]);
    const auto b = static_cast<uint8_t>(s[len >> 1]);
    const auto c = static_cast<uint8_t>(s[len - 1]);
    const uint32_t y = static_cast<uint32_t>(a) + (static_cast<uint32_t>(b) << 8);
    const uint32_t z = static_cast<uint32_t>(len) + (static_cast<uint32_t>(c) << 2);
    return shift_mix(y * kK2 ^ z * kK0) * kK2;
  }
  return kK2;
}

uint64_t hash_len17to32(const char* s, size_t len) {
  const uint64_t mul = kK2 + len * 2;
  const uint64_t a = fetch64(s) * kK1;
  const uint64_t b = fetch64(s + 8);
  const uint64_t c = fetch64(s + len - 8) * mul;
  const uint64_t d = fetch64(s + len - 16) * kK2;
  return hash_len16(rotr(a + b, 43) + rotr(c, 30) + d, a + rotr(b + kK2, 18) + c, mul);
}

uint64_t hash_len33to64(const char* s, size_t len) {
  const uint64_t mul = kK2 + len * 2;
  const uint64_t a = fetch64(s) * kK2;
  const uint64_t b = fetch64(s + 8);
  const uint64_t c = fetch64(s + len - 8) * mul;
  const uint64_t d = fetch64(s + len - 16) * kK2;
  const uint64_t y = rotr(a + b, 43) + rotr(c, 30) + d;
  const uint64_t z = hash_len16(y, a + rotr(b + kK2, 18) + c, mul);
  const uint64_t e = fetch64(s + 16) * mul;
  const uint64_t f = fetch64(s + 24);
  const uint64_t g = (y + fetch64(s + len - 32)) * mul;
  const uint64_t h = (z + fetch64(s + len - 24)) * mul;
  return hash_len16(rotr(e + f, 43) + rotr(g, 30) + h, e + rotr(f + a, 18) + g, mul);
}

std::pair<uint64_t, uint64_t> weak_hash_len32(const char* s, uint64_t a, uint64_t b) {
  const uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16), z = fetch64(s + 24);
  a += w;
  b = rotr(b + a + z, 21);
  const uint64_t c = a;
  a += x;
  a += y;
  b += rotr(a, 44);
  return {a + z, b + c};
}

}  // namespace

uint64_t fingerprint64(std::string_view bytes) noexcept {
  const char* s = bytes.data();
  const size_t len = bytes.size();
  if (len <= 16) return hash_len0to16(s, len);
  if (len <= 32) return hash_len17to32(s, len);
  if (len <= 64) return hash_len33to64(s, len);

  constexpr uint64_t kSeed = 81;
  uint64_t x = kSeed;
  uint64_t y = kSeed * kK1 + 113;
  uint64_t z = shift_mix(y * kK2 + 113) * kK2;
  std::pair<uint64_t, uint64_t> v{0, 0}, w{0, 0};
  x = x * kK2 + fetch64(s);
  const char* end = s + ((len - 1) / 64) * 64;
  const char* last64 = end + ((len - 1) & 63) - 63;
  do {
    x = rotr(x + y + v.first + fetch64(s + 8), 37) * kK1;
    y = rotr(y + v.second + fetch64(s + 48), 42) * kK1;
    x ^= w.second;
    y += v.first + fetch64(s + 40);
    z = rotr(z + w.first, 33) * kK1;
    v = weak_hash_len32(s, v.second * kK1, x + w.first);
    w = weak_hash_len32(s + 32, z + w.second, y + fetch64(s + 16));
    std::swap(z, x);
    s += 64;
  } while (s != end);
  const uint64_t mul = kK1 + ((z & 0xff) << 1);
  s = last64;
  w.first += (len - 1) & 63;
  v.first += w.first;
  w.first += v.first;
  x = rotr(x + y + v.first + fetch64(s + 8), 37) * mul;
  y = rotr(y + v.second + fetch64(s + 48), 42) * mul;
  x ^= w.second * 9;
  y += v.first * 9 + fetch64(s + 40);
  z = rotr(z + w.first, 33) * mul;
  v = weak_hash_len32(s, v.second * mul, x + w.first);
  w = weak_hash_len32(s + 32, z + w.second, y + fetch64(s + 16));
  std::swap(z, x);
  return hash_len16(hash_len16(v.first, w.first, mul) + shift_mix(y) * kK0 + z,
                    hash_len16(v.second, w.second, mul) + x, mul);
}

uint64_t siphash64(std::string_view bytes, const std::array<uint64_t, 2>& key) noexcept {
  uint64_t v0 = key[0] ^ 0x736f6d6570736575ULL;
  uint64_t v1 = key[1] ^ 0x646f72616e646f6dULL;
  uint64_t v2 = key[0] ^ 0x6c7967656e657261ULL;
  uint64_t v3 = key[1] ^ 0x7465646279746573ULL;
  const auto rotl = [](uint64_t x, int b) { return (x << b) | (x >> (64 - b)); };
  const auto round = [&] {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  };
  const size_t len = bytes.size();
  const size_t whole = len / 8 * 8;
  for (size_t i = 0; i < whole; i += 8) {
    const uint64_t m = fetch64(bytes.data() + i);
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(len & 0xff) << 56;
  for (size_t i = whole; i < len; ++i)
    last |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * (i - whole));
  v3 ^= last;
  round();
  round();
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

}  // namespace osprey::data::text
