// What every osprey gRPC service and client shares (the parameter servers, the workers' step
// service, the tuner's oracle service in tune/oracle_service.cpp): secure defaults and errors that
// name the peer.
//  - Servers bind only the address they are given (loopback unless told otherwise), cap the size
//    of the messages they accept, and check a shared token on every call when one is set.
//  - Clients send the token, put a deadline on every call and turn a failed status into the
//    matching osprey error with the peer's name and address.
// It exposes gRPC types, so it is not installed: the services built on it (distribute/ps/, the
// oracle service in tune/) keep gRPC out of their public headers.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "osprey/comm/rpc/not_found_error.h"
#include "osprey/core/error.h"

namespace osprey::comm::rpc {

// The metadata key that carries the shared token (OSPREY_PS_TOKEN).
inline constexpr char kTokenKey[] = "x-osprey-token";
// The default bound on one message, either direction.
inline constexpr int64_t kDefaultMaxMessageBytes = int64_t{256} << 20;

// Throws ValueError naming `what` unless address is HOST:PORT with a port in 0-65535 (0: any
// free port) and a non-empty host ("127.0.0.1", "localhost", "[::1]", a host name).
void check_address(std::string_view address, std::string_view what);

// Starts a server for `services` on `listen` (HOST:PORT, insecure credentials: tokens, not TLS,
// guard it; see docs) that accepts messages up to max_message_bytes. Returns it and sets
// *bound_port to the port it listens on (the chosen one for port 0). Throws DistributedError
// naming `what` and the address when it cannot bind.
std::unique_ptr<grpc::Server> start_server(const std::string& listen,
                                           const std::vector<grpc::Service*>& services,
                                           int64_t max_message_bytes, int* bound_port,
                                           std::string_view what);

// OK when `token` is empty or the call carries it (compared in constant time); otherwise
// UNAUTHENTICATED saying whether the token was missing or wrong (never echoing either).
// token_variable names the setting the message tells the caller to set.
grpc::Status check_token(const grpc::ServerContext& context, const std::string& token,
                         std::string_view token_variable = "OSPREY_PS_TOKEN");

// Runs fn and maps what it throws to a status: NotFoundError -> NOT_FOUND, ValueError ->
// INVALID_ARGUMENT, DistributedError -> UNAVAILABLE, anything else -> INTERNAL, each with the
// exception's message. Checks the token first.
grpc::Status serve(const grpc::ServerContext& context, const std::string& token,
                   const std::function<void()>& fn,
                   std::string_view token_variable = "OSPREY_PS_TOKEN");

// A channel to address that sends and accepts messages up to max_message_bytes.
std::shared_ptr<grpc::Channel> make_channel(const std::string& address, int64_t max_message_bytes);

// Sets the call's deadline (now + timeout) and the token (when not empty).
void prepare(grpc::ClientContext& context, const std::string& token,
             std::chrono::milliseconds timeout);

// "UNAVAILABLE", "INVALID_ARGUMENT", ...: the code's name, for messages.
std::string_view code_name(grpc::StatusCode code);

// UNAVAILABLE or DEADLINE_EXCEEDED: the peer is down, restarting or too slow; a retry elsewhere
// or later may succeed. Anything else is the request's fault and fails the same way again.
bool is_transient(const grpc::Status& status);

// Throws the osprey error for a failed status: `what` names the call and the peer ("Push to ps 1
// at 127.0.0.1:5001"). INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED (message too large),
// FAILED_PRECONDITION and OUT_OF_RANGE -> ValueError; UNAUTHENTICATED, UNAVAILABLE,
// DEADLINE_EXCEEDED and the rest -> DistributedError.
[[noreturn]] void throw_status(const grpc::Status& status, std::string_view what);

}  // namespace osprey::comm::rpc
