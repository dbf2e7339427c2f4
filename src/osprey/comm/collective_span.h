// The profiler's span of one communicator call (core/trace.h): the collective's name, the
// bytes this rank sends, its rank in a group of what size, and the peer (the destination of a
// send, the source of a recv, the root of a broadcast). Every backend opens one per call, so
// traces of the in-process, MPI and Gloo groups read alike.
//   void all_reduce(float* data, int64_t count, ReduceOp op) override {
//     const trace::Span span = collective_span("all_reduce", count * 4, *this, kBackend);
#pragma once

#include <cstdint>
#include <string>

#include "osprey/comm/communicator.h"
#include "osprey/core/trace.h"

namespace osprey::comm {

inline trace::Span collective_span(const char* op, int64_t bytes, const Communicator& c,
                                   const char* backend, int peer = -1) {
  return trace::Span(trace::Category::collective, op, [&](trace::Args& a) {
    a.emplace_back("bytes", std::to_string(bytes));
    a.emplace_back("rank", std::to_string(c.rank()));
    a.emplace_back("group_size", std::to_string(c.size()));
    a.emplace_back("backend", backend);
    if (peer >= 0) a.emplace_back("peer", std::to_string(peer));
  });
}

}  // namespace osprey::comm
