#include "osprey/distribute/ps/internal/cluster_coordinator.h"

#include <fmt/format.h>

#include <algorithm>

#include "osprey/comm/rpc/rpc.h"
#include "osprey/core/error.h"

namespace osprey::distribute::ps {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string status_text(const grpc::Status& s) {
  return fmt::format("{}: {}", comm::rpc::code_name(s.error_code()), s.error_message());
}

}  // namespace

RemoteValue::State RemoteValue::state() const { return state_.load(std::memory_order_acquire); }

bool RemoteValue::finished() const {
  const State s = state();
  return s == State::done || s == State::failed || s == State::cancelled;
}

const StepReply& RemoteValue::reply() const {
  OSPREY_ASSERT(state() == State::done, "RemoteValue::reply before the closure is done");
  return reply_;
}

int RemoteValue::worker() const { return worker_; }

ClusterCoordinator::ClusterCoordinator(CoordinatorOptions options)
    : options_(std::move(options)), workers_(options_.workers.size()) {
  OSPREY_CHECK(!workers_.empty(), "ClusterCoordinator: the cluster lists no worker task");
  last_progress_ = Clock::now();
  for (size_t w = 0; w < workers_.size(); ++w) {
    comm::rpc::check_address(options_.workers[w], fmt::format("worker {}'s address", w));
    workers_[w].address = options_.workers[w];
    workers_[w].stub =
        Worker::NewStub(comm::rpc::make_channel(workers_[w].address, options_.max_message_bytes));
    workers_[w].since = Clock::now();
    workers_[w].last_error = "not reached yet";
  }
  for (size_t w = 0; w < workers_.size(); ++w) {
    threads_.emplace_back([this, w] { dispatch(static_cast<int>(w)); });
  }
}

ClusterCoordinator::~ClusterCoordinator() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (WorkerSlot& slot : workers_) {
      if (slot.call != nullptr) slot.call->TryCancel();
    }
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

RemoteValuePtr ClusterCoordinator::schedule(StepRequest request, int only_worker) {
  OSPREY_CHECK(only_worker < num_workers(),
               "ClusterCoordinator::schedule: worker {} does not exist; the cluster has {}",
               only_worker, num_workers());
  RemoteValuePtr value(new RemoteValue(std::move(request), only_worker));
  {
    std::lock_guard lock(mutex_);
    if (outstanding_.empty()) last_progress_ = Clock::now();
    queue_.push_back(value);
    outstanding_.push_back(value);
  }
  work_.notify_all();
  return value;
}

bool ClusterCoordinator::cancel(const RemoteValuePtr& value) {
  std::lock_guard lock(mutex_);
  if (value->state_ != RemoteValue::State::queued) return false;
  queue_.erase(std::remove(queue_.begin(), queue_.end(), value), queue_.end());
  value->state_ = RemoteValue::State::cancelled;
  outstanding_.erase(std::remove(outstanding_.begin(), outstanding_.end(), value),
                     outstanding_.end());
  finished_.notify_all();
  return true;
}

void ClusterCoordinator::finish(const RemoteValuePtr& value, RemoteValue::State state,
                                std::exception_ptr error) {
  // Under mutex_.
  value->error_ = std::move(error);
  value->state_.store(state, std::memory_order_release);  // after the reply or the error
  outstanding_.erase(std::remove(outstanding_.begin(), outstanding_.end(), value),
                     outstanding_.end());
  last_progress_ = Clock::now();
  finished_.notify_all();
}

RemoteValuePtr ClusterCoordinator::take(int w, std::unique_lock<std::mutex>& lock) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if ((*it)->only_worker_ < 0 || (*it)->only_worker_ == w) {
      RemoteValuePtr v = *it;
      queue_.erase(it);
      return v;
    }
  }
  return nullptr;
}

bool ClusterCoordinator::probe(int w) {
  WorkerSlot& slot = workers_[static_cast<size_t>(w)];
  grpc::ClientContext context;
  comm::rpc::prepare(context, options_.token, std::chrono::seconds(2));
  PingRequest request;
  PingReply reply;
  const grpc::Status status = slot.stub->Ping(&context, request, &reply);
  std::lock_guard lock(mutex_);
  if (!status.ok()) {
    slot.last_error = status_text(status);
    return false;
  }
  if (!reply.in_fit()) {
    slot.last_error = "it runs but is not in fit";
    return false;
  }
  return true;
}

void ClusterCoordinator::dispatch(int w) {
  WorkerSlot& slot = workers_[static_cast<size_t>(w)];
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!slot.up) {
      lock.unlock();
      const bool up = probe(w);
      lock.lock();
      if (up) {
        if (slot.joined) {
          fmt::print(stderr, "osprey: worker {} at {} is back after {:.1f} s: it rejoins\n", w,
                     slot.address, seconds_since(slot.since));
        }
        slot.up = true;
        slot.joined = true;
        slot.since = Clock::now();
        continue;
      }
      work_.wait_for(lock, std::chrono::milliseconds(200), [&] { return stopping_; });
      continue;
    }
    RemoteValuePtr value = take(w, lock);
    if (!value) {
      // Idle: a heartbeat now and then, so the worker knows the coordinator lives.
      if (work_.wait_for(lock, options_.heartbeat, [&] {
            return stopping_ ||
                   std::any_of(queue_.begin(), queue_.end(), [&](const RemoteValuePtr& v) {
                     return v->only_worker_ < 0 || v->only_worker_ == w;
                   });
          })) {
        continue;
      }
      lock.unlock();
      const bool up = probe(w);
      lock.lock();
      if (!up) {
        slot.up = false;
        slot.since = Clock::now();
      }
      continue;
    }
    value->state_ = RemoteValue::State::running;
    value->worker_ = w;
    slot.running = value;
    slot.since = Clock::now();
    grpc::ClientContext context;
    comm::rpc::prepare(context, options_.token, options_.timeout);
    slot.call = &context;
    lock.unlock();
    StepReply reply;
    const grpc::Status status = slot.stub->RunStep(&context, value->request_, &reply);
    lock.lock();
    slot.call = nullptr;
    slot.running.reset();
    if (status.ok()) {
      value->reply_ = std::move(reply);
      finish(value, RemoteValue::State::done, nullptr);
      continue;
    }
    if (stopping_) {
      finish(value, RemoteValue::State::cancelled, nullptr);
      break;
    }
    if (comm::rpc::is_transient(status)) {
      // The worker is gone (or not ready): the step runs elsewhere, the worker is probed.
      value->state_ = RemoteValue::State::queued;
      queue_.push_front(value);
      ++rescheduled_;
      slot.up = false;
      slot.since = Clock::now();
      slot.last_error = status_text(status);
      fmt::print(stderr,
                 "osprey: worker {} at {} failed during step {} share {} ({}); the step is "
                 "re-scheduled on another worker\n",
                 w, slot.address, value->request_.step(), value->request_.share(), slot.last_error);
      work_.notify_all();
      continue;
    }
    std::exception_ptr error;
    try {
      comm::rpc::throw_status(
          status, fmt::format("step {} share {} on worker {} at {}", value->request_.step(),
                              value->request_.share(), w, slot.address));
    } catch (...) {
      error = std::current_exception();
    }
    finish(value, RemoteValue::State::failed, error);
  }
}

void ClusterCoordinator::wait_for(const std::vector<RemoteValuePtr>& values, size_t count) {
  std::unique_lock lock(mutex_);
  while (true) {
    size_t done = 0;
    for (const RemoteValuePtr& v : values) {
      if (v->state_ == RemoteValue::State::failed) std::rethrow_exception(v->error_);
      if (v->state_ == RemoteValue::State::done) ++done;
    }
    if (done >= count) return;
    const bool all_finished = std::all_of(values.begin(), values.end(),
                                          [](const RemoteValuePtr& v) { return v->finished(); });
    OSPREY_CHECK_T(InternalError, !all_finished,
                   "ClusterCoordinator: {} of the closures waited for are done, {} expected (the "
                   "others were cancelled)",
                   done, count);
    if (seconds_since(last_progress_) * 1000.0 > static_cast<double>(options_.timeout.count())) {
      const std::string states = [&] {
        lock.unlock();
        std::string s = describe_workers();
        lock.lock();
        return s;
      }();
      OSPREY_THROW(DistributedError,
                   "ParameterServerStrategy: no training step finished on any worker for {} s "
                   "(the timeout): {}",
                   options_.timeout.count() / 1000.0, states);
    }
    finished_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

void ClusterCoordinator::join() {
  std::vector<RemoteValuePtr> all;
  {
    std::lock_guard lock(mutex_);
    all = outstanding_;
  }
  wait_for(all, all.size());
}

void ClusterCoordinator::end_fit(const std::string& error) {
  for (size_t w = 0; w < workers_.size(); ++w) {
    {
      std::lock_guard lock(mutex_);
      if (!workers_[w].up) continue;
    }
    grpc::ClientContext context;
    comm::rpc::prepare(context, options_.token, std::chrono::seconds(5));
    EndFitRequest request;
    request.set_error(error);
    EndFitReply reply;
    const grpc::Status status = workers_[w].stub->EndFit(&context, request, &reply);
    if (!status.ok()) {
      fmt::print(stderr, "osprey: could not tell worker {} at {} that fit ended ({})\n", w,
                 workers_[w].address, status_text(status));
    }
    std::lock_guard lock(mutex_);
    workers_[w].up = false;  // out of fit until its next ping says otherwise
    workers_[w].joined = false;
    workers_[w].since = Clock::now();
    workers_[w].last_error = "fit ended";
  }
}

std::string ClusterCoordinator::describe_workers() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (size_t w = 0; w < workers_.size(); ++w) {
    const WorkerSlot& s = workers_[w];
    out += fmt::format("{}worker {} at {}: ", w > 0 ? "; " : "", w, s.address);
    if (s.running) {
      out += fmt::format("running step {} share {} for {:.1f} s", s.running->request_.step(),
                         s.running->request_.share(), seconds_since(s.since));
    } else if (s.up) {
      out += "idle";
    } else {
      out += fmt::format("down for {:.1f} s ({})", seconds_since(s.since), s.last_error);
    }
  }
  return out;
}

}  // namespace osprey::distribute::ps
