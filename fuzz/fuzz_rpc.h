// Raw gRPC calls for the service fuzz targets (fuzz_ps_service, fuzz_oracle_service,
// fuzz_worker_service): an input's
// bytes become requests sent through gRPC's generic stub to a server in this process on loopback,
// so they are parsed by gRPC and protobuf exactly as a hostile client's would be, then handled.
// An input is a sequence of calls, each [method byte][length, 2 bytes little-endian][payload].
// A reply must be OK or a refusal the services document; INTERNAL or UNKNOWN (an exception the
// handler did not expect), DEADLINE_EXCEEDED (a hang) or a lost server is a finding.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace osprey::fuzz {

// The message bound the fuzzed servers are started with, and their clients use.
inline constexpr int64_t kFuzzMaxMessageBytes = int64_t{1} << 20;

struct RawCall {
  size_t method;             // an index into the service's method names
  std::string_view payload;  // the serialized request (or anything else)
};

// Splits an input into at most max_calls calls of methods_count methods; a short tail is dropped.
std::vector<RawCall> split_calls(const uint8_t* data, size_t size, size_t methods_count,
                                 size_t max_calls);

// One unary call of `method` ("/osprey.ps.ParameterServer/Push") carrying `payload`, through a
// generic stub on `channel`; aborts the process (a finding) unless the status is OK or one of
// the refusals a server gives bad input. `parses`: whether the payload parses as the method's
// request message; when it does not, gRPC itself refuses the call with INTERNAL before any
// handler runs, so only then is INTERNAL expected. unavailable_ok: UNAVAILABLE is an answer the
// service gives in its current state (a worker whose fit ended), not a lost server.
void call_and_check(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                    std::string_view payload, bool parses, bool unavailable_ok = false);

// Whether `payload` parses as a Message.
template <class Message>
bool parses_as(std::string_view payload) {
  Message m;
  return m.ParseFromArray(payload.data(), static_cast<int>(payload.size()));
}

// One method of a service: its full name and whether a payload parses as its request message.
struct Method {
  const char* name;
  bool (*parses)(std::string_view payload);
};

// A live server of the fuzzed service and a channel to it. `start` (re)starts the server, keeping
// whatever it needs in its own state, and returns its address; it runs on first use and again
// every 2,000 inputs, so later inputs reach what earlier ones left (variables, trials) while
// nothing grows without bound over a long run.
class LiveService {
 public:
  explicit LiveService(std::function<std::string()> start) : start_(std::move(start)) {}
  // Sends an input's calls (at most 8, split_calls) and checks each reply (call_and_check).
  void run(const uint8_t* data, size_t size, std::span<const Method> methods);

 private:
  std::function<std::string()> start_;
  std::shared_ptr<grpc::Channel> channel_;
  int inputs_ = 0;
};

}  // namespace osprey::fuzz
