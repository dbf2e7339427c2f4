// Shared gRPC plumbing (rpc.h): addresses, servers with bounded messages, the token check, the
// exception <-> status mapping on both sides.
#include "osprey/comm/rpc/rpc.h"

#include <grpc/grpc.h>
#include <malloc.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>

namespace osprey::comm::rpc {

namespace {

// glibc hands blocks above 128 KiB back to the kernel when they are freed (mmap, munmap), and on
// these machines the first touch of a fresh page costs ~11 us: every multi-megabyte message then
// page-faults its way through each of its copies. Measured with bench_ps (one ps, the 2 MB
// Fashion-MNIST MLP): 25 updates/s so, 162 with freed memory kept for reuse. So a process that
// serves or calls osprey's RPCs keeps it: blocks up to 32 MiB (glibc's largest mmap threshold)
// come from the heap, and the heap is not trimmed below 1 GiB of free memory. A user who tuned
// malloc (GLIBC_TUNABLES) keeps their setting.
void keep_freed_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables != nullptr && std::strstr(tunables, "malloc") != nullptr) return;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
}

// gRPC takes message limits as int.
int clamp_message_bytes(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>(bytes, 0, INT_MAX));
}

}  // namespace

std::string_view code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "UNKNOWN";
  }
}

namespace {

// Equal contents, in time that depends only on the lengths (never on where they differ).
bool constant_time_equal(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

}  // namespace

void check_address(std::string_view address, std::string_view what) {
  const auto bad = [&](std::string_view why) {
    OSPREY_THROW(ValueError,
                 "{}: invalid address '{}': {}. Expected HOST:PORT with a port in 0-65535, e.g. "
                 "127.0.0.1:5001, localhost:0 or [::1]:5001",
                 what, address, why);
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) bad("no port");
  const std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  if (host.empty()) bad("empty host");
  if (host.front() == '[' || host.back() == ']') {
    if (host.size() < 3 || host.front() != '[' || host.back() != ']') bad("unbalanced brackets");
  } else if (host.find(':') != std::string_view::npos) {
    bad("an IPv6 host must be in brackets");
  }
  for (const char c : host) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '/') bad("the host has a space or '/'");
  }
  if (port.empty() || port.size() > 5) bad("the port must be a number in 0-65535");
  int value = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535) {
    bad("the port must be a number in 0-65535");
  }
}

std::unique_ptr<grpc::Server> start_server(const std::string& listen,
                                           const std::vector<grpc::Service*>& services,
                                           int64_t max_message_bytes, int* bound_port,
                                           std::string_view what) {
  keep_freed_memory();
  check_address(listen, what);
  OSPREY_CHECK(max_message_bytes > 0,
               "{}: the message size bound must be positive. Received: max_message_bytes={}", what,
               max_message_bytes);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(clamp_message_bytes(max_message_bytes));
  builder.SetMaxSendMessageSize(clamp_message_bytes(max_message_bytes));
  // No SO_REUSEPORT: a second server on a port in use must fail, not share the port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* s : services) builder.RegisterService(s);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    if (server) server->Shutdown();
    OSPREY_THROW(DistributedError,
                 "{}: cannot listen on {}: the address is in use, not local to this host, or "
                 "not permitted",
                 what, listen);
  }
  if (bound_port != nullptr) *bound_port = port;
  return server;
}

grpc::Status check_token(const grpc::ServerContext& context, const std::string& token,
                         std::string_view token_variable) {
  if (token.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(kTokenKey);
  if (it == metadata.end()) {
    return {grpc::StatusCode::UNAUTHENTICATED,
            fmt::format("missing token: this server requires {}", token_variable)};
  }
  const std::string_view sent(it->second.data(), it->second.size());
  if (!constant_time_equal(sent, token)) {
    return {grpc::StatusCode::UNAUTHENTICATED, "wrong token"};
  }
  return grpc::Status::OK;
}

grpc::Status serve(const grpc::ServerContext& context, const std::string& token,
                   const std::function<void()>& fn, std::string_view token_variable) {
  grpc::Status auth = check_token(context, token, token_variable);
  if (!auth.ok()) return auth;
  try {
    fn();
    return grpc::Status::OK;
  } catch (const NotFoundError& e) {
    return {grpc::StatusCode::NOT_FOUND, e.what()};
  } catch (const ValueError& e) {
    return {grpc::StatusCode::INVALID_ARGUMENT, e.what()};
  } catch (const DistributedError& e) {
    return {grpc::StatusCode::UNAVAILABLE, e.what()};
  } catch (const std::exception& e) {
    return {grpc::StatusCode::INTERNAL, e.what()};
  } catch (...) {
    return {grpc::StatusCode::INTERNAL, "unknown exception"};
  }
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& address, int64_t max_message_bytes) {
  keep_freed_memory();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(clamp_message_bytes(max_message_bytes));
  args.SetMaxSendMessageSize(clamp_message_bytes(max_message_bytes));
  // A peer that restarts (a worker rejoining, a ps restoring its shard) is back within seconds:
  // reconnect every 0.1-1 s, not gRPC's default backoff of up to 120 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

void prepare(grpc::ClientContext& context, const std::string& token,
             std::chrono::milliseconds timeout) {
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  if (!token.empty()) context.AddMetadata(kTokenKey, token);
}

bool is_transient(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

void throw_status(const grpc::Status& status, std::string_view what) {
  const std::string message =
      fmt::format("{}: {}: {}", what, code_name(status.error_code()), status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
      throw ValueError(message);
    default:
      throw DistributedError(message);
  }
}

}  // namespace osprey::comm::rpc
