#include "osprey/comm/mpi.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <vector>

#include "osprey/comm/bf16_blocks.h"
#include "osprey/comm/call_check.h"
#include "osprey/core/error.h"

namespace osprey::comm {

namespace {

// MPI_Init_thread once; MPI_Finalize when the last communicator (and this process) is done with it.
class Runtime {
 public:
  Runtime() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      owned_ = true;
      OSPREY_CHECK_T(DistributedError, provided >= MPI_THREAD_MULTIPLE,
                     "MPI: this MPI library does not support MPI_THREAD_MULTIPLE (provided level "
                     "{}); osprey's "
                     "gradient reducer and layers call MPI from several threads",
                     provided);
    }
  }
  ~Runtime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && finalized == 0) MPI_Finalize();
  }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

 private:
  bool owned_ = false;
};

std::shared_ptr<Runtime> runtime() {
  static std::mutex mutex;
  static std::shared_ptr<Runtime> rt;
  std::lock_guard<std::mutex> lock(mutex);
  if (!rt) rt = std::make_shared<Runtime>();
  return rt;
}

std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(std::shared_ptr<Runtime> rt, MpiOptions options)
      : rt_(std::move(rt)), options_(options) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);  // codes come back to us: errors, not aborts
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    calls_.resize(static_cast<size_t>(size_));
  }
  ~MpiCommunicator() override {
    for (Pending& p : sends_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    MPI_Comm_free(&comm_);
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }

  void all_reduce(float* data, int64_t count, ReduceOp op) override {
    check(CallKind::all_reduce, count, op, 0);
    // MPI counts are ints: reduce in pieces of at most 2^30 elements.
    for (int64_t off = 0; off < count; off += kMaxPiece) {
      const int n = static_cast<int>(std::min(kMaxPiece, count - off));
      ok(MPI_Allreduce(MPI_IN_PLACE, data + off, n, MPI_FLOAT, MPI_SUM, comm_), "all_reduce");
    }
    if (op == ReduceOp::mean) divide(data, count);
  }

  // bf16 on the wire, f32 accumulation in rank order: an all-to-all hands rank r every rank's
  // block r (as bf16), rank r sums them in float32 in rank order, rounds, and an all-gather
  // returns the blocks (as bf16). The bytes on the wire are those of a ring all-reduce in bf16.
  void all_reduce_bf16(float* data, int64_t count, ReduceOp op) override {
    check(CallKind::all_reduce_bf16, count, op, 0);
    blocks_.pack(data, count, size_);
    OSPREY_CHECK(blocks_.block() <= INT_MAX,
                 "Communicator::all_reduce_bf16: {} elements exceed MPI's count limit", count);
    const int b = static_cast<int>(blocks_.block());
    ok(MPI_Alltoall(blocks_.send(), b, MPI_UINT16_T, blocks_.recv(), b, MPI_UINT16_T, comm_),
       "all_reduce_bf16");
    blocks_.reduce(op);
    ok(MPI_Allgather(blocks_.send(), b, MPI_UINT16_T, blocks_.recv(), b, MPI_UINT16_T, comm_),
       "all_reduce_bf16");
    blocks_.unpack(data);
  }

  void reduce_scatter(const float* send, float* recv, int64_t recv_count, ReduceOp op) override {
    check(CallKind::reduce_scatter, recv_count, op, 0);
    ok(MPI_Reduce_scatter_block(send, recv, as_int(recv_count, "reduce_scatter"), MPI_FLOAT,
                                MPI_SUM, comm_),
       "reduce_scatter");
    if (op == ReduceOp::mean) divide(recv, recv_count);
  }

  void all_gather(const float* send, float* recv, int64_t send_count) override {
    check(CallKind::all_gather, send_count, ReduceOp::sum, 0);
    const int n = as_int(send_count, "all_gather");
    ok(MPI_Allgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, comm_), "all_gather");
  }

  void broadcast(float* data, int64_t count, int root) override {
    check(CallKind::broadcast, count, ReduceOp::sum, root);
    ok(MPI_Bcast(data, as_int(count, "broadcast"), MPI_FLOAT, root, comm_), "broadcast");
  }

  void barrier() override {
    check(CallKind::barrier, 0, ReduceOp::sum, 0);
    ok(MPI_Barrier(comm_), "barrier");
  }

  // The message is copied and sent without waiting for the receiver (the interface's promise,
  // which a plain MPI_Send breaks above the eager limit); finished sends are reaped on later calls.
  void send(const float* data, int64_t count, int destination, int tag) override {
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
    check_peer(source, "recv", "source");
    check_tag(tag, "recv");
    MPI_Status status;
    ok(MPI_Probe(source, tag, comm_, &status), "recv");
    int sent = 0;
    MPI_Get_count(&status, MPI_FLOAT, &sent);
    if (sent != count) {
      // Take the message off the queue so the next recv does not see it again, then report.
      std::vector<float> discard(static_cast<size_t>(sent));
      MPI_Recv(discard.data(), sent, MPI_FLOAT, source, tag, comm_, MPI_STATUS_IGNORE);
      OSPREY_THROW(
          ValueError,
          "Communicator::recv: rank {} expected {} elements from rank {} (tag {}) but {} were sent",
          rank_, count, source, tag, sent);
    }
    ok(MPI_Recv(data, sent, MPI_FLOAT, source, tag, comm_, MPI_STATUS_IGNORE), "recv");
  }

 private:
  static constexpr int64_t kMaxPiece = int64_t{1} << 30;
  struct Pending {
    std::vector<float> data;
    MPI_Request request;
  };

  // Every rank learns every rank's descriptor (one small all-gather) and runs the same check.
  void check(CallKind kind, int64_t count, ReduceOp op, int root) {
    const CallDescriptor mine{static_cast<int64_t>(kind), count, static_cast<int64_t>(op), root};
    if (!options_.check_calls || size_ == 1) {
      check_same_call({&mine, 1}, size_);
      return;
    }
    ok(MPI_Allgather(&mine, 4, MPI_INT64_T, calls_.data(), 4, MPI_INT64_T, comm_), to_string(kind));
    check_same_call(calls_, size_);
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
  return std::make_unique<MpiCommunicator>(runtime(), options);
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
