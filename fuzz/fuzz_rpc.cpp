#include "fuzz_rpc.h"

#include <google/protobuf/stubs/logging.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "fuzz_target.h"
#include "osprey/comm/rpc/rpc.h"

namespace osprey::fuzz {

std::vector<RawCall> split_calls(const uint8_t* data, size_t size, size_t methods_count,
                                 size_t max_calls) {
  std::vector<RawCall> calls;
  size_t at = 0;
  while (calls.size() < max_calls && at + 3 <= size) {
    const size_t method = data[at] % methods_count;
    const size_t length = data[at + 1] | (size_t{data[at + 2]} << 8);
    at += 3;
    const size_t take = std::min(length, size - at);
    calls.push_back({method, {reinterpret_cast<const char*>(data + at), take}});
    at += take;
  }
  return calls;
}

void call_and_check(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                    std::string_view payload, bool parses, bool unavailable_ok) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice slice(payload.data(), payload.size());
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, method, request, &cq);
  call->StartCall();
  grpc::Status status;
  call->Finish(&reply, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  if (!cq.Next(&tag, &ok) || !ok) {
    std::fprintf(stderr, "fuzz: %s: the completion queue failed\n", method.c_str());
    std::abort();
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  if (verbose() && !status.ok())
    std::fprintf(stderr, "refused: %s: %d %s\n", method.c_str(),
                 static_cast<int>(status.error_code()), status.error_message().c_str());
  if (!parses && status.error_code() == grpc::StatusCode::INTERNAL) return;
  if (unavailable_ok && status.error_code() == grpc::StatusCode::UNAVAILABLE) return;
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return;
    default:
      std::fprintf(stderr, "fuzz: %s answered %d: %s\n", method.c_str(),
                   static_cast<int>(status.error_code()), status.error_message().c_str());
      std::abort();
  }
}

void LiveService::run(const uint8_t* data, size_t size, std::span<const Method> methods) {
  if (channel_ == nullptr || inputs_ >= 2000) {
    // protobuf logs every string field with invalid UTF-8 it parses; most inputs have one.
    google::protobuf::SetLogHandler(nullptr);
    channel_.reset();
    const std::string address = start_();
    channel_ = comm::rpc::make_channel(address, kFuzzMaxMessageBytes);
    inputs_ = 0;
  }
  ++inputs_;
  for (const RawCall& c : split_calls(data, size, methods.size(), 8)) {
    const Method& m = methods[c.method];
    call_and_check(channel_, m.name, c.payload, m.parses(c.payload));
  }
}

}  // namespace osprey::fuzz
