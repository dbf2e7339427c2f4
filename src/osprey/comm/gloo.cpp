#include "osprey/comm/gloo.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <deque>
#include <thread>

#include "osprey/comm/bf16_blocks.h"
#include "osprey/comm/call_check.h"
#include "osprey/comm/collective_span.h"
#include "osprey/comm/deadline.h"
#include "osprey/comm/tcp_store.h"
#include "osprey/core/error.h"

namespace osprey::comm {

namespace {
constexpr const char* kGlooBackend = "gloo";  // in the profiler's collective spans
}  // namespace

namespace {

// Gloo's Store interface over the TcpStore client.
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  explicit StoreAdapter(TcpStore& store) : store_(store) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(key, data);
  }
  std::vector<char> get(const std::string& key) override { return store_.get(key); }
  void wait(const std::vector<std::string>& keys) override { store_.wait(keys); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_.wait(keys, timeout);
  }

 private:
  TcpStore& store_;
};

// Port 0 is accepted when `any_port` (rank 0's store then takes a free one).
std::pair<std::string, int> split_address(const std::string& address, bool any_port) {
  const size_t colon = address.rfind(':');
  OSPREY_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < address.size(),
               "GlooGroup: rendezvous must be host:port. Received: '{}'", address);
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const int port = std::atoi(address.c_str() + colon + 1);
  OSPREY_CHECK((port >= 1 || (any_port && address.substr(colon + 1) == "0")) && port <= 65535,
               "GlooGroup: the port of rendezvous '{}' must be between 1 and 65535", address);
  return {host, port};
}

constexpr uint64_t kP2PSlot = uint64_t{1} << 40;  // point-to-point slots, far from the collectives'

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::rendezvous::Context> context, TcpStore& store,
                   const GlooOptions& options, std::shared_ptr<std::atomic<bool>> failed,
                   std::string name)
      : failed_(std::move(failed)),
        ctx_(std::move(context)),
        store_(store),
        name_(std::move(name)),
        timeout_(options.timeout),
        check_calls_(options.check_calls) {
    calls_.resize(static_cast<size_t>(ctx_->size));
  }
  ~GlooCommunicator() override {
    for (Pending& p : sends_) {
      try {
        p.buffer->waitSend(timeout_);
      } catch (const std::exception&) {  // the peer is gone: nothing left to deliver to
      }
    }
  }

  int rank() const noexcept override { return ctx_->rank; }
  int size() const noexcept override { return ctx_->size; }

  void all_reduce(float* data, int64_t count, ReduceOp op) override {
    const trace::Span span = collective_span("all_reduce", count * 4, *this, kGlooBackend);
    if (!check(CallKind::all_reduce, count, op, 0) || count == 0) return;
    collective_fault_point("all_reduce", rank());
    run("all_reduce", [&] {
      gloo::AllreduceOptions opts(ctx_);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setOutput(data, static_cast<size_t>(count));
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
    if (op == ReduceOp::mean) divide(data, count);
  }

  // As MpiCommunicator's: an all-to-all of bf16 blocks, f32 sums in rank order, an all-gather.
  void all_reduce_bf16(float* data, int64_t count, ReduceOp op) override {
    const trace::Span span = collective_span("all_reduce_bf16", count * 2, *this, kGlooBackend);
    if (!check(CallKind::all_reduce_bf16, count, op, 0) || count == 0) return;
    collective_fault_point("all_reduce_bf16", rank());
    blocks_.pack(data, count, size());
    run("all_reduce_bf16", [&] {
      gloo::AlltoallOptions opts(ctx_);
      opts.setInput(blocks_.send(), blocks_.total());
      opts.setOutput(blocks_.recv(), blocks_.total());
      opts.setTimeout(timeout_);
      gloo::alltoall(opts);
    });
    blocks_.reduce(op);
    run("all_reduce_bf16", [&] {
      gloo::AllgatherOptions opts(ctx_);
      opts.setInput(blocks_.send(), static_cast<size_t>(blocks_.block()));
      opts.setOutput(blocks_.recv(), blocks_.total());
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    });
    blocks_.unpack(data);
  }

  // An all-to-all hands rank r every rank's block r; sums in rank order (deterministic).
  void reduce_scatter(const float* send, float* recv, int64_t recv_count, ReduceOp op) override {
    const trace::Span span =
        collective_span("reduce_scatter", recv_count * size() * 4, *this, kGlooBackend);
    if (!check(CallKind::reduce_scatter, recv_count, op, 0) || recv_count == 0) return;
    const int n = size();
    const auto total = static_cast<size_t>(recv_count * n);
    scratch_.resize(total);
    run("reduce_scatter", [&] {
      gloo::AlltoallOptions opts(ctx_);
      opts.setInput(const_cast<float*>(send), total);
      opts.setOutput(scratch_.data(), total);
      opts.setTimeout(timeout_);
      gloo::alltoall(opts);
    });
    for (int64_t i = 0; i < recv_count; ++i) {
      float acc = scratch_[static_cast<size_t>(i)];
      for (int q = 1; q < n; ++q) acc += scratch_[static_cast<size_t>(q * recv_count + i)];
      recv[i] = op == ReduceOp::mean ? acc / static_cast<float>(n) : acc;
    }
  }

  void all_gather(const float* send, float* recv, int64_t send_count) override {
    const trace::Span span = collective_span("all_gather", send_count * 4, *this, kGlooBackend);
    if (!check(CallKind::all_gather, send_count, ReduceOp::sum, 0) || send_count == 0) return;
    if (size() == 1) {
      std::copy(send, send + send_count, recv);
      return;
    }
    run("all_gather", [&] {
      gloo::AllgatherOptions opts(ctx_);
      opts.setInput(const_cast<float*>(send), static_cast<size_t>(send_count));
      opts.setOutput(recv, static_cast<size_t>(send_count * size()));
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    });
  }

  void broadcast(float* data, int64_t count, int root) override {
    const trace::Span span = collective_span("broadcast", count * 4, *this, kGlooBackend, root);
    if (!check(CallKind::broadcast, count, ReduceOp::sum, root) || count == 0) return;
    run("broadcast", [&] {
      gloo::BroadcastOptions opts(ctx_);
      opts.setOutput(data, static_cast<size_t>(count));
      opts.setRoot(root);
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

  void barrier() override {
    const trace::Span span = collective_span("barrier", 0, *this, kGlooBackend);
    if (!check(CallKind::barrier, 0, ReduceOp::sum, 0)) return;
    run("barrier", [&] {
      gloo::BarrierOptions opts(ctx_);
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

  // Two messages per send: the count, then the data, so a receiver expecting another count
  // learns it before reading (and reports it) instead of reading past its buffer.
  void send(const float* data, int64_t count, int destination, int tag) override {
    const trace::Span span = collective_span("send", count * 4, *this, kGlooBackend, destination);
    check_peer(destination, "send", "destination");
    ++sequence_;
    OSPREY_CHECK(count >= 0, "Communicator::send: count must be non-negative. Received: {}", count);
    OSPREY_CHECK(tag >= 0, "Communicator::send: tag must be non-negative. Received: {}", tag);
    while (sends_.size() >= 64) {  // bound what is held for slow receivers
      run("send", [&] { sends_.front().buffer->waitSend(timeout_); });
      sends_.pop_front();
    }
    std::vector<float> msg(static_cast<size_t>(count + 2));
    std::memcpy(msg.data(), &count, sizeof count);
    std::copy(data, data + count, msg.begin() + 2);
    sends_.push_back({std::move(msg), nullptr});
    Pending& p = sends_.back();
    run("send", [&] {
      p.buffer = ctx_->createUnboundBuffer(p.data.data(), p.data.size() * sizeof(float));
      p.buffer->send(destination, kP2PSlot + static_cast<uint64_t>(tag), 0, sizeof(int64_t));
      p.buffer->send(destination, kP2PSlot + static_cast<uint64_t>(tag), 2 * sizeof(float));
    });
  }

  void recv(float* data, int64_t count, int source, int tag) override {
    const trace::Span span = collective_span("recv", count * 4, *this, kGlooBackend, source);
    check_peer(source, "recv", "source");
    ++sequence_;
    OSPREY_CHECK(tag >= 0, "Communicator::recv: tag must be non-negative. Received: {}", tag);
    int64_t sent = 0;
    const uint64_t slot = kP2PSlot + static_cast<uint64_t>(tag);
    run("recv", [&] {
      auto header = ctx_->createUnboundBuffer(&sent, sizeof sent);
      header->recv(source, slot);
      header->waitRecv(timeout_);
    });
    std::vector<float> discard;
    float* into = data;
    if (sent != count) {
      discard.resize(static_cast<size_t>(std::max<int64_t>(sent, 1)));
      into = discard.data();
    }
    run("recv", [&] {
      auto body = ctx_->createUnboundBuffer(into, static_cast<size_t>(sent) * sizeof(float));
      body->recv(source, slot);
      body->waitRecv(timeout_);
    });
    OSPREY_CHECK(
        sent == count,
        "Communicator::recv: rank {} expected {} elements from rank {} (tag {}) but {} were sent",
        rank(), count, source, tag, sent);
  }

 private:
  struct Pending {
    std::vector<float> data;
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  };

  // Gathers every rank's descriptor and checks them alike; false when there is nobody to talk to.
  bool check(CallKind kind, int64_t count, ReduceOp op, int root) {
    OSPREY_CHECK_T(DistributedError, broken_.empty(), "{}", broken_);
    ++sequence_;
    const CallDescriptor mine{static_cast<int64_t>(kind), count, static_cast<int64_t>(op), root};
    if (!check_calls_ || size() == 1) {
      check_same_call({&mine, 1}, size());
      return size() > 1;
    }
    run(to_string(kind), [&] {
      gloo::AllgatherOptions opts(ctx_);
      opts.setInput(const_cast<int64_t*>(&mine.kind), 4);
      opts.setOutput(&calls_[0].kind, calls_.size() * 4);
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    });
    check_same_call(calls_, size());
    return true;
  }

  // Runs a Gloo call; its failure (a closed connection, a deadline) becomes a DistributedError
  // that names the peers to blame, and the communicator stays broken.
  template <class Fn>
  void run(std::string_view call, Fn&& fn) {
    try {
      fn();
    } catch (const osprey::Error&) {
      throw;
    } catch (const std::exception& e) {  // gloo::Exception, gloo::EnforceNotMet
      failed_->store(true);
      broken_ = explain(call, e.what());
      throw DistributedError(broken_);
    }
  }

  // The liveness survey (deadline.h) through the rendezvous store: this rank writes where it
  // waits under its own key, then, for up to the grace period, reads the others' keys and the
  // store's list of ranks whose connection closed.
  std::string explain(std::string_view call, const std::string& what) {
    const std::string where = describe_call(call, name_, sequence_);
    // Gloo says "Timed out waiting ..." (unbound buffers) or "Read timeout ..." (pairs).
    std::string lower = what;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const bool timed_out =
        lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos;
    const auto grace = liveness_grace(timeout_);
    const auto key = [](int q) { return "osprey/waiting/" + std::to_string(q); };
    std::vector<PeerState> peers(static_cast<size_t>(size()));
    try {
      store_.set(key(rank()), std::vector<char>(where.begin(), where.end()), grace);
      const auto deadline = DeadlineClock::now() + grace;
      for (bool settled = false; !settled;) {
        const std::vector<int> gone = store_.gone_ranks(grace);
        settled = true;
        for (int q = 0; q < size(); ++q) {
          PeerState& peer = peers[static_cast<size_t>(q)];
          if (q == rank() || peer.kind == PeerState::Kind::waiting) continue;
          if (auto said = store_.try_get(key(q), grace)) {
            peer = {PeerState::Kind::waiting, std::string(said->begin(), said->end())};
          } else if (std::find(gone.begin(), gone.end(), q) != gone.end()) {
            peer.kind = PeerState::Kind::gone;
          } else {
            settled = false;
          }
        }
        if (settled || DeadlineClock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    } catch (const DistributedError&) {
      return fmt::format(
          "Gloo {} {} on rank {} of {}: rank 0 (the chief, serving the rendezvous at {}) did not "
          "respond within {} ms: it died, left the job, or is stopped ({})",
          where, timed_out ? "passed its deadline" : "failed", rank(), size(), store_.address(),
          grace.count(), what);
    }
    return fmt::format("{} ({})",
                       describe_failure("Gloo", where, rank(), timeout_, peers, timed_out), what);
  }

  void divide(float* data, int64_t count) const {
    const auto n = static_cast<float>(size());
    for (int64_t i = 0; i < count; ++i) data[i] /= n;
  }

  void check_peer(int peer, const char* call, const char* what) const {
    OSPREY_CHECK_T(DistributedError, broken_.empty(), "{}", broken_);
    comm::check_peer(peer, rank(), size(), call, what);
  }

  std::shared_ptr<std::atomic<bool>> failed_;  // the group's
  std::shared_ptr<gloo::rendezvous::Context> ctx_;
  TcpStore& store_;
  std::string name_;
  int64_t sequence_ = 0;  // calls so far: names the call in errors
  std::chrono::milliseconds timeout_;
  bool check_calls_;
  std::string broken_;  // set by the first failed call
  std::vector<CallDescriptor> calls_;
  Bf16Blocks blocks_;  // bf16 staging, grown once
  std::vector<float> scratch_;
  std::deque<Pending> sends_;
};

}  // namespace

struct GlooGroup::Impl {
  // Set by a communicator whose call failed: rank 0 then keeps serving the store a little longer.
  std::shared_ptr<std::atomic<bool>> failed = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<TcpStoreServer> server;  // rank 0 only
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<StoreAdapter> adapter;
  std::shared_ptr<gloo::transport::Device> device;
};

bool gloo_built() noexcept { return true; }

GlooGroup::GlooGroup(GlooOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  OSPREY_CHECK(options_.size >= 1, "GlooGroup: size must be at least 1. Received: {}",
               options_.size);
  OSPREY_CHECK(options_.rank >= 0 && options_.rank < options_.size,
               "GlooGroup: rank {} is not a rank of a group of size {}", options_.rank,
               options_.size);
  // Gloo writes to its sockets with writev, which raises SIGPIPE when the peer has died, and the
  // default action ends this process silently, instead of the error naming the dead rank. Python
  // ignores SIGPIPE at start-up (which is why PyTorch's Gloo needs nothing); do the same unless the
  // program installed a handler of its own.
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
  auto [host, port] = split_address(options_.rendezvous, options_.rank == 0);
  if (options_.rank == 0) {
    impl_->server = std::make_unique<TcpStoreServer>(host, port);
    if (port == 0) {
      port = impl_->server->port();
      options_.rendezvous =
          options_.rendezvous.substr(0, options_.rendezvous.rfind(':') + 1) + std::to_string(port);
    }
  }
  impl_->store = std::make_unique<TcpStore>(host, port, options_.rank, options_.timeout);
  impl_->adapter = std::make_unique<StoreAdapter>(*impl_->store);
  std::string self = options_.hostname;
  if (self.empty()) self = options_.rank == 0 ? host : impl_->store->local_address();
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = self;
    impl_->device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    OSPREY_THROW(DistributedError, "GlooGroup: rank {} cannot open a TCP device on {}: {}",
                 options_.rank, self, e.what());
  }
}

GlooGroup::~GlooGroup() {
  // After a failure the others ask rank 0's store which rank left; stopping it at once would make
  // them report rank 0 instead (seen when rank 0 itself failed first, because of that rank).
  if (impl_ && impl_->server && impl_->failed->load()) {
    impl_->server->wait_for_clients(1, std::chrono::seconds(2));  // 1: this rank's own client
  }
}

std::unique_ptr<Communicator> GlooGroup::make_communicator(const std::string& name,
                                                           std::optional<bool> check_calls) {
  auto context = std::make_shared<gloo::rendezvous::Context>(options_.rank, options_.size);
  context->setTimeout(options_.timeout);
  gloo::rendezvous::PrefixStore prefixed(std::to_string(made_++) + "/" + name, *impl_->adapter);
  try {
    context->connectFullMesh(prefixed, impl_->device);
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    OSPREY_THROW(DistributedError,
                 "GlooGroup: rank {} of {} could not connect communicator '{}' (rendezvous {}): {}",
                 options_.rank, options_.size, name, options_.rendezvous, e.what());
  }
  GlooOptions options = options_;
  if (check_calls) options.check_calls = *check_calls;
  return std::make_unique<GlooCommunicator>(std::move(context), *impl_->store, options,
                                            impl_->failed, name);
}

}  // namespace osprey::comm
