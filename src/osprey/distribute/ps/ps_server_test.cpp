// PsServer in-process on 127.0.0.1:0, called through the raw generated stub: the round trip,
// and every refusal with its status and message (token, size bound, unknown variable, shape,
// malformed tensor); bf16 gradients; loopback by default; the last checkpoint at shutdown. Also
// the wire and rpc helpers the server is built on.
#include "osprey/distribute/ps/ps_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "osprey/comm/rpc/rpc.h"
#include "osprey/core/error.h"
#include "osprey/core/float_convert.h"
#include "osprey/distribute/ps/internal/wire.h"
#include "osprey/distribute/ps/ps.grpc.pb.h"
#include "osprey/io/temporary_directory.h"
#include "osprey/optim/factory.h"
#include "osprey/optim/sgd.h"
#include "osprey/tensor/factory.h"

namespace osprey::distribute::ps {
namespace {

constexpr auto kTimeout = std::chrono::seconds(10);

Tensor vec(std::vector<float> v) { return from_vector<float>(v); }

struct Client {
  explicit Client(const std::string& address, std::string token = "")
      : stub(ParameterServer::NewStub(comm::rpc::make_channel(address, int64_t{64} << 20))),
        token(std::move(token)) {}

  template <class Request, class Reply, class Method>
  grpc::Status call(Method method, const Request& request, Reply* reply) {
    grpc::ClientContext context;
    comm::rpc::prepare(context, token, kTimeout);
    return ((*stub).*method)(&context, request, reply);
  }
  grpc::Status reg(const RegisterRequest& r, RegisterReply* reply = nullptr) {
    RegisterReply ignored;
    return call(&ParameterServer::Stub::Register, r, reply ? reply : &ignored);
  }
  grpc::Status pull(PullReply* reply) {
    return call(&ParameterServer::Stub::Pull, PullRequest(), reply);
  }
  grpc::Status push(const PushRequest& r, PushReply* reply = nullptr) {
    PushReply ignored;
    return call(&ParameterServer::Stub::Push, r, reply ? reply : &ignored);
  }

  std::unique_ptr<ParameterServer::Stub> stub;
  std::string token;
};

// w = [1, 2], SGD lr 0.5, async without a bound.
RegisterRequest register_request(bool overwrite = false) {
  RegisterRequest r;
  to_wire(vec({1, 2}), "w", r.add_variables());
  r.set_optimizer(optim::serialize(optim::SGD({.learning_rate = 0.5})).dump());
  r.set_mode("async");
  r.mutable_staleness()->set_max_staleness(-1);
  r.set_overwrite(overwrite);
  return r;
}

PushRequest push_request(const Tensor& g, const std::string& name = "w", bool bf16 = false) {
  PushRequest r;
  r.set_weight(1);
  r.set_worker(1);
  to_wire(g, name, r.add_gradients(), bf16);
  return r;
}

std::vector<float> pulled(Client& client) {
  PullReply reply;
  EXPECT_TRUE(client.pull(&reply).ok());
  if (reply.variables_size() != 1) return {};
  return from_wire(reply.variables(0), "test").to_vector<float>();
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(PsServerTest, RegisterPullPushRoundTrip) {
  PsServer server({.name = "ps 0"});
  Client client(server.address());
  RegisterReply reg;
  ASSERT_TRUE(client.reg(register_request(), &reg).ok());
  EXPECT_FALSE(reg.kept_existing());
  EXPECT_EQ(reg.version(), 0);
  EXPECT_EQ(reg.last_step(), -1);
  EXPECT_EQ(pulled(client), (std::vector<float>{1, 2}));

  PushReply reply;
  const grpc::Status s = client.push(push_request(vec({2, -2})), &reply);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(reply.outcome(), PushReply::APPLIED);
  EXPECT_EQ(reply.version(), 1);
  EXPECT_EQ(pulled(client), (std::vector<float>{0, 3}));  // [1, 2] - 0.5*[2, -2]

  StatsRequest sr;
  StatsReply stats;
  ASSERT_TRUE(client.call(&ParameterServer::Stub::Stats, sr, &stats).ok());
  EXPECT_EQ(stats.version(), 1);
  EXPECT_EQ(stats.pushes(), 1);
  EXPECT_EQ(stats.applied(), 1);
  EXPECT_EQ(stats.variables(), 1);
  EXPECT_EQ(stats.parameters(), 2);
  EXPECT_EQ(stats.staleness_histogram_size(), kStalenessBuckets);
  EXPECT_GT(stats.bytes_received(), 0);
  EXPECT_GT(stats.bytes_sent(), 0);

  // A ps without a checkpoint directory answers a Checkpoint with an empty path.
  CheckpointReply ck;
  ASSERT_TRUE(client.call(&ParameterServer::Stub::Checkpoint, CheckpointRequest(), &ck).ok());
  EXPECT_EQ(ck.path(), "");
  EXPECT_EQ(ck.version(), 1);
}

TEST(PsServerTest, CallsWithoutTheTokenOrWithAWrongOneAreUnauthenticated) {
  PsServer server({.token = "s3cret"});
  Client none(server.address());
  grpc::Status s = none.reg(register_request());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "missing token: this server requires OSPREY_PS_TOKEN");
  Client wrong(server.address(), "s3cre7");
  s = wrong.reg(register_request());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "wrong token");
  EXPECT_FALSE(server.shard().registered());
  Client right(server.address(), "s3cret");
  EXPECT_TRUE(right.reg(register_request()).ok());
}

TEST(PsServerTest, MessagesOverTheBoundAreResourceExhausted) {
  PsServer server({.max_message_bytes = 1024});
  Client client(server.address());
  ASSERT_TRUE(client.reg(register_request()).ok());
  const grpc::Status s = client.push(push_request(zeros({1000})));  // 4000 bytes of data
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_EQ(server.shard().version(), 0);
}

TEST(PsServerTest, UnknownVariableIsNotFoundNamingIt) {
  PsServer server({.name = "ps 1"});
  Client client(server.address());
  ASSERT_TRUE(client.reg(register_request()).ok());
  const grpc::Status s = client.push(push_request(vec({1, 1}), "dense/kernel"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(),
            "ps 1: worker 1 pushed a gradient for 'dense/kernel', which is not one of this "
            "shard's 1 variables");
}

TEST(PsServerTest, WrongShapeIsInvalidArgumentNamingTheVariableAndBothShapes) {
  PsServer server({});
  Client client(server.address());
  ASSERT_TRUE(client.reg(register_request()).ok());
  const grpc::Status s = client.push(push_request(zeros({2, 3})));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "ps: the gradient of 'w' from worker 1 has shape [2, 3], but the variable has shape "
            "[2]");
  EXPECT_EQ(pulled(client), (std::vector<float>{1, 2}));
}

TEST(PsServerTest, MalformedTensorDataIsInvalidArgument) {
  PsServer server({});
  Client client(server.address());
  ASSERT_TRUE(client.reg(register_request()).ok());
  PushRequest r = push_request(vec({1, 1}));
  r.mutable_gradients(0)->mutable_data()->resize(7);
  grpc::Status s = client.push(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "Push from worker 1 to ps: tensor 'w' (float32 [2]) should carry 8 bytes of data. "
            "Received: 7 bytes");
  r = push_request(vec({1, 1}));
  r.mutable_gradients(0)->set_dtype("int64");
  s = client.push(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(contains(s.error_message(), "must be float32 or bfloat16")) << s.error_message();
  EXPECT_EQ(pulled(client), (std::vector<float>{1, 2}));
}

TEST(PsServerTest, Bf16GradientsApplyAsTheF32GradientRoundedToBf16) {
  PsServer server({});
  Client client(server.address());
  ASSERT_TRUE(client.reg(register_request()).ok());
  const Tensor g = random_normal({2}, {.seed = 3});
  ASSERT_TRUE(client.push(push_request(g, "w", /*bf16=*/true)).ok());
  // What SGD does with the gradient rounded to bf16 (nearest even) first.
  std::vector<bfloat16> h(2);
  convert(g.data<float>(), h.data(), 2);
  std::vector<float> rounded(2);
  convert(h.data(), rounded.data(), 2);
  EXPECT_NE(rounded, g.to_vector<float>());  // the rounding is visible
  optim::SGD sgd({.learning_rate = 0.5});
  autograd::Variable w(vec({1, 2}), true, "w");
  w.set_grad(vec(rounded));
  sgd.apply({w});
  EXPECT_EQ(pulled(client), w.value().to_vector<float>());
}

// The first IPv4 address of this host that is not loopback, if any.
std::optional<std::string> non_loopback_ipv4() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (ifaddrs* a = list; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) == nullptr) continue;
    if (std::string(text).starts_with("127.")) continue;
    found = text;
  }
  freeifaddrs(list);
  return found;
}

TEST(PsServerTest, BindsLoopbackByDefault) {
  PsServer server(PsServerOptions{});
  EXPECT_TRUE(server.address().starts_with("127.0.0.1:")) << server.address();
  EXPECT_GT(server.port(), 0);
  const std::optional<std::string> other = non_loopback_ipv4();
  if (!other) GTEST_SKIP() << "this host has no non-loopback IPv4 address to try";
  Client outside(fmt::format("{}:{}", *other, server.port()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  RegisterReply reply;
  const grpc::Status s = outside.stub->Register(&context, register_request(), &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
}

TEST(PsServerTest, BadAddressOrPortInUseIsRefusedNamingIt) {
  EXPECT_THROW(
      {
        try {
          PsServer server({.listen = "127.0.0.1"});
        } catch (const ValueError& e) {
          EXPECT_TRUE(contains(e.what(), "invalid address '127.0.0.1': no port")) << e.what();
          throw;
        }
      },
      ValueError);
  PsServer first({});
  const std::string taken = first.address();
  EXPECT_THROW(
      {
        try {
          PsServer second({.listen = taken});
        } catch (const DistributedError& e) {
          EXPECT_TRUE(contains(e.what(), "cannot listen on " + taken)) << e.what();
          throw;
        }
      },
      DistributedError);
}

TEST(PsServerTest, ShutdownWritesTheLastCheckpointAndARestartRestoresIt) {
  io::TemporaryDirectory tmp("osprey-ps-server");
  const std::string dir = (tmp.path() / "ps0").string();
  {
    PsServer server({.checkpoint_dir = dir});
    Client client(server.address());
    ASSERT_TRUE(client.reg(register_request()).ok());
    ASSERT_TRUE(client.push(push_request(vec({2, -2}))).ok());
    server.shutdown();
  }
  PsServer restarted({.checkpoint_dir = dir});
  EXPECT_EQ(restarted.shard().version(), 1);
  Client client(restarted.address());
  RegisterReply reg;
  ASSERT_TRUE(client.reg(register_request(), &reg).ok());
  EXPECT_TRUE(reg.kept_existing());
  EXPECT_EQ(pulled(client), (std::vector<float>{0, 3}));
}

TEST(PsServerTest, PeriodicCheckpointsNeedADirectory) {
  EXPECT_THROW(PsServer({.checkpoint_every_seconds = 1}), ValueError);
}

TEST(WireTest, FromWireChecksDtypeShapeAndSizeBeforeAllocating) {
  TensorData d;
  d.set_name("x");
  d.set_dtype("float32");
  d.add_shape(2);
  d.add_shape(-3);
  EXPECT_THROW(
      {
        try {
          from_wire(d, "Register");
        } catch (const ValueError& e) {
          EXPECT_EQ(std::string(e.what()),
                    "Register: tensor 'x' has a negative dimension; expected sizes >= 0. "
                    "Received: shape=[2, -3]");
          throw;
        }
      },
      ValueError);
  d.clear_shape();
  d.add_shape(int64_t{1} << 40);
  d.add_shape(int64_t{1} << 40);
  EXPECT_THROW(from_wire(d, "Register"), ValueError);  // overflows, never allocated
  d.clear_shape();
  d.add_shape(int64_t{1} << 40);  // 4 TiB claimed, 0 bytes sent
  EXPECT_THROW(from_wire(d, "Register"), ValueError);
  d.set_dtype("f32");  // aliases are not wire names
  d.clear_shape();
  EXPECT_THROW(from_wire(d, "Register"), ValueError);
}

TEST(WireTest, ToWireAndBackKeepsEveryElement) {
  const Tensor x = random_normal({3, 4}, {.seed = 5}).transpose(0, 1);  // not contiguous
  TensorData d;
  to_wire(x, "x", &d);
  EXPECT_EQ(d.dtype(), "float32");
  const Tensor y = from_wire(d, "test");
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  const Tensor i = from_vector<int64_t>({1, -2, 3});
  to_wire(i, "i", &d);
  EXPECT_EQ(from_wire(d, "test").to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
}

TEST(RpcTest, CheckAddressAcceptsHostPortAndRefusesTheRest) {
  for (const char* ok : {"127.0.0.1:0", "localhost:5001", "[::1]:65535", "ps-0.example:80"}) {
    EXPECT_NO_THROW(comm::rpc::check_address(ok, "test")) << ok;
  }
  for (const char* bad : {"", "127.0.0.1", ":5001", "host:", "host:65536", "host:-1", "::1:5",
                          "[::1:5", "host:5x", "a b:1"}) {
    EXPECT_THROW(comm::rpc::check_address(bad, "test"), ValueError) << bad;
  }
}

TEST(RpcTest, ThrowStatusMapsCodesToOspreyErrorsNamingTheCall) {
  try {
    comm::rpc::throw_status({grpc::StatusCode::NOT_FOUND, "no variable 'w'"},
                            "Push to ps 1 at h:1");
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), "Push to ps 1 at h:1: NOT_FOUND: no variable 'w'");
  }
  EXPECT_THROW(comm::rpc::throw_status({grpc::StatusCode::RESOURCE_EXHAUSTED, "big"}, "x"),
               ValueError);
  EXPECT_THROW(comm::rpc::throw_status({grpc::StatusCode::UNAVAILABLE, "down"}, "x"),
               DistributedError);
  EXPECT_THROW(comm::rpc::throw_status({grpc::StatusCode::UNAUTHENTICATED, "wrong token"}, "x"),
               DistributedError);
  EXPECT_TRUE(comm::rpc::is_transient(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "")));
  EXPECT_FALSE(comm::rpc::is_transient(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "")));
}

}  // namespace
}  // namespace osprey::distribute::ps
