#include "osprey/comm/clock_sync.h"

#include <algorithm>
#include <limits>

#include "osprey/core/error.h"
#include "osprey/core/trace.h"

namespace osprey::comm {

namespace {

constexpr int kPingTag = 7301;  // not a tag pipelines use (they count from 0 per micro-batch)
constexpr int kWords = 4;       // an int64 as four 16-bit halves, each exact in a float

void encode(int64_t v, float* out) {
  auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < kWords; ++i) {
    out[i] = static_cast<float>(u & 0xffffU);
    u >>= 16;
  }
}

int64_t decode(const float* in) {
  uint64_t u = 0;
  for (int i = kWords - 1; i >= 0; --i) u = (u << 16) | static_cast<uint64_t>(in[i]);
  return static_cast<int64_t>(u);
}

}  // namespace

ClockOffset estimate_clock_offset(Communicator& c, int rounds) {
  OSPREY_CHECK(rounds >= 1, "estimate_clock_offset: rounds must be at least 1. Received: {}",
               rounds);
  if (c.size() == 1) return {};
  float msg[kWords];
  if (c.rank() == 0) {
    for (int r = 1; r < c.size(); ++r) {
      for (int i = 0; i < rounds; ++i) {
        c.recv(msg, kWords, r, kPingTag);
        encode(trace::now_us(), msg);
        c.send(msg, kWords, r, kPingTag);
      }
    }
    return {};
  }
  ClockOffset best;
  int64_t best_rtt = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < rounds; ++i) {
    encode(0, msg);
    const int64_t t1 = trace::now_us();
    c.send(msg, kWords, 0, kPingTag);
    c.recv(msg, kWords, 0, kPingTag);
    const int64_t t2 = trace::now_us();
    const int64_t t0 = decode(msg);
    if (t2 - t1 < best_rtt) {
      best_rtt = t2 - t1;
      best.offset_us = t0 - (t1 + t2) / 2;
      best.uncertainty_us = static_cast<double>(t2 - t1) / 2.0;
    }
  }
  return best;
}

std::vector<std::string> gather_strings(Communicator& c, const std::string& text) {
  const int n = c.size();
  float len[kWords];
  encode(static_cast<int64_t>(text.size()), len);
  std::vector<float> lens(static_cast<size_t>(n) * kWords);
  c.all_gather(len, lens.data(), kWords);
  int64_t longest = 0;
  for (int r = 0; r < n; ++r)
    longest = std::max(longest, decode(&lens[static_cast<size_t>(r) * kWords]));
  std::vector<float> mine(static_cast<size_t>(longest), 0.0F);
  for (size_t i = 0; i < text.size(); ++i)
    mine[i] = static_cast<float>(static_cast<unsigned char>(text[i]));
  std::vector<float> all(static_cast<size_t>(longest) * static_cast<size_t>(n));
  c.all_gather(mine.data(), all.data(), longest);
  if (c.rank() != 0) return {};
  std::vector<std::string> out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const auto size = static_cast<size_t>(decode(&lens[static_cast<size_t>(r) * kWords]));
    std::string& s = out[static_cast<size_t>(r)];
    s.resize(size);
    const float* src = &all[static_cast<size_t>(r) * static_cast<size_t>(longest)];
    for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(static_cast<unsigned char>(src[i]));
  }
  return out;
}

}  // namespace osprey::comm
