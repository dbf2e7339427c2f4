// ps.proto's Worker service as a parameter-server worker serves it during fit: RunStep (a share of
// a step from the chief, its x and y on the wire), Ping and EndFit, with any bytes (fuzz_rpc.h
// says how an input becomes calls). The worker is a real ParameterServerStrategy task in this
// process, its fit running on a thread, with its parameter server beside it on loopback, so a
// step that passes the checks is trained: pulled, run, pushed.
//
// EndFit ends the worker's fit, as the chief's would; the steps after it in the same input are
// then refused with UNAVAILABLE (not in fit), which the chief reads as "try another worker". The
// next input finds a fresh worker in fit. UNAVAILABLE at any other time is a finding.
#include <google/protobuf/stubs/logging.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "fuzz_rpc.h"
#include "fuzz_target.h"
#include "osprey/comm/rpc/rpc.h"
#include "osprey/comm/tcp_store.h"
#include "osprey/distribute/ps/internal/ps_client.h"
#include "osprey/distribute/ps/parameter_server_strategy.h"
#include "osprey/distribute/ps/ps.grpc.pb.h"
#include "osprey/distribute/ps/ps_server.h"
#include "osprey/distribute/ps/variable_sharding.h"
#include "osprey/nn/layers/all.h"
#include "osprey/nn/name_scope.h"
#include "osprey/optim/factory.h"
#include "osprey/tensor/factory.h"
#include "osprey/train/model.h"

namespace {

using namespace osprey;
using namespace osprey::distribute;
using osprey::fuzz::parses_as;

constexpr osprey::fuzz::Method kMethods[] = {
    {"/osprey.distribute.ps.Worker/RunStep", parses_as<ps::StepRequest>},
    {"/osprey.distribute.ps.Worker/Ping", parses_as<ps::PingRequest>},
    {"/osprey.distribute.ps.Worker/EndFit", parses_as<ps::EndFitRequest>}};
constexpr size_t kEndFit = 2;

std::string free_loopback_address() {
  return "127.0.0.1:" + std::to_string(comm::free_loopback_port());
}

// One worker task in fit and its ps. The model is the distribution tests' MLP (5 inputs, 3
// outputs); its variables are registered on the ps first, as the chief would.
class Worker {
 public:
  Worker()
      : ps_(std::make_unique<ps::PsServer>(
            ps::PsServerOptions{.listen = "127.0.0.1:0",
                                .max_message_bytes = osprey::fuzz::kFuzzMaxMessageBytes,
                                .name = "fuzz ps"})),
        address_(free_loopback_address()) {
    // The chief's address is never listened on, so two picks of a free port can return the same
    // one (the CI fuzz pass drew it); the cluster spec refuses a repeated address.
    std::string chief = free_loopback_address();
    while (chief == address_) chief = free_loopback_address();
    const nlohmann::json config = {
        {"cluster", {{"chief", {chief}}, {"worker", {address_}}, {"ps", {ps_->address()}}}},
        {"task", {{"type", "worker"}, {"index", 0}}}};
    ParameterServerOptions options;
    options.timeout = std::chrono::seconds(30);
    options.max_message_bytes = osprey::fuzz::kFuzzMaxMessageBytes;
    auto strategy = std::make_shared<ParameterServerStrategy>(
        options, ClusterResolver::from_json(config.dump(), "fuzz TF_CONFIG"));
    nn::clear_session();
    model_ = std::make_unique<Model>(
        Sequential({layers::Dense(16, "relu"), layers::Dense(8, "tanh"), layers::Dense(3)},
                   {.input_shape = {5}}));
    model_->compile("sgd", "mse", {}, {.strategy = strategy});
    register_variables();
    channel_ = comm::rpc::make_channel(address_, osprey::fuzz::kFuzzMaxMessageBytes);
    fit_ = std::thread([this] {
      const Tensor x = random_normal({16, 5}, {.seed = 1});
      const Tensor y = random_normal({16, 3}, {.seed = 2});
      try {
        model_->fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
      } catch (const Error&) {
        // EndFit with an error ends the worker's fit with that error, as the chief's failure.
      }
      done_ = true;
    });
    wait_in_fit();
  }
  ~Worker() {
    if (!done_) end_fit();
    fit_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  bool done() const { return done_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  // What the chief does before its first step: the model's variables registered on the ps (the
  // worker only binds to them).
  void register_variables() {
    std::vector<autograd::Variable> trainable = model_->network().trainable_variables();
    std::vector<std::pair<std::string, Shape>> vars;
    vars.reserve(trainable.size());
    for (const autograd::Variable& v : trainable) vars.emplace_back(v.name(), v.value().shape());
    ps::PsClient chief(
        {.addresses = {ps_->address()}, .max_message_bytes = osprey::fuzz::kFuzzMaxMessageBytes});
    chief.bind(ps::plan_sharding(vars, 1), std::move(trainable), {});
    chief.register_model({.optimizer = optim::serialize(*optim::get("sgd")).dump(),
                          .mode = "sync",
                          .replicas_to_aggregate = 1,
                          .total_replicas = 1,
                          .staleness = {}},
                         /*overwrite=*/true);
  }

  void wait_in_fit() {
    auto stub = ps::Worker::NewStub(channel_);
    for (int i = 0; i < 10000 && !done_; ++i) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      ps::PingReply reply;
      if (stub->Ping(&context, ps::PingRequest(), &reply).ok() && reply.in_fit()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::fprintf(stderr, "fuzz_worker_service: the worker's fit never started serving\n");
    std::abort();
  }
  void end_fit() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    ps::EndFitReply reply;
    (void)ps::Worker::NewStub(channel_)->EndFit(&context, ps::EndFitRequest(), &reply);
  }

  std::unique_ptr<ps::PsServer> ps_;
  std::string address_;
  std::unique_ptr<Model> model_;
  std::shared_ptr<grpc::Channel> channel_;
  std::atomic<bool> done_{false};
  std::thread fit_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<Worker> worker;
  // A worker is replaced once an input ended its fit (below), and after 2,000 inputs, so that
  // nothing grows over a long run.
  static int inputs = 0;
  if (worker == nullptr || worker->done() || ++inputs >= 2000) {  // done: an idle timeout
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in string fields is logged
    worker.reset();
    worker = std::make_unique<Worker>();
    inputs = 0;
  }
  bool ended = false;
  for (const osprey::fuzz::RawCall& c : osprey::fuzz::split_calls(data, size, 3, 8)) {
    const osprey::fuzz::Method& m = kMethods[c.method];
    osprey::fuzz::call_and_check(worker->channel(), m.name, c.payload, m.parses(c.payload),
                                 /*unavailable_ok=*/ended);
    ended = ended || c.method == kEndFit;
  }
  // Its fit is ending (the serve loop notices within 200 ms): the next input gets a fresh worker,
  // not one that may still say it is in fit.
  if (ended) worker.reset();
  return 0;
}
