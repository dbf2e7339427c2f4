// Strategy: the one narrow interface through which the training loop talks to distribution
// (DESIGN.md). The trainer knows how to run forward, loss and backward on a network; a
// strategy decides on which replicas that runs, how the global batch is shared among them, how
// their gradients are reduced and how the update is applied. train/ knows only this file;
// distribute/ implements every strategy on top of it (OneDevice, Mirrored, CentralStorage,
// MultiWorkerMirrored, ParameterServer, ModelParallel, PipelineParallel).
//   auto exec = strategy.make_executor(network, optimizer);       // once per compiled model
//   exec->train_step(x, y, [&](models::Network& net, auto& vars, const Tensor& xr, const Tensor&
//   yr) {
//     ... forward on net, loss, zero vars' gradients, backward; return {loss, y_pred};
//   });                                                            // reduced and applied
// Without a strategy the trainer uses single_device_strategy(): the step runs as before.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "osprey/autograd/variable.h"
#include "osprey/models/network.h"
#include "osprey/optim/optimizer.h"
#include "osprey/train/logs.h"

namespace osprey::train {

// What one replica's step returns: its mean loss, its predictions and its share of the targets
// (the trainer updates the metrics with them, replica by replica, on its own thread).
struct ReplicaOutput {
  double loss = 0.0;
  Tensor y_pred;
  Tensor y;
  Tensor mask;  // y_pred's (Variable::mask()): the metrics count only its real steps
};

// One replica's forward and backward: run `network` on (x, y), zero the gradients of
// `trainable` (that network's trainable variables; empty before the network is built), and
// backpropagate, leaving each variable's gradient in grad(). It must not update any weight.
using ReplicaStep = std::function<ReplicaOutput(models::Network& network,
                                                const std::vector<autograd::Variable>& trainable,
                                                const Tensor& x, const Tensor& y)>;

// One replica's inference (evaluate, predict): `network` on (x, y) with no gradient recorded (y
// may be undefined); returns the loss (when y is given) and the predictions.
using ReplicaForward =
    std::function<ReplicaOutput(models::Network& network, const Tensor& x, const Tensor& y)>;

// A strategy's state for one compiled model: its replicas, their optimizers, the communicator.
class StepExecutor {
 public:
  virtual ~StepExecutor() = default;
  // Runs step on every replica's share of the global batch (x, y), reduces the gradients and
  // applies one update; returns the replicas' outputs in replica order.
  virtual std::vector<ReplicaOutput> train_step(const Tensor& x, const Tensor& y,
                                                const ReplicaStep& step) = 0;
  // Runs forward on every replica's share of (x, y), split in order as evenly as possible (the
  // batch need not divide; replicas with no rows are skipped); outputs in replica order, so
  // concatenating their predictions gives the batch's.
  virtual std::vector<ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                                 const ReplicaForward& forward) = 0;
  // Copies the primary network's weights into every replica (fit, evaluate and predict call it
  // first, so weights set or loaded in between reach the replicas).
  virtual void sync_replicas() {}

  // The hooks of strategies whose steps run elsewhere (ParameterServerStrategy: a coordinator
  // sends steps to worker processes, parameter servers hold the weights).
  // On a process that serves another's steps (a ps worker task), fit calls serve_steps instead of
  // running its own loop: it runs `step` on what arrives until the coordinator's fit ends, and
  // returns true. Every other executor returns false and fit runs as usual.
  virtual bool serve_steps(const ReplicaStep& step) { return false; }
  // At the end of each epoch, before the epoch's logs are read: waits for the steps still in
  // flight and returns their outputs (to count in the epoch's metrics), and brings the primary
  // network's weights up to date, so callbacks, validation and save see the trained model.
  virtual std::vector<ReplicaOutput> finish_epoch() { return {}; }
  // At the end of fit; `error` is empty when it ended normally, else what ended it.
  virtual void end_fit(const std::string& error) {}
  // Adds what the strategy reports per step to fit's logs (e.g. a parameter server's
  // aggregated and dropped gradients).
  virtual void add_logs(Logs& logs) const {}
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;  // "OneDevice", "MirroredStrategy", ...
  // Name and devices, "MirroredStrategy(cpu:0, cpu:1)", for messages. It does not identify the
  // strategy: two with other options (say bucket sizes) describe themselves alike.
  virtual std::string describe() const { return name(); }
  // What identifies the strategy: a number given at construction, unique in the process. Copies
  // keep it (scope() opens a copy; a copy is the same strategy, an immutable description).
  uint64_t id() const noexcept { return id_; }
  // describe() and id(), "MirroredStrategy(cpu:0, cpu:1) #3": what the weights created under its
  // scope record (autograd/creation_scope.h). It ends in the id, so equal labels mean the same
  // strategy, and messages about mixing strategies tell two alike-described ones apart.
  std::string scope_label() const;
  virtual int num_replicas_in_sync() const = 0;
  // The processes training together (MultiWorkerMirroredStrategy's workers) and this one's rank
  // among them; 1 and 0 for in-process strategies. Files are written on the chief (rank 0): the
  // others write to a temporary folder that is removed (Model::save, BackupAndRestore).
  virtual int num_workers() const noexcept { return 1; }
  virtual int worker_rank() const noexcept { return 0; }
  bool is_chief() const noexcept { return worker_rank() == 0; }
  // For the profiler (train/callbacks/profiler.h); collectives over the workers, called by every
  // worker between steps. This worker's steady-clock offset to the chief's (trace::now_us), and
  // every worker's text gathered on the chief in rank order (empty elsewhere). One process:
  // no offset, and its own text.
  struct TraceClockOffset {
    int64_t offset_us = 0;
    double uncertainty_us = 0;
  };
  virtual TraceClockOffset trace_clock_offset() const { return {}; }
  virtual std::vector<std::string> gather_on_chief(const std::string& text) const { return {text}; }
  // The executor of one model: `network` is the primary copy (the one predict, save and
  // get_weights see), `optimizer` the compiled optimizer.
  virtual std::unique_ptr<StepExecutor> make_executor(
      std::shared_ptr<models::Network> network,
      std::shared_ptr<optim::Optimizer> optimizer) const = 0;

 protected:
  Strategy() noexcept;  // a new id
  Strategy(const Strategy&) = default;
  Strategy& operator=(const Strategy&) = default;

 private:
  uint64_t id_;
};

// One replica on the default device: the step, then optimizer.apply(); what fit always did.
std::shared_ptr<const Strategy> single_device_strategy();

// The strategy whose scope is open on this thread (distribute's scope() guards set it), else
// the process-wide one (Keras 3's set_distribution), else null.
// compile() binds the model to it; fit/evaluate/predict later use that one, in scope or not.
std::shared_ptr<const Strategy> current_strategy();
// Sets the thread's current strategy and returns the previous one (for RAII guards). Also makes
// its scope_label() the thread's variable creation scope (autograd/creation_scope.h).
std::shared_ptr<const Strategy> exchange_current_strategy(std::shared_ptr<const Strategy> strategy);
// scope_label() of the strategy whose scope is open on this thread; empty when none is (the
// process-wide default does not count: it opens no scope).
const std::string& scope_strategy_label() noexcept;
// The process-wide default (null: none); set it before compiling, not while models train.
void set_global_strategy(std::shared_ptr<const Strategy> strategy);
std::shared_ptr<const Strategy> global_strategy();

}  // namespace osprey::train
