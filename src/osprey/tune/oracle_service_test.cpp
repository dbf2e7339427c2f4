// The oracle service on loopback, in one process: workers (RemoteOracle clients on threads)
// against an OracleServer. A study ends with the requested trials and no duplicates; a silent
// worker's trial goes back in line with its records and its old holder is refused; a worker that
// asks while holding a trial gets it back; the chief restarts from its directory while a worker
// keeps reporting; tokens, malformed and oversized requests get their statuses.
#include "osprey/tune/oracle_service.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "osprey/comm/rpc/rpc.h"
#include "osprey/io/temporary_directory.h"
#include "osprey/tune/oracle.grpc.pb.h"
#include "osprey/tune/random_search.h"

namespace osprey::tune {
namespace {

HyperParameters space_xy() {
  HyperParameters hp;
  hp.Int("x", 0, 50);
  hp.Int("y", 0, 50);
  return hp;
}

OracleOptions study_options(int max_trials) {
  return {
      .objective = "val_loss", .max_trials = max_trials, .seed = 11, .hyperparameters = space_xy()};
}

std::unique_ptr<Oracle> worker(const OracleServer& server, const std::string& id,
                               const std::string& token = "") {
  return connect_oracle(std::make_unique<RandomSearchOracle>(study_options(1)),
                        {.address = server.address(),
                         .tuner_id = id,
                         .token = token,
                         .call_timeout_seconds = 5,
                         .reconnect_seconds = 10});
}

double loss_of(const Trial& t) {
  const double x = static_cast<double>(t.hyperparameters.get("x").as_int());
  const double y = static_cast<double>(t.hyperparameters.get("y").as_int());
  return (x - 20) * (x - 20) + (y - 30) * (y - 30);
}

// Runs trials until the oracle says stop: what a tuner worker does, without a model.
int run_worker(Oracle& oracle) {
  int done = 0;
  while (true) {
    const Trial t = oracle.create_trial("ignored: the client sends its own id");
    if (t.status == TrialStatus::stopped) return done;
    if (t.status == TrialStatus::idle) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (int e = 0; e < 2; ++e)
      oracle.update_trial(t.trial_id, {{"val_loss", loss_of(t) + 1 - e}}, e);
    oracle.end_trial(t.trial_id, TrialStatus::completed);
    ++done;
  }
}

TEST(OracleServiceTest, TwoWorkersRunTheRequestedTrialsWithoutDuplicates) {
  RandomSearchOracle chief(study_options(12));
  OracleServer server(chief, {.lease_seconds = 5, .verbose = false});
  auto w0 = worker(server, "tuner0");
  auto w1 = worker(server, "tuner1");
  int n0 = 0, n1 = 0;
  std::thread t0([&] { n0 = run_worker(*w0); });
  std::thread t1([&] { n1 = run_worker(*w1); });
  t0.join();
  t1.join();
  server.wait_until_done();
  EXPECT_EQ(n0 + n1, 12);
  std::unique_lock lock(server.mutex());
  std::set<std::string> values;
  for (const Trial& t : chief.trials()) {
    EXPECT_EQ(t.status, TrialStatus::completed) << t.trial_id;
    EXPECT_EQ(*t.score, loss_of(t)) << t.trial_id;
    values.insert(t.hyperparameters.to_json().at("values").dump());
  }
  EXPECT_EQ(values.size(), 12u);
  const std::string best_id = chief.get_best_trials(1)[0].trial_id;
  lock.unlock();
  // A worker's read-only view is the chief's state.
  w0->refresh();
  ASSERT_EQ(w0->trials().size(), 12u);
  EXPECT_EQ(w0->get_best_trials(1)[0].trial_id, best_id);
}

TEST(OracleServiceTest, ASilentWorkersTrialGoesBackInLineWithItsRecords) {
  RandomSearchOracle chief(study_options(2));
  OracleServer server(chief, {.lease_seconds = 0.3, .verbose = false});
  std::string lost_id;
  {
    auto dying = worker(server, "tuner0");
    const Trial t = dying->create_trial("");
    dying->update_trial(t.trial_id, {{"val_loss", 7.0}}, 0);
    lost_id = t.trial_id;
  }  // its heartbeats stop here: the process "died"
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  auto other = worker(server, "tuner1");
  const Trial resumed = other->create_trial("");
  EXPECT_EQ(resumed.trial_id, lost_id);
  ASSERT_EQ(resumed.executions.size(), 1u);
  EXPECT_EQ(resumed.executions[0][0].metrics[0].second, 7.0);
  // The old holder, back from the dead with its id, is refused for that trial.
  auto zombie = worker(server, "tuner0");
  try {
    zombie->update_trial(lost_id, {{"val_loss", 1.0}}, 1);
    FAIL() << "a lost trial accepted a report";
  } catch (const TrialLost& e) {
    EXPECT_NE(
        std::string(e.what()).find("is not held by tuner0: its lease ran out (no heartbeat "
                                   "for 0.3 s) and it went back in line; tuner1 holds it now"),
        std::string::npos)
        << e.what();
  }
  // A tuner that never held the trial is told so, not that a lease of its own ran out.
  auto stranger = worker(server, "tuner2");
  try {
    stranger->update_trial(lost_id, {{"val_loss", 1.0}}, 1);
    FAIL() << "a trial accepted a report from a tuner it was never given to";
  } catch (const TrialLost& e) {
    const std::string expected =
        "trial " + lost_id + " was never given to tuner2; tuner1 holds it now";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  other->update_trial(lost_id, {{"val_loss", 3.0}}, 1);
  const Trial ended = other->end_trial(lost_id, TrialStatus::completed, "");
  EXPECT_EQ(*ended.score, 3.0);
}

TEST(OracleServiceTest, AWorkerAskingWhileHoldingATrialGetsItBack) {
  RandomSearchOracle chief(study_options(3));
  OracleServer server(chief, {.lease_seconds = 30, .verbose = false});
  auto w = worker(server, "tuner0");
  const Trial first = w->create_trial("");
  auto restarted = worker(server, "tuner0");  // the same worker, restarted by its launcher
  const Trial again = restarted->create_trial("");
  EXPECT_EQ(again.trial_id, first.trial_id);
  {
    std::lock_guard lock(server.mutex());  // the server's threads use the oracle too
    EXPECT_EQ(chief.trials().size(), 1u);
  }
  // While a trial runs, a finished study answers idle, not stopped: that trial may come back.
  auto other = worker(server, "tuner1");
  for (int i = 0; i < 2; ++i) {
    const Trial t = other->create_trial("");
    other->update_trial(t.trial_id, {{"val_loss", 1.0}}, 0);
    other->end_trial(t.trial_id, TrialStatus::completed, "");
  }
  EXPECT_EQ(other->create_trial("").status, TrialStatus::idle);
  restarted->update_trial(first.trial_id, {{"val_loss", 2.0}}, 0);
  restarted->end_trial(first.trial_id, TrialStatus::completed, "");
  // A retried EndTrial (its reply lost) gets the ended trial, not an error.
  EXPECT_EQ(restarted->end_trial(first.trial_id, TrialStatus::completed, "").score, 2.0);
  EXPECT_EQ(other->create_trial("").status, TrialStatus::stopped);
}

TEST(OracleServiceTest, TheChiefRestartsFromItsDirectoryWhileAWorkerReports) {
  io::TemporaryDirectory dir("osprey-oracle-restart");
  auto chief = std::make_unique<RandomSearchOracle>(study_options(2));
  chief->set_directory(dir.path());
  auto server = std::make_unique<OracleServer>(
      *chief, OracleServiceOptions{.listen = "127.0.0.1:0", .lease_seconds = 5, .verbose = false});
  const std::string address = server->address();
  auto w = worker(*server, "tuner0");
  const Trial t = w->create_trial("");
  w->update_trial(t.trial_id, {{"val_loss", 5.0}}, 0);
  // The chief dies mid-trial and comes back a moment later on the same address.
  server.reset();
  chief.reset();
  std::thread restart([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    chief = std::make_unique<RandomSearchOracle>(study_options(2));
    chief->set_directory(dir.path());
    ASSERT_TRUE(chief->reload());
    server = std::make_unique<OracleServer>(
        *chief, OracleServiceOptions{.listen = address, .lease_seconds = 5, .verbose = false});
  });
  // Retried until the chief is back; the trial stayed leased to whoever reports for it.
  w->update_trial(t.trial_id, {{"val_loss", 4.0}}, 1);
  restart.join();
  const Trial ended = w->end_trial(t.trial_id, TrialStatus::completed, "");
  EXPECT_EQ(*ended.score, 4.0);
  EXPECT_EQ(run_worker(*w), 1);
  std::lock_guard lock(server->mutex());
  EXPECT_EQ(chief->get_best_trials(2).size(), 2u);
}

TEST(OracleServiceTest, TokensAreChecked) {
  RandomSearchOracle chief(study_options(2));
  OracleServer server(chief, {.token = "s3cret", .lease_seconds = 5, .verbose = false});
  try {
    worker(server, "tuner0")->create_trial("");
    FAIL() << "a call without the token was served";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "UNAUTHENTICATED: missing token: this server requires OSPREY_ORACLE_TOKEN"),
              std::string::npos)
        << e.what();
  }
  try {
    worker(server, "tuner0", "wrong")->create_trial("");
    FAIL() << "a call with a wrong token was served";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("UNAUTHENTICATED: wrong token"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(worker(server, "tuner0", "s3cret")->create_trial("").status, TrialStatus::running);
}

TEST(OracleServiceTest, MalformedAndOversizedRequestsAreRefused) {
  RandomSearchOracle chief(study_options(2));
  OracleServer server(chief, {.max_message_bytes = 4096, .lease_seconds = 5, .verbose = false});
  auto stub = wire::OracleService::NewStub(comm::rpc::make_channel(server.address(), 1 << 20));
  auto send_space = [&](const std::string& json) {
    wire::UpdateSpaceRequest request;
    request.set_tuner_id("tuner0");
    request.set_hyperparameters_json(json);
    wire::UpdateSpaceReply reply;
    grpc::ClientContext context;
    return stub->UpdateSpace(&context, request, &reply);
  };
  grpc::Status s = send_space("{not json");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("UpdateSpace from tuner0: malformed JSON"), std::string::npos)
      << s.error_message();
  s = send_space(std::string(8192, ' '));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  {
    wire::UpdateTrialRequest request;
    request.set_tuner_id("tuner0");
    request.set_trial_id("9999");
    wire::UpdateTrialReply reply;
    grpc::ClientContext context;
    s = stub->UpdateTrial(&context, request, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "RandomSearch: no trial '9999' (0 trials)");
  }
  {
    wire::CreateTrialRequest request;  // no tuner id
    wire::CreateTrialReply reply;
    grpc::ClientContext context;
    s = stub->CreateTrial(&context, request, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "CreateTrial: tuner_id must be 1-256 characters, got 0");
  }
  // Nothing of the above changed the study.
  std::lock_guard lock(server.mutex());
  EXPECT_TRUE(chief.trials().empty());
}

TEST(TunerRoleTest, ReadsOspreyAndKerasTunerNames) {
  auto clear = [] {
    for (const char* v : {"OSPREY_TUNER_ID", "OSPREY_ORACLE_IP", "OSPREY_ORACLE_PORT",
                          "KERASTUNER_TUNER_ID", "KERASTUNER_ORACLE_IP", "KERASTUNER_ORACLE_PORT"})
      unsetenv(v);
  };
  clear();
  EXPECT_FALSE(tuner_role_from_env().distributed());
  setenv("KERASTUNER_TUNER_ID", "chief", 1);
  setenv("KERASTUNER_ORACLE_IP", "127.0.0.1", 1);
  setenv("KERASTUNER_ORACLE_PORT", "8000", 1);
  TunerRole r = tuner_role_from_env();
  EXPECT_TRUE(r.is_chief());
  EXPECT_EQ(r.oracle_address, "127.0.0.1:8000");
  setenv("OSPREY_TUNER_ID", "tuner3", 1);  // the osprey name wins
  EXPECT_TRUE(tuner_role_from_env().is_worker());
  setenv("OSPREY_ORACLE_PORT", "80000", 1);
  try {
    tuner_role_from_env();
    FAIL() << "accepted port 80000";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "distributed tuning: OSPREY_ORACLE_PORT must be a port number in 1-65535. "
                 "Received: '80000'");
  }
  clear();
  setenv("OSPREY_ORACLE_IP", "127.0.0.1", 1);
  try {
    tuner_role_from_env();
    FAIL() << "accepted an IP without a port";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "distributed tuning: OSPREY_ORACLE_IP is set but OSPREY_ORACLE_PORT is not; set "
                 "both (the chief's address) or neither");
  }
  clear();
}

}  // namespace
}  // namespace osprey::tune
