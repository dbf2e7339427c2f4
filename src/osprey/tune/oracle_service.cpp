// The oracle service and its client (oracle_service.h) over gRPC (oracle.proto). The server keeps
// one lock around the Oracle (its calls are quick: bookkeeping and a file write) and the leases;
// a reaper thread re-queues the trials of tuners that went silent. The client retries calls that
// find the chief unreachable, so a chief restart is a pause for the workers, not an error.
#include "osprey/tune/oracle_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <set>
#include <thread>

#include "osprey/comm/rpc/rpc.h"
#include "osprey/tune/oracle.grpc.pb.h"

namespace osprey::tune {

namespace rpc = comm::rpc;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kTokenVariable[] = "OSPREY_ORACLE_TOKEN";

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// "127.0.0.1:0" with port 5001 -> "127.0.0.1:5001".
std::string with_port(const std::string& listen, int port) {
  return fmt::format("{}:{}", listen.substr(0, listen.rfind(':')), port);
}

nlohmann::json parse_json(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "{}: malformed JSON: {}", what, e.what());
  }
}

void check_tuner_id(const std::string& id, const char* call) {
  OSPREY_CHECK(!id.empty() && id.size() <= 256, "{}: tuner_id must be 1-256 characters, got {}",
               call, id.size());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Server

struct OracleServer::Impl final : wire::OracleService::Service {
  struct Lease {
    std::string tuner_id;  // empty: a trial found running at a restart, claimed by its reporter
    Clock::time_point expires;
  };

  Oracle& oracle;
  OracleServiceOptions options;
  EndCallback on_end;
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, Lease> leases;                  // running trial -> its holder
  std::map<std::string, std::set<std::string>> lapsed;  // trial -> tuners whose lease ran out
  std::map<std::string, Clock::time_point> last_seen;   // tuner -> its last call
  std::set<std::string> told_to_stop;
  std::set<std::string> read_final_state;  // told to stop, then read the state (their summary)
  bool stopped_answered = false;
  bool quit = false;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::thread reaper;

  Impl(Oracle& o, OracleServiceOptions opts, EndCallback end)
      : oracle(o), options(std::move(opts)), on_end(std::move(end)) {
    OSPREY_CHECK(options.lease_seconds > 0,
                 "OracleServer: lease_seconds must be positive. Received: {}",
                 options.lease_seconds);
    {
      // Trials running when a previous chief died: their tuners may still be training them, so
      // they are leased out again (to whoever reports for them first) rather than re-run at once.
      std::lock_guard lock(mu);
      const auto now = Clock::now();
      for (const std::string& id : oracle.take_requeued())
        leases[id] = {"", now + seconds(options.lease_seconds)};
    }
    server = rpc::start_server(options.listen, {this}, options.max_message_bytes, &port,
                               "oracle service");
    reaper = std::thread([this] { reap_loop(); });
  }

  ~Impl() override { stop(); }

  void stop() {
    {
      std::lock_guard lock(mu);
      if (quit) return;
      quit = true;
    }
    cv.notify_all();
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    if (reaper.joinable()) reaper.join();
  }

  // Leases past their time go back in line (under mu).
  void reap() {
    const auto now = Clock::now();
    for (auto it = leases.begin(); it != leases.end();) {
      if (it->second.expires > now) {
        ++it;
        continue;
      }
      if (options.verbose) {
        fmt::print(stderr,
                   "oracle: trial {}: {} sent no heartbeat for {:g} s; the trial goes back in "
                   "line, to resume from its last backup\n",
                   it->first, it->second.tuner_id.empty() ? "its tuner" : it->second.tuner_id,
                   options.lease_seconds);
        std::fflush(stderr);
      }
      if (!it->second.tuner_id.empty()) lapsed[it->first].insert(it->second.tuner_id);
      oracle.requeue_trial(it->first);
      it = leases.erase(it);
    }
  }

  void reap_loop() {
    const auto period =
        std::min<Clock::duration>(seconds(options.lease_seconds / 4), std::chrono::seconds(1));
    std::unique_lock lock(mu);
    while (!quit) {
      cv.wait_for(lock, period);
      if (quit) break;
      reap();
      cv.notify_all();
    }
  }

  bool any_trial_running() const {
    return std::any_of(oracle.trials().begin(), oracle.trials().end(),
                       [](const Trial& t) { return t.status == TrialStatus::running; });
  }

  // The lease of trial_id held by tuner_id (claiming an unowned one), renewed; TrialLost otherwise.
  void hold(const std::string& trial_id, const std::string& tuner_id) {
    auto it = leases.find(trial_id);
    if (it == leases.end() || (!it->second.tuner_id.empty() && it->second.tuner_id != tuner_id)) {
      const Trial& t = oracle.get_trial(trial_id);  // ValueError for an unknown trial
      if (t.ended()) {
        throw TrialLost(
            fmt::format("trial {} has already ended ({})", trial_id, status_name(t.status)));
      }
      const std::string now_with = it == leases.end()
                                       ? std::string(" and no tuner holds it now")
                                       : fmt::format("; {} holds it now", it->second.tuner_id);
      const auto lost = lapsed.find(trial_id);
      if (lost != lapsed.end() && lost->second.count(tuner_id) > 0) {
        throw TrialLost(fmt::format(
            "trial {} is not held by {}: its lease ran out (no heartbeat for {:g} s) and it went "
            "back in line{}",
            trial_id, tuner_id, options.lease_seconds, now_with));
      }
      // It never held it: another tuner was given the trial (or a tuner id is shared by mistake).
      throw TrialLost(
          fmt::format("trial {} was never given to {}{}", trial_id, tuner_id, now_with));
    }
    it->second.tuner_id = tuner_id;
    it->second.expires = Clock::now() + seconds(options.lease_seconds);
  }

  void seen(const std::string& tuner_id) { last_seen[tuner_id] = Clock::now(); }

  grpc::Status GetState(grpc::ServerContext* context, const wire::GetStateRequest* request,
                        wire::GetStateReply* reply) override {
    return call(context, [&] {
      reply->set_state_json(oracle.get_state(true).dump());
      if (told_to_stop.count(request->tuner_id()) > 0) {
        read_final_state.insert(request->tuner_id());
        cv.notify_all();
      }
    });
  }

  grpc::Status UpdateSpace(grpc::ServerContext* context, const wire::UpdateSpaceRequest* request,
                           wire::UpdateSpaceReply*) override {
    return call(context, [&] {
      check_tuner_id(request->tuner_id(), "UpdateSpace");
      seen(request->tuner_id());
      const std::string where = fmt::format("UpdateSpace from {}", request->tuner_id());
      oracle.update_space(
          HyperParameters::from_json(parse_json(request->hyperparameters_json(), where), where));
    });
  }

  grpc::Status CreateTrial(grpc::ServerContext* context, const wire::CreateTrialRequest* request,
                           wire::CreateTrialReply* reply) override {
    return call(context, [&] {
      const std::string& tuner = request->tuner_id();
      check_tuner_id(tuner, "CreateTrial");
      seen(tuner);
      reply->set_lease_seconds(options.lease_seconds);
      reap();
      // A tuner asking while it holds a trial lost its process (or our reply): it resumes it.
      for (const auto& [id, lease] : leases) {
        if (lease.tuner_id == tuner) {
          hold(id, tuner);
          reply->set_status(status_name(TrialStatus::running));
          reply->set_trial_json(oracle.get_trial(id).to_json().dump());
          return;
        }
      }
      Trial t = oracle.create_trial(tuner);
      if (t.status == TrialStatus::running) {
        leases[t.trial_id] = {tuner, Clock::now() + seconds(options.lease_seconds)};
        reply->set_trial_json(t.to_json().dump());
      } else if (t.status == TrialStatus::stopped && any_trial_running()) {
        // Not over while a trial runs: its tuner may die and the trial come back in line.
        t.status = TrialStatus::idle;
      } else if (t.status == TrialStatus::stopped) {
        stopped_answered = true;
        told_to_stop.insert(tuner);
        cv.notify_all();
      }
      reply->set_status(status_name(t.status));
    });
  }

  grpc::Status UpdateTrial(grpc::ServerContext* context, const wire::UpdateTrialRequest* request,
                           wire::UpdateTrialReply* reply) override {
    return call(context, [&] {
      check_tuner_id(request->tuner_id(), "UpdateTrial");
      seen(request->tuner_id());
      OSPREY_CHECK(
          request->epoch() >= 0 && request->execution() >= 0 && request->execution() < 100000,
          "UpdateTrial: epoch and execution must be >= 0 (execution < 100000). "
          "Received: epoch {}, execution {}",
          request->epoch(), request->execution());
      hold(request->trial_id(), request->tuner_id());
      MetricValues metrics;
      metrics.reserve(static_cast<size_t>(request->metrics_size()));
      for (const wire::Metric& m : request->metrics()) {
        OSPREY_CHECK(!m.name().empty(), "UpdateTrial: a metric without a name");
        metrics.emplace_back(m.name(), m.value());
      }
      const TrialStatus s =
          oracle.update_trial(request->trial_id(), metrics, request->epoch(), request->execution());
      reply->set_status(status_name(s));
    });
  }

  grpc::Status EndTrial(grpc::ServerContext* context, const wire::EndTrialRequest* request,
                        wire::EndTrialReply* reply) override {
    return call(context, [&] {
      const std::string& tuner = request->tuner_id();
      check_tuner_id(tuner, "EndTrial");
      seen(tuner);
      const TrialStatus status = parse_status(request->status(), "EndTrial: status");
      const std::string& id = request->trial_id();
      // A retried EndTrial whose first reply was lost: the trial already ended as asked.
      const auto it = leases.find(id);
      if (it == leases.end()) {
        const Trial& t = oracle.get_trial(id);
        if (t.ended() && t.status == status) {
          reply->set_trial_json(t.to_json().dump());
          return;
        }
      }
      hold(id, tuner);
      const Trial t = oracle.end_trial(id, status, request->message());
      leases.erase(id);
      reply->set_trial_json(t.to_json().dump());
      if (on_end) on_end(t);
      cv.notify_all();
    });
  }

  grpc::Status Heartbeat(grpc::ServerContext* context, const wire::HeartbeatRequest* request,
                         wire::HeartbeatReply*) override {
    return call(context, [&] {
      check_tuner_id(request->tuner_id(), "Heartbeat");
      seen(request->tuner_id());
      hold(request->trial_id(), request->tuner_id());
    });
  }

  // Runs fn under the lock: the token first, TrialLost as FAILED_PRECONDITION, the rest as
  // rpc::serve maps it.
  grpc::Status call(grpc::ServerContext* context, const std::function<void()>& fn) {
    std::string lost;
    grpc::Status s = rpc::serve(
        *context, options.token,
        [&] {
          std::lock_guard lock(mu);
          try {
            fn();
          } catch (const TrialLost& e) {
            lost = e.what();
          } catch (const nlohmann::json::exception& e) {
            OSPREY_THROW(ValueError, "malformed request: {}", e.what());
          }
        },
        kTokenVariable);
    if (s.ok() && !lost.empty()) return {grpc::StatusCode::FAILED_PRECONDITION, lost};
    return s;
  }

  void wait_until_done() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return quit || (stopped_answered && !any_trial_running()); });
    // Grace: every tuner we know of is told to stop, or has been silent for a lease.
    cv.wait_for(lock, seconds(options.lease_seconds * 2), [&] {
      if (quit) return true;
      const auto now = Clock::now();
      return std::all_of(last_seen.begin(), last_seen.end(), [&](const auto& kv) {
        return told_to_stop.count(kv.first) > 0 || now - kv.second > seconds(options.lease_seconds);
      });
    });
    // A tuner told to stop reads the final state for its summary (GetState): wait for those
    // reads, for at most a few seconds.
    cv.wait_for(lock,
                std::min<Clock::duration>(seconds(options.lease_seconds), std::chrono::seconds(3)),
                [&] { return quit || read_final_state.size() >= told_to_stop.size(); });
  }
};

OracleServer::OracleServer(Oracle& oracle, OracleServiceOptions options, EndCallback on_end)
    : impl_(std::make_unique<Impl>(oracle, std::move(options), std::move(on_end))) {}

OracleServer::~OracleServer() = default;

int OracleServer::port() const { return impl_->port; }
std::string OracleServer::address() const { return with_port(impl_->options.listen, impl_->port); }
std::mutex& OracleServer::mutex() { return impl_->mu; }
void OracleServer::wait_until_done() { impl_->wait_until_done(); }
void OracleServer::shutdown() { impl_->stop(); }

// ---------------------------------------------------------------------------------------------
// Client

namespace {

// The options with a seed, so that building this copy draws nothing from the global seed stream
// (the worker's own oracle drew its seed already; this copy never samples).
OracleOptions without_seed_draw(OracleOptions o) {
  if (!o.seed) o.seed = 0;
  return o;
}

class RemoteOracle final : public Oracle {
 public:
  RemoteOracle(std::unique_ptr<Oracle> local, OracleClientOptions options)
      : Oracle(without_seed_draw(local->options())),
        local_(std::move(local)),
        options_(std::move(options)) {
    rpc::check_address(options_.address, "oracle client");
    check_tuner_id(options_.tuner_id, "oracle client");
    stub_ = new_stub();
    heartbeat_ = std::thread([this] { heartbeat_loop(); });
  }

  ~RemoteOracle() override {
    {
      std::lock_guard lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    heartbeat_.join();
  }

  const char* class_name() const override { return local_->class_name(); }

  void update_space(const HyperParameters& hp) override {
    wire::UpdateSpaceRequest request;
    request.set_tuner_id(options_.tuner_id);
    request.set_hyperparameters_json(hp.to_json().dump());
    wire::UpdateSpaceReply reply;
    call("UpdateSpace", &Stub::UpdateSpace, request, reply);
    Oracle::update_space(hp);
  }

  Trial create_trial(const std::string& tuner_id) override {
    wire::CreateTrialRequest request;
    request.set_tuner_id(options_.tuner_id);
    wire::CreateTrialReply reply;
    call("CreateTrial", &Stub::CreateTrial, request, reply);
    Trial t;
    t.status = parse_status(reply.status(), "CreateTrial reply");
    if (t.status == TrialStatus::stopped) over_ = true;
    if (t.status == TrialStatus::running) {
      t = Trial::from_json(parse_json(reply.trial_json(), "CreateTrial reply"),
                           "CreateTrial reply");
      std::lock_guard lock(mu_);
      trial_id_ = t.trial_id;
      heartbeat_every_ = seconds(std::max(0.05, reply.lease_seconds() / 4));
      cv_.notify_all();
    }
    return t;
  }

  TrialStatus update_trial(const std::string& trial_id, const MetricValues& metrics, int epoch,
                           int execution) override {
    wire::UpdateTrialRequest request;
    request.set_tuner_id(options_.tuner_id);
    request.set_trial_id(trial_id);
    request.set_epoch(epoch);
    request.set_execution(execution);
    for (const auto& [name, value] : metrics) {
      wire::Metric* m = request.add_metrics();
      m->set_name(name);
      m->set_value(value);
    }
    wire::UpdateTrialReply reply;
    call("UpdateTrial", &Stub::UpdateTrial, request, reply);
    return parse_status(reply.status(), "UpdateTrial reply");
  }

  Trial end_trial(const std::string& trial_id, TrialStatus status,
                  const std::string& message) override {
    wire::EndTrialRequest request;
    request.set_tuner_id(options_.tuner_id);
    request.set_trial_id(trial_id);
    request.set_status(status_name(status));
    request.set_message(message);
    wire::EndTrialReply reply;
    {
      std::lock_guard lock(mu_);
      trial_id_.clear();
    }
    call("EndTrial", &Stub::EndTrial, request, reply);
    return Trial::from_json(parse_json(reply.trial_json(), "EndTrial reply"), "EndTrial reply");
  }

  // Once the study is over, the state is final: read once, then kept (the chief may be gone).
  void refresh() override {
    if (over_ && read_final_) return;
    wire::GetStateRequest request;
    request.set_tuner_id(options_.tuner_id);
    wire::GetStateReply reply;
    call("GetState", &Stub::GetState, request, reply);
    set_state(parse_json(reply.state_json(), "GetState reply"));
    take_requeued();  // the chief hands those out, not this copy
    read_final_ = over_;
  }

 protected:
  Proposal populate_space(const std::string&) override {
    OSPREY_THROW(InternalError, "a tuner worker's oracle proposes nothing: the chief does");
  }

 private:
  using Stub = wire::OracleService::Stub;

  // One call, retried while the chief is unreachable (down, restarting) for up to
  // reconnect_seconds; FAILED_PRECONDITION is TrialLost, any other failure the matching error.
  template <class Request, class Reply>
  void call(const char* name,
            grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Reply*),
            const Request& request, Reply& reply) {
    const auto give_up = Clock::now() + seconds(options_.reconnect_seconds);
    auto backoff = std::chrono::milliseconds(100);
    bool warned = false;
    while (true) {
      grpc::ClientContext context;
      rpc::prepare(
          context, options_.token,
          std::chrono::milliseconds(static_cast<int64_t>(options_.call_timeout_seconds * 1000)));
      std::shared_ptr<Stub> stub = current_stub();
      const grpc::Status s = (stub.get()->*method)(&context, request, &reply);
      if (s.ok()) {
        if (warned)
          fmt::print(stderr, "{}: the oracle at {} is back\n", options_.tuner_id, options_.address);
        return;
      }
      if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
        throw TrialLost(fmt::format("{}: {}", name, s.error_message()));
      if (!rpc::is_transient(s) || Clock::now() + backoff > give_up) {
        rpc::throw_status(
            s, fmt::format("{} to the oracle at {}{}", name, options_.address,
                           rpc::is_transient(s)
                               ? fmt::format(" (retried for {:g} s)", options_.reconnect_seconds)
                               : ""));
      }
      if (!warned) {
        fmt::print(stderr, "{}: the oracle at {} is unreachable ({}); retrying for up to {:g} s\n",
                   options_.tuner_id, options_.address, rpc::code_name(s.error_code()),
                   options_.reconnect_seconds);
        std::fflush(stderr);
        warned = true;
      }
      std::this_thread::sleep_for(backoff);
      // A fresh channel: one that failed to connect waits out gRPC's own backoff and DNS
      // re-resolution (seconds, measured) before it tries again; a new one connects at once.
      if (rpc::is_transient(s)) {
        std::lock_guard lock(mu_);
        stub_ = new_stub();
      }
      // Short: a chief coming back is answered within half a second (gRPC's own reconnect
      // backoff is capped at a second too, rpc::make_channel).
      backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
    }
  }

  // Keeps the running trial's lease while the tuner trains (a single attempt each time: a
  // missed beat is made up by the next one, well within the lease).
  void heartbeat_loop() {
    std::unique_lock lock(mu_);
    while (!quit_) {
      cv_.wait_for(lock, heartbeat_every_);
      if (quit_ || trial_id_.empty()) continue;
      wire::HeartbeatRequest request;
      request.set_tuner_id(options_.tuner_id);
      request.set_trial_id(trial_id_);
      const std::shared_ptr<Stub> stub = stub_;
      const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(heartbeat_every_);
      lock.unlock();
      wire::HeartbeatReply reply;
      grpc::ClientContext context;
      rpc::prepare(context, options_.token, timeout);
      (void)stub->Heartbeat(&context, request, &reply);
      lock.lock();
    }
  }

  std::unique_ptr<Oracle> local_;
  OracleClientOptions options_;
  std::shared_ptr<Stub> new_stub() const {
    return wire::OracleService::NewStub(
        rpc::make_channel(options_.address, options_.max_message_bytes));
  }
  std::shared_ptr<Stub> current_stub() {
    std::lock_guard lock(mu_);
    return stub_;
  }

  std::shared_ptr<Stub> stub_;  // under mu_: replaced when the chief is unreachable
  std::mutex mu_;
  std::condition_variable cv_;
  std::string trial_id_;  // the trial being trained: heartbeats keep its lease
  Clock::duration heartbeat_every_ = std::chrono::seconds(1);
  bool quit_ = false;
  bool over_ = false;        // the chief said the study is over
  bool read_final_ = false;  // ... and its final state was read since
  std::thread heartbeat_;
};

}  // namespace

std::unique_ptr<Oracle> connect_oracle(std::unique_ptr<Oracle> local, OracleClientOptions options) {
  OSPREY_CHECK(local != nullptr, "connect_oracle: no oracle given");
  return std::make_unique<RemoteOracle>(std::move(local), std::move(options));
}

}  // namespace osprey::tune
