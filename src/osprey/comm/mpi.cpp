#include "osprey/comm/mpi.h"

#include <fmt/format.h>
#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <vector>

#include "osprey/comm/bf16_blocks.h"
#include "osprey/comm/call_check.h"
#include "osprey/comm/collective_span.h"
#include "osprey/comm/deadline.h"
#include "osprey/core/error.h"

namespace osprey::comm {

namespace {
constexpr const char* kMpiBackend = "mpi";  // in the profiler's collective spans
}  // namespace

namespace {

using std::chrono::milliseconds;

std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

// Polls `request` until it completes (true) or `deadline` passes (false). MPI_Test drives Open
// MPI's progress engine as a blocking call does (and yields the core when oversubscribed).
// `paused`, when given, receives the longest gap between two polls: a rank that was itself
// stopped (SIGSTOP) finds its deadline passed when it resumes, and should say so.
bool complete_by(MPI_Request& request, DeadlineClock::time_point deadline, MPI_Status* status,
                 std::string_view call, DeadlineClock::duration* paused = nullptr) {
  for (auto last = DeadlineClock::now();;) {
    int done = 0;
    const int code = MPI_Test(&request, &done, status);
    OSPREY_CHECK_T(DistributedError, code == MPI_SUCCESS, "MPI {} failed: {}", call,
                   error_string(code));
    if (done != 0) return true;
    const auto now = DeadlineClock::now();
    if (paused != nullptr) *paused = std::max(*paused, now - last);
    if (now >= deadline) return false;
    last = now;
  }
}

// MPI_Init_thread once; MPI_Finalize when the last communicator (and this process) is done with it,
// unless a call timed out. Also the liveness survey every communicator's timeout asks for.
class Runtime {
 public:
  explicit Runtime(milliseconds timeout) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      // Open MPI picks a binomial tree for MPI_Iallreduce on small groups, 1.3-3.7x slower than
      // its blocking MPI_Allreduce on 2 ranks; Rabenseifner's algorithm matches it
      // (bench/RESULTS.md, "Deadlines"). A user's own setting wins.
      setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0);
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      owned_ = true;
      OSPREY_CHECK_T(DistributedError, provided >= MPI_THREAD_MULTIPLE,
                     "MPI: this MPI library does not support MPI_THREAD_MULTIPLE (provided level "
                     "{}); osprey's "
                     "gradient reducer and layers call MPI from several threads",
                     provided);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Comm_idup(MPI_COMM_WORLD, &liveness_, &request);
    if (!complete_by(request, DeadlineClock::now() + timeout, MPI_STATUS_IGNORE, "start-up")) {
      broken_ = true;
      OSPREY_THROW(DistributedError,
                   "MPI start-up passed its deadline of {} ms on rank {} of {}: a peer did not "
                   "start osprey's communicators (it failed before, or is stopped or hung)",
                   timeout.count(), rank_, size_);
    }
  }
  ~Runtime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && finalized == 0 && !broken_.load()) MPI_Finalize();
  }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  // A call timed out or a send never completed: MPI_Finalize would wait for the stalled peer.
  void mark_broken() noexcept { broken_ = true; }
  // Holds what MPI may still write into or read from until the process exits.
  void keep(std::shared_ptr<void> buffers) {
    std::lock_guard<std::mutex> lock(survey_mutex_);
    kept_.push_back(std::move(buffers));
  }

  // Says `where` this rank waits to every peer and collects what they say within `grace`. Once
  // per process: each rank sends one message, so the first survey's answer serves every later
  // timeout (of other communicators). Its messages and buffers stay posted and alive: a peer
  // may answer after the grace.
  std::vector<PeerState> survey(const std::string& where, milliseconds grace) {
    std::lock_guard<std::mutex> lock(survey_mutex_);
    if (!peers_.empty()) return peers_;
    broken_ = true;
    peers_.assign(static_cast<size_t>(size_), PeerState{});
    said_.assign(kWhereBytes, '\0');
    std::copy_n(where.begin(), std::min(where.size(), kWhereBytes - 1), said_.begin());
    heard_.assign(static_cast<size_t>(size_) * kWhereBytes, '\0');
    requests_.assign(2 * static_cast<size_t>(size_), MPI_REQUEST_NULL);
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      MPI_Isend(said_.data(), kWhereBytes, MPI_CHAR, q, kSurveyTag, liveness_,
                &requests_[2 * static_cast<size_t>(q)]);
      MPI_Irecv(heard_.data() + static_cast<size_t>(q) * kWhereBytes, kWhereBytes, MPI_CHAR, q,
                kSurveyTag, liveness_, &requests_[2 * static_cast<size_t>(q) + 1]);
    }
    const auto deadline = DeadlineClock::now() + grace;
    for (int answered = 1; answered < size_ && DeadlineClock::now() < deadline;) {
      for (int q = 0; q < size_; ++q) {
        MPI_Request& r = requests_[2 * static_cast<size_t>(q) + 1];
        if (q == rank_ || r == MPI_REQUEST_NULL) continue;
        int done = 0;
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (done == 0) continue;
        peers_[static_cast<size_t>(q)] = {PeerState::Kind::waiting,
                                          std::string(heard_.data() + q * kWhereBytes)};
        ++answered;
      }
    }
    return peers_;
  }

 private:
  static constexpr size_t kWhereBytes = 256;
  static constexpr int kSurveyTag = 1;
  bool owned_ = false;
  std::atomic<bool> broken_{false};
  int rank_ = 0, size_ = 1;
  MPI_Comm liveness_ = MPI_COMM_NULL;  // the survey's own: its messages never meet a caller's
  std::mutex survey_mutex_;
  std::vector<PeerState> peers_;  // the survey's answer, once taken
  std::vector<char> said_, heard_;
  std::vector<MPI_Request> requests_;
  std::vector<std::shared_ptr<void>> kept_;
};

std::shared_ptr<Runtime> runtime(milliseconds timeout) {
  static std::mutex mutex;
  static std::shared_ptr<Runtime> rt;
  std::lock_guard<std::mutex> lock(mutex);
  if (!rt) rt = std::make_shared<Runtime>(timeout);
  return rt;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(std::shared_ptr<Runtime> rt, MpiOptions options)
      : rt_(std::move(rt)), options_(std::move(options)), rank_(rt_->rank()), size_(rt_->size()) {
    OSPREY_CHECK(options_.timeout.count() > 0,
                 "make_mpi_communicator: timeout must be positive. Received: {} ms",
                 options_.timeout.count());
    MPI_Request request = MPI_REQUEST_NULL;
    ok(MPI_Comm_idup(MPI_COMM_WORLD, &comm_, &request), "communicator creation");
    complete(request, "communicator creation", DeadlineClock::now() + options_.timeout);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);  // codes come back to us: errors, not aborts
    calls_.resize(static_cast<size_t>(size_));
  }
  ~MpiCommunicator() override {
    bool settled = broken_.empty();
    const auto deadline = DeadlineClock::now() + options_.timeout;
    for (Pending& p : sends_) {
      settled = settled && complete_by(p.request, deadline, MPI_STATUS_IGNORE, "send");
    }
    if (settled) {
      MPI_Comm_free(&comm_);
      return;
    }
    // Requests are still posted into these buffers (a call past its deadline, a receiver that
    // never came): they stay alive, and comm_ is left, until the process exits.
    rt_->mark_broken();
    rt_->keep(std::make_shared<Leftovers>(
        Leftovers{std::move(sends_), std::move(calls_), std::move(blocks_)}));
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }

  void all_reduce(float* data, int64_t count, ReduceOp op) override {
    const trace::Span span = collective_span("all_reduce", count * 4, *this, kMpiBackend);
    const auto deadline = check(CallKind::all_reduce, count, op, 0);
    if (size_ > 1) collective_fault_point("all_reduce", rank_);
    // MPI counts are ints: reduce in pieces of at most 2^30 elements.
    for (int64_t off = 0; off < count; off += kMaxPiece) {
      const int n = static_cast<int>(std::min(kMaxPiece, count - off));
      MPI_Request request = MPI_REQUEST_NULL;
      ok(MPI_Iallreduce(MPI_IN_PLACE, data + off, n, MPI_FLOAT, MPI_SUM, comm_, &request),
         "all_reduce");
      complete(request, "all_reduce", deadline);
    }
    if (op == ReduceOp::mean) divide(data, count);
  }

  // bf16 on the wire, f32 accumulation in rank order: an all-to-all hands rank r every rank's
  // block r (as bf16), rank r sums them in float32 in rank order, rounds, and an all-gather
  // returns the blocks (as bf16). The bytes on the wire are those of a ring all-reduce in bf16.
  void all_reduce_bf16(float* data, int64_t count, ReduceOp op) override {
    const trace::Span span = collective_span("all_reduce_bf16", count * 2, *this, kMpiBackend);
    const auto deadline = check(CallKind::all_reduce_bf16, count, op, 0);
    if (size_ > 1) collective_fault_point("all_reduce_bf16", rank_);
    blocks_.pack(data, count, size_);
    OSPREY_CHECK(blocks_.block() <= INT_MAX,
                 "Communicator::all_reduce_bf16: {} elements exceed MPI's count limit", count);
    const int b = static_cast<int>(blocks_.block());
    MPI_Request request = MPI_REQUEST_NULL;
    ok(MPI_Ialltoall(blocks_.send(), b, MPI_UINT16_T, blocks_.recv(), b, MPI_UINT16_T, comm_,
                     &request),
       "all_reduce_bf16");
    complete(request, "all_reduce_bf16", deadline);
    blocks_.reduce(op);
    ok(MPI_Iallgather(blocks_.send(), b, MPI_UINT16_T, blocks_.recv(), b, MPI_UINT16_T, comm_,
                      &request),
       "all_reduce_bf16");
    complete(request, "all_reduce_bf16", deadline);
    blocks_.unpack(data);
  }

  void reduce_scatter(const float* send, float* recv, int64_t recv_count, ReduceOp op) override {
    const trace::Span span =
        collective_span("reduce_scatter", recv_count * size() * 4, *this, kMpiBackend);
    const auto deadline = check(CallKind::reduce_scatter, recv_count, op, 0);
    MPI_Request request = MPI_REQUEST_NULL;
    ok(MPI_Ireduce_scatter_block(send, recv, as_int(recv_count, "reduce_scatter"), MPI_FLOAT,
                                 MPI_SUM, comm_, &request),
       "reduce_scatter");
    complete(request, "reduce_scatter", deadline);
    if (op == ReduceOp::mean) divide(recv, recv_count);
  }

  void all_gather(const float* send, float* recv, int64_t send_count) override {
    const trace::Span span = collective_span("all_gather", send_count * 4, *this, kMpiBackend);
    const auto deadline = check(CallKind::all_gather, send_count, ReduceOp::sum, 0);
    const int n = as_int(send_count, "all_gather");
    MPI_Request request = MPI_REQUEST_NULL;
    ok(MPI_Iallgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, comm_, &request), "all_gather");
    complete(request, "all_gather", deadline);
  }

  void broadcast(float* data, int64_t count, int root) override {
    const trace::Span span = collective_span("broadcast", count * 4, *this, kMpiBackend, root);
    const auto deadline = check(CallKind::broadcast, count, ReduceOp::sum, root);
    MPI_Request request = MPI_REQUEST_NULL;
    ok(MPI_Ibcast(data, as_int(count, "broadcast"), MPI_FLOAT, root, comm_, &request), "broadcast");
    complete(request, "broadcast", deadline);
  }

  void barrier() override {
    const trace::Span span = collective_span("barrier", 0, *this, kMpiBackend);
    const auto deadline = check(CallKind::barrier, 0, ReduceOp::sum, 0);
    MPI_Request request = MPI_REQUEST_NULL;
    ok(MPI_Ibarrier(comm_, &request), "barrier");
    complete(request, "barrier", deadline);
  }

  // The message is copied and sent without waiting for the receiver (the interface's promise,
  // which a plain MPI_Send breaks above the eager limit); finished sends are reaped on later calls.
  void send(const float* data, int64_t count, int destination, int tag) override {
    const trace::Span span = collective_span("send", count * 4, *this, kMpiBackend, destination);
    check_usable();
    check_peer(destination, "send", "destination");
    check_tag(tag, "send");
    reap();
    sends_.push_back({std::vector<float>(data, data + as_int(count, "send")), MPI_REQUEST_NULL});
    Pending& p = sends_.back();
    ok(MPI_Isend(p.data.data(), static_cast<int>(count), MPI_FLOAT, destination, tag, comm_,
                 &p.request),
       "send");
  }

  void recv(float* data, int64_t count, int source, int tag) override {
    const trace::Span span = collective_span("recv", count * 4, *this, kMpiBackend, source);
    check_usable();
    check_peer(source, "recv", "source");
    check_tag(tag, "recv");
    const auto deadline = DeadlineClock::now() + options_.timeout;
    ++sequence_;
    // Named only on a timeout: a recv on a pipeline's hot path formats nothing.
    const auto late = [&] { timed_out(fmt::format("recv from rank {} (tag {})", source, tag)); };
    MPI_Status status;
    for (int arrived = 0;;) {
      ok(MPI_Iprobe(source, tag, comm_, &arrived, &status), "recv");
      if (arrived != 0) break;
      if (DeadlineClock::now() >= deadline) late();
    }
    int sent = 0;
    MPI_Get_count(&status, MPI_FLOAT, &sent);
    // A wrong count still takes the message off the queue, so the next recv does not see it.
    std::vector<float> discard;
    float* into = data;
    if (sent != count) {
      discard.resize(static_cast<size_t>(sent));
      into = discard.data();
    }
    MPI_Request request = MPI_REQUEST_NULL;
    ok(MPI_Irecv(into, sent, MPI_FLOAT, source, tag, comm_, &request), "recv");
    if (!complete_by(request, deadline, MPI_STATUS_IGNORE, "recv")) late();
    OSPREY_CHECK(
        sent == count,
        "Communicator::recv: rank {} expected {} elements from rank {} (tag {}) but {} were sent",
        rank_, count, source, tag, sent);
  }

 private:
  static constexpr int64_t kMaxPiece = int64_t{1} << 30;
  struct Pending {
    std::vector<float> data;
    MPI_Request request;
  };
  struct Leftovers {
    std::deque<Pending> sends;
    std::vector<CallDescriptor> calls;
    Bf16Blocks blocks;
  };

  // Starts a collective: refuses a broken communicator, sets the call's deadline and, unless
  // turned off, has every rank learn every rank's descriptor (one small all-gather) and run the
  // same check.
  DeadlineClock::time_point check(CallKind kind, int64_t count, ReduceOp op, int root) {
    check_usable();
    const auto deadline = DeadlineClock::now() + options_.timeout;
    ++sequence_;
    const CallDescriptor mine{static_cast<int64_t>(kind), count, static_cast<int64_t>(op), root};
    if (!options_.check_calls || size_ == 1) {
      check_same_call({&mine, 1}, size_);
      return deadline;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    ok(MPI_Iallgather(&mine, 4, MPI_INT64_T, calls_.data(), 4, MPI_INT64_T, comm_, &request),
       to_string(kind));
    complete(request, to_string(kind), deadline);
    check_same_call(calls_, size_);
    return deadline;
  }

  void complete(MPI_Request& request, std::string_view call, DeadlineClock::time_point deadline) {
    DeadlineClock::duration paused{};
    if (!complete_by(request, deadline, MPI_STATUS_IGNORE, call, &paused)) timed_out(call, paused);
  }

  // The call passed its deadline: its request stays posted, so the communicator is unusable from
  // here on; ask the peers where they are and say so.
  [[noreturn]] void timed_out(std::string_view call, DeadlineClock::duration paused = {}) {
    const std::string where = describe_call(call, options_.name, sequence_);
    const std::vector<PeerState> peers = rt_->survey(where, liveness_grace(options_.timeout));
    broken_ = describe_failure("MPI", where, rank_, options_.timeout, peers);
    const auto paused_ms = std::chrono::duration_cast<milliseconds>(paused).count();
    if (paused_ms >= 1000) {
      broken_ += fmt::format(
          "; this rank itself did not run for {} ms during the call (stopped or starved)",
          paused_ms);
    }
    throw DistributedError(broken_);
  }

  void check_usable() const {
    OSPREY_CHECK_T(DistributedError, broken_.empty(),
                   "MPI communicator '{}' is unusable after an earlier call passed its deadline: "
                   "{}",
                   options_.name, broken_);
  }

  void ok(int code, std::string_view call) const {
    if (code == MPI_SUCCESS) return;
    OSPREY_THROW(DistributedError, "MPI {} failed on rank {} of {}: {}", call, rank_, size_,
                 error_string(code));
  }

  void divide(float* data, int64_t count) const {
    const auto n = static_cast<float>(size_);
    for (int64_t i = 0; i < count; ++i) data[i] /= n;
  }

  static int as_int(int64_t count, const char* call) {
    OSPREY_CHECK(count >= 0 && count <= INT_MAX,
                 "Communicator::{}: count must be between 0 and {} with MPI. Received: {}", call,
                 INT_MAX, count);
    return static_cast<int>(count);
  }

  void check_peer(int peer, const char* call, const char* what) const {
    comm::check_peer(peer, rank_, size_, call, what);
  }

  void check_tag(int tag, const char* call) const {
    OSPREY_CHECK(tag >= 0 && tag <= 32767,
                 "Communicator::{}: tag must be between 0 and 32767 (MPI's guaranteed "
                 "bound). Received: {}",
                 call, tag);
  }

  void reap() {
    while (!sends_.empty()) {
      int done = 0;
      MPI_Test(&sends_.front().request, &done, MPI_STATUS_IGNORE);
      if (done == 0) return;
      sends_.pop_front();
    }
  }

  std::shared_ptr<Runtime> rt_;  // first member: MPI outlives everything below
  MpiOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  int64_t sequence_ = 0;  // calls so far: names the call in errors
  std::string broken_;    // set by the call that passed its deadline
  std::vector<CallDescriptor> calls_;
  Bf16Blocks blocks_;  // bf16 staging, grown once
  std::deque<Pending> sends_;
};

}  // namespace

bool mpi_built() noexcept { return true; }

bool mpi_launched() noexcept {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

std::unique_ptr<Communicator> make_mpi_communicator(MpiOptions options) {
  return std::make_unique<MpiCommunicator>(runtime(options.timeout), std::move(options));
}

void mpi_abort_if_running(int code) noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized == 0 || finalized != 0) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace osprey::comm
