#include "osprey/distribute/pipeline/pipeline_executor.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "osprey/autograd/grad_mode.h"
#include "osprey/autograd/ops.h"
#include "osprey/comm/in_process.h"
#include "osprey/core/error.h"
#include "osprey/distribute/batch_split.h"
#include "osprey/distribute/data_parallel/communicator_replica_context.h"
#include "osprey/distribute/data_parallel/replicas.h"
#include "osprey/distribute/model_parallel/tensor_broadcast.h"
#include "osprey/nn/seed_states.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey::distribute {

namespace {

using autograd::Variable;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A stage: some consecutive layers of a Sequential, run in order. The layers stay where they are
// (their model keeps them and their paths); the stage only calls them. The last stage is handed
// to the trainer's step as its network: `input` then stands for the stage's input, a leaf whose
// gradient is what the previous stage needs.
class StageNetwork final : public models::Network {
 public:
  explicit StageNetwork(std::vector<std::shared_ptr<nn::Layer>> layers)
      : Network("PipelineStage", {.name = "pipeline_stage"}), layers_(std::move(layers)) {}
  std::vector<std::shared_ptr<nn::Layer>> layers() const override { return layers_; }
  std::vector<Variable> call_all(const std::vector<Variable>& inputs, bool training) override {
    if (output.defined()) return {output};
    Variable h = input.defined() ? input : inputs.at(0);
    for (const auto& layer : layers_) h = (*layer)(h, training);
    return {h};
  }
  std::vector<LayerRow> summary_rows() const override { return {}; }
  Variable input;
  // When set, the stage's output, computed earlier (the last stage's forward in its F slot); the
  // trainer's step then only adds the loss and runs backward through it.
  Variable output;

 private:
  std::vector<std::shared_ptr<nn::Layer>> layers_;
};

class PipelineExecutor final : public train::StepExecutor {
 public:
  PipelineExecutor(std::shared_ptr<models::Network> network,
                   std::shared_ptr<optim::Optimizer> optimizer, PipelineOptions options,
                   std::shared_ptr<PipelineParallel::Shared> shared,
                   std::shared_ptr<WorkerGroup> group)
      : o_(std::move(options)),
        shared_(std::move(shared)),
        group_(std::move(group)),
        primary_(network),
        optimizer_(std::move(optimizer)),
        replicas_(std::move(network), o_.replicas, "PipelineParallel", o_.threads_per_stage),
        workers_(group_ ? 1 : o_.replicas * o_.stages, o_.threads_per_stage) {
    std::vector<comm::InProcessGroup*> groups;
    if (group_) {
      // One stage per worker (the strategy checked stages == workers, one pipeline).
      link_ = group_->make_communicator("pipeline");
      abort_ = std::make_unique<CollectiveAbort>(groups);
      return;
    }
    for (int r = 0; r < o_.replicas; ++r) {
      links_.push_back(std::make_unique<comm::InProcessGroup>(o_.stages));
      groups.push_back(links_.back().get());
    }
    for (int s = 0; s < o_.stages && o_.replicas > 1; ++s) {
      stage_groups_.push_back(std::make_unique<comm::InProcessGroup>(o_.replicas));
      groups.push_back(stage_groups_.back().get());
    }
    abort_ = std::make_unique<CollectiveAbort>(groups);
  }

  std::vector<train::ReplicaOutput> train_step(const Tensor& x, const Tensor& y,
                                               const train::ReplicaStep& step) override {
    const int p = o_.stages, m = o_.micro_batches, n = o_.replicas;
    const Shards shares = split_batch(x, y, n, "PipelineParallel");
    std::vector<Shards> micro;
    micro.reserve(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      micro.push_back(split_batch(shares.x[static_cast<size_t>(r)],
                                  shares.y[static_cast<size_t>(r)], m,
                                  "PipelineParallel (micro-batches)"));
    }
    if (stages_.empty()) create(shares.x, micro[0].x[0]);
    // Callbacks change the compiled optimizer's rate between steps; every replica's and (under
    // pipedream) every stage's optimizer follows it: a double and a shared_ptr copied, as in
    // mirrored_executor.cpp.
    for (auto& o : optimizers_) o->set_learning_rate(optimizer_->learning_rate_option());
    for (auto& o : stage_optimizers_) o->set_learning_rate(optimizer_->learning_rate_option());
    const bool pipedream = o_.schedule == PipelineSchedule::pipedream;
    if (!pipedream) {
      for (int r = 0; r < n; ++r)
        for (Variable v : replicas_.trainable(r)) v.zero_grad();
    }
    std::vector<std::vector<train::ReplicaOutput>> outputs(
        static_cast<size_t>(n), std::vector<train::ReplicaOutput>(static_cast<size_t>(m)));
    std::vector<StageRecord> records(static_cast<size_t>(n * p));
    const Clock::time_point start = Clock::now();
    abort_->run(workers_, [&](int w) {
      // Across workers this worker runs one stage: its rank's.
      const int r = group_ ? 0 : w / p, s = group_ ? group_->rank() : w % p;
      run_stage(r, s, micro[static_cast<size_t>(r)], step, outputs[static_cast<size_t>(r)],
                records[static_cast<size_t>(r) * static_cast<size_t>(p) + static_cast<size_t>(s)]);
    });
    const double wall = seconds_since(start);  // the schedule's span, F and B ops only
    if (!pipedream && group_) {
      optimizer_->apply(stage(0, group_->rank()).trainable_variables());
    } else if (!pipedream) {
      for (int r = 0; r < n; ++r)
        optimizers_[static_cast<size_t>(r)]->apply(replicas_.trainable(r));
    }
    if (group_) {
      share_outputs(outputs[0], micro[0]);
      share_records(records);
    }
    record_stats(wall, records);
    std::vector<train::ReplicaOutput> out;
    for (auto& per_replica : outputs)
      for (auto& o : per_replica) out.push_back(std::move(o));
    return out;
  }

  // Inference is not pipelined: each replica runs its whole network on its share.
  std::vector<train::ReplicaOutput> run_forward(const Tensor& x, const Tensor& y,
                                                const train::ReplicaForward& forward) override {
    return replicas_.forward(x, y, forward);
  }

  void sync_replicas() override {
    replicas_.copy_from_primary();
    if (o_.schedule == PipelineSchedule::pipedream && !stage_optimizers_.empty()) {
      for (int r = 0; r < o_.replicas; ++r)
        for (int s = 0; s < o_.stages; ++s) load_stage_state(r, s);
    }
  }

  // PipeDream's stage optimizers hold the slots: the compiled optimizer takes them (replica 0's),
  // so save() writes the state an exact resume needs.
  std::vector<train::ReplicaOutput> finish_epoch() override {
    if (group_ && !stages_.empty()) {
      gather_across_workers();
      return {};
    }
    if (o_.schedule != PipelineSchedule::pipedream || stage_optimizers_.empty()) return {};
    std::vector<std::pair<std::string, Tensor>> state;
    for (int s = 0; s < o_.stages; ++s) {
      for (auto& [key, t] : stage_optimizer(0, s).state()) {
        if (key.ends_with("/iterations") && s > 0) continue;
        state.emplace_back(key, t.clone());
      }
    }
    optimizer_->load_state(state);
    return {};
  }

 private:
  // What one stage thread did in a step.
  struct StageRecord {
    double busy = 0.0;
    int max_live = 0;
    std::vector<PipelineStats::Versions> versions;
    int64_t max_gap = 0;
  };
  // One micro-batch between its F and its B on a stage.
  struct InFlight {
    Variable input{}, output{};
    Tensor input_value{};
    int64_t version = 0;
  };

  optim::Optimizer& stage_optimizer(int r, int s) const {
    return *stage_optimizers_[static_cast<size_t>(r) * static_cast<size_t>(o_.stages) +
                              static_cast<size_t>(s)];
  }
  StageNetwork& stage(int r, int s) const {
    return *stages_[static_cast<size_t>(r)][static_cast<size_t>(s)];
  }
  comm::Communicator& link(int r, int s) const {
    return group_ ? *link_ : links_[static_cast<size_t>(r)]->rank(s);
  }
  // The optimizer that updates stage s (of pipeline 0) on this worker.
  optim::Optimizer& updater(int s) const {
    return o_.schedule == PipelineSchedule::pipedream ? stage_optimizer(0, s) : *optimizer_;
  }

  // Across workers: the last stage's outputs (loss and predictions of every micro-batch) go to
  // every worker, so each one's metrics and logs see the whole batch.
  void share_outputs(std::vector<train::ReplicaOutput>& outputs, const Shards& micro) {
    const int last = o_.stages - 1;
    comm::Communicator& c = *group_->outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      train::ReplicaOutput& o = outputs[i];
      float loss = static_cast<float>(o.loss);
      c.broadcast(&loss, 1, last);
      const Tensor y_pred = broadcast_tensor(c, o.y_pred, last);
      const Tensor mask = broadcast_tensor(c, o.mask, last);
      if (group_->rank() != last)
        o = {loss, y_pred, micro.y[i], mask.defined() ? mask.to(DType::boolean) : mask};
    }
  }

  // Across workers each worker runs one stage, yet stats() describes the whole pipeline on every
  // worker, as its logs do: each stage's record of the step goes to every worker. One all-gather
  // of 5 + 7m floats a step; the gap and versions travel as two floats each (exact below 2^44).
  void share_records(std::vector<StageRecord>& records) const {
    const int p = o_.stages, me = group_->rank();
    const int64_t width = 5 + 7 * int64_t{o_.micro_batches};
    constexpr int kLowBits = 22;
    const auto put = [](float* at, int64_t v) {
      at[0] = static_cast<float>(v >> kLowBits);
      at[1] = static_cast<float>(v & ((int64_t{1} << kLowBits) - 1));
    };
    const auto get = [](const float* at) {
      return (static_cast<int64_t>(at[0]) << kLowBits) + static_cast<int64_t>(at[1]);
    };
    const StageRecord& own = records[static_cast<size_t>(me)];
    OSPREY_ASSERT(static_cast<int64_t>(own.versions.size()) <= o_.micro_batches,
                  "PipelineParallel: stage {} recorded {} versions for {} micro-batches", me,
                  own.versions.size(), o_.micro_batches);
    std::vector<float> mine(static_cast<size_t>(width), 0.0F);
    std::vector<float> all(static_cast<size_t>(width * p));
    mine[0] = static_cast<float>(own.busy);
    mine[1] = static_cast<float>(own.max_live);
    put(&mine[2], own.max_gap);
    mine[4] = static_cast<float>(own.versions.size());
    for (size_t k = 0; k < own.versions.size(); ++k) {
      float* e = &mine[5 + 7 * k];
      e[0] = static_cast<float>(own.versions[k].micro_batch);
      put(e + 1, own.versions[k].forward);
      put(e + 3, own.versions[k].backward);
      put(e + 5, own.versions[k].newest);
    }
    group_->outputs()->all_gather(mine.data(), all.data(), width);
    for (int s = 0; s < p; ++s) {
      if (s == me) continue;
      const float* r = &all[static_cast<size_t>(s * width)];
      StageRecord& rec = records[static_cast<size_t>(s)];
      rec.busy = r[0];
      rec.max_live = static_cast<int>(r[1]);
      rec.max_gap = get(r + 2);
      rec.versions.clear();
      for (int k = 0; k < static_cast<int>(r[4]); ++k) {
        const float* e = r + 5 + 7 * k;
        rec.versions.push_back({s, static_cast<int>(e[0]), get(e + 1), get(e + 3), get(e + 5)});
      }
    }
  }

  // Across workers, at the end of each epoch: every worker's host copy takes each stage's
  // weights from the worker that trains it, and the compiled optimizer every stage's slots, so
  // the chief saves the whole model and state.
  void gather_across_workers() {
    comm::Communicator& c = *group_->outputs();
    const std::vector<std::string> slots = optimizer_->slot_names();
    std::vector<std::pair<std::string, Tensor>> state;
    for (int s = 0; s < o_.stages; ++s) {
      const bool mine = group_->rank() == s;
      std::map<std::string, Tensor> own;
      if (mine) {
        for (auto& [k, t] : updater(s).state()) own.emplace(k, t);
      }
      float iterations = mine ? static_cast<float>(updater(s).iterations()) : 0.0F;
      c.broadcast(&iterations, 1, s);
      if (s == 0) {
        state.emplace_back(
            "optimizer/iterations",
            osprey::from_vector<int64_t>({static_cast<int64_t>(iterations)}, Shape{}));
      }
      for (const Variable& v : stage(0, s).variables()) {
        assign_in_place(v, broadcast_tensor(c, v.value(), s));
        if (!v.requires_grad() || iterations == 0.0F) continue;
        for (const std::string& slot : slots) {
          const std::string key = "optimizer/" + v.name() + "/" + slot;
          auto it = own.find(key);
          float has = mine && it != own.end() ? 1.0F : 0.0F;
          c.broadcast(&has, 1, s);
          if (has == 0.0F) continue;
          state.emplace_back(key, broadcast_tensor(c, mine ? it->second : Tensor(), s));
        }
      }
    }
    optimizer_->load_state(state);
  }

  void create(const std::vector<Tensor>& shares, const Tensor& micro_batch) {
    OSPREY_CHECK(primary_->class_name() == "Sequential",
                 "PipelineParallel: stages are cut from a Sequential model; {} is a {}",
                 primary_->name(), primary_->class_name());
    replicas_.create(shares);
    const auto layers = primary_->layers();
    const int p = o_.stages;
    if (group_) {
      // Every worker starts from the chief's weights.
      for (const Variable& v : primary_->variables()) {
        assign_in_place(v, broadcast_tensor(*group_->outputs(), v.value(), 0));
      }
    }
    std::vector<int> starts = o_.split_points;
    if (starts.empty()) {
      starts = balance_stages(measure_layers(micro_batch), p);
      if (group_) {
        // Workers time layers differently; the chief's split is everyone's.
        std::vector<float> f(starts.begin(), starts.end());
        group_->outputs()->broadcast(f.data(), static_cast<int64_t>(f.size()), 0);
        starts.assign(f.begin(), f.end());
      }
    }
    OSPREY_CHECK(static_cast<int>(starts.size()) == p - 1,
                 "PipelineParallel: {} stages need {} split points. Received: {}", p, p - 1,
                 starts.size());
    for (size_t k = 0; k < starts.size(); ++k) {
      const int prev = k == 0 ? 0 : starts[k - 1];
      OSPREY_CHECK(starts[k] > prev && starts[k] < static_cast<int>(layers.size()),
                   "PipelineParallel: split point {} ({}) must be above {} and below the layer "
                   "count {}: every stage needs a layer",
                   k, starts[k], prev, layers.size());
    }
    split_points_ = starts;
    boundaries_ = boundary_shapes(micro_batch);
    for (int r = 0; r < o_.replicas; ++r) {
      const auto rl = replicas_.network(r).layers();
      std::vector<std::unique_ptr<StageNetwork>> row;
      for (int s = 0; s < p; ++s) {
        const int a = s == 0 ? 0 : starts[static_cast<size_t>(s) - 1];
        const int b = s + 1 < p ? starts[static_cast<size_t>(s)] : static_cast<int>(rl.size());
        row.push_back(std::make_unique<StageNetwork>(
            std::vector<std::shared_ptr<nn::Layer>>(rl.begin() + a, rl.begin() + b)));
      }
      stages_.push_back(std::move(row));
    }
    // The other replicas' optimizers (and pipedream's per-stage ones): the primary's class and
    // options, built once.
    optimizers_.push_back(optimizer_);
    for (int r = 1; r < o_.replicas; ++r) {
      optimizers_.push_back(optimizer_->fresh_copy());
      if (optimizer_->iterations() > 0) optimizers_.back()->load_state(optimizer_->state());
    }
    if (o_.schedule == PipelineSchedule::pipedream) {
      OSPREY_CHECK(optimizer_->scale_loss(1.0) == 1.0,
                   "PipelineParallel: the pipedream schedule updates each stage on its own and "
                   "cannot share a loss scale; use gpipe or 1f1b with a loss-scaled optimizer");
      for (int r = 0; r < o_.replicas; ++r) {
        for (int s = 0; s < p; ++s) {
          stage_optimizers_.push_back(optimizer_->fresh_copy());
          load_stage_state(r, s);
        }
      }
    }
  }

  // A resumed optimizer's slots for this stage's variables reach its own optimizer.
  void load_stage_state(int r, int s) {
    if (optimizer_->iterations() == 0) return;
    std::set<std::string> mine;
    for (const Variable& v : stages_[static_cast<size_t>(r)][static_cast<size_t>(s)]->variables())
      mine.insert(v.name());
    std::vector<std::pair<std::string, Tensor>> state;
    for (auto& [key, t] : optimizer_->state()) {
      const size_t head = key.find('/'), tail = key.rfind('/');
      if (key.ends_with("/iterations") || mine.count(key.substr(head + 1, tail - head - 1)))
        state.emplace_back(key, t);
    }
    stage_optimizer(r, s).load_state(state);
  }

  // Each layer's forward and backward time on one micro-batch (the best of 3 runs), on the
  // compiled network; its gradients and seed streams are left as they were.
  std::vector<double> measure_layers(const Tensor& x) {
    const nn::SeedStates seeds = nn::seed_states(*primary_);
    const auto layers = primary_->layers();
    std::vector<double> costs(layers.size(), 1e30);
    for (int run = 0; run < 3; ++run) {
      Tensor h = x;
      for (size_t l = 0; l < layers.size(); ++l) {
        const Clock::time_point t = Clock::now();
        Variable in(h, is_floating(h.dtype()));
        Variable out = (*layers[l])(in, true);
        if (out.requires_grad()) out.backward(osprey::ones_like(out.value()));
        costs[l] = std::min(costs[l], seconds_since(t));
        h = out.value();
      }
    }
    for (Variable v : primary_->trainable_variables()) v.zero_grad();
    nn::set_seed_states(*primary_, seeds);
    return costs;
  }

  // The shape of what each stage but the last sends, for one micro-batch (row count included).
  std::vector<Shape> boundary_shapes(const Tensor& x) {
    autograd::NoGradGuard no_grad;
    const nn::SeedStates seeds = nn::seed_states(*primary_);
    const auto layers = primary_->layers();
    std::vector<Shape> shapes;
    Variable h(x);
    for (size_t l = 0; l < layers.size(); ++l) {
      h = (*layers[l])(h, false);
      if (std::find(split_points_.begin(), split_points_.end(), static_cast<int>(l) + 1) !=
          split_points_.end())
        shapes.push_back(h.shape());
    }
    nn::set_seed_states(*primary_, seeds);
    return shapes;
  }

  Tensor receive(comm::Communicator& link, const Shape& shape, int source, int tag) {
    Tensor t = Tensor::empty(shape, {DType::float32});
    link.recv(t, source, tag);
    return t;
  }
  static void send(comm::Communicator& link, const Tensor& t, int destination, int tag) {
    link.send(t.to(DType::float32).contiguous(), destination, tag);
  }

  // Stage s of replica r runs its ops for one step.
  void run_stage(int r, int s, const Shards& micro, const train::ReplicaStep& step,
                 std::vector<train::ReplicaOutput>& outputs, StageRecord& record) {
    const int p = o_.stages, m = o_.micro_batches;
    const bool last = s == p - 1, pipedream = o_.schedule == PipelineSchedule::pipedream;
    StageNetwork& net = stage(r, s);
    comm::Communicator& link = this->link(r, s);
    const std::vector<Variable> trainable = net.trainable_variables();
    std::map<int, InFlight> live;
    // PipeDream: the stage's weight versions still needed by a micro-batch in flight.
    std::map<int64_t, std::vector<Tensor>> stash;
    int64_t version = pipedream ? stage_optimizer(r, s).iterations() : 0;
    for (const PipelineOp& op : stage_ops(o_.schedule, s, p, m)) {
      const int i = op.micro_batch;
      if (op.forward) {
        Tensor in = s == 0 ? micro.x[static_cast<size_t>(i)]
                           : receive(link, boundaries_[static_cast<size_t>(s) - 1], s - 1, 2 * i);
        const Clock::time_point t = Clock::now();
        InFlight f{.input_value = in, .version = version};
        if (pipedream && !stash.count(version)) stash.emplace(version, values(trainable));
        if (!last || !pipedream) {
          // PipeDream runs F without a graph: B recomputes it on the stashed version. (Its last
          // stage runs F and B back to back, both in the B slot.)
          std::optional<autograd::NoGradGuard> no_grad;
          if (pipedream) no_grad.emplace();
          f.input = Variable(in, s > 0 && !pipedream);
          f.output = net(f.input, true);
          if (!last) send(link, f.output.value(), s + 1, 2 * i);
        }
        live.emplace(i, std::move(f));
        record.max_live = std::max(record.max_live, static_cast<int>(live.size()));
        record.busy += seconds_since(t);
        continue;
      }
      InFlight& f = live.at(i);
      Tensor g;
      if (!last) g = receive(link, f.output.shape(), s + 1, 2 * i + 1);
      const Clock::time_point t = Clock::now();
      std::vector<Tensor> newest;
      if (pipedream) {
        for (Variable v : trainable) v.zero_grad();
        newest = values(trainable);
        load(trainable, stash.at(f.version));
        record.versions.push_back({s, i, f.version, f.version, version});
        record.max_gap = std::max(record.max_gap, version - f.version);
      }
      Variable input;
      if (last && !pipedream) {
        // The forward ran in the F slot: the step adds the loss and backpropagates through it.
        net.output = f.output;
        outputs[static_cast<size_t>(i)] =
            step(net, {}, f.input_value, micro.y[static_cast<size_t>(i)]);
        net.output = Variable();
        input = f.input;
      } else if (last) {
        net.input = s > 0 ? Variable(f.input_value, true) : Variable();
        outputs[static_cast<size_t>(i)] =
            step(net, {}, f.input_value, micro.y[static_cast<size_t>(i)]);
        input = net.input;
        net.input = Variable();
      } else {
        if (pipedream) {
          f.input = Variable(f.input_value, s > 0);
          f.output = net(f.input, true);
        }
        f.output.backward(g);
        input = f.input;
      }
      if (pipedream) {
        load(trainable, newest);
        finish_update(r, s, trainable);
        ++version;
      }
      record.busy += seconds_since(t);
      if (s > 0) send(link, input.grad(), s - 1, 2 * i + 1);
      live.erase(i);
      if (pipedream) drop_unused(stash, live);
    }
    if (!pipedream) {
      const Clock::time_point t = Clock::now();
      finish_step(r, s, net, trainable);
      record.busy += seconds_since(t);
    }
  }

  static std::vector<Tensor> values(const std::vector<Variable>& vars) {
    std::vector<Tensor> out;
    out.reserve(vars.size());
    for (const Variable& v : vars) out.push_back(v.value().clone());
    return out;
  }
  static void load(const std::vector<Variable>& vars, const std::vector<Tensor>& values) {
    for (size_t k = 0; k < vars.size(); ++k) assign_in_place(vars[k], values[k]);
  }
  // Versions no micro-batch in flight uses any more.
  static void drop_unused(std::map<int64_t, std::vector<Tensor>>& stash,
                          const std::map<int, InFlight>& live) {
    for (auto it = stash.begin(); it != stash.end();) {
      const bool used = std::any_of(live.begin(), live.end(),
                                    [&](const auto& l) { return l.second.version == it->first; });
      it = used ? std::next(it) : stash.erase(it);
    }
  }

  // GPipe and 1F1B, at the end of a step: the gradients summed over the micro-batches become
  // their mean (the batch's mean gradient), earlier stages add their layers' regularization
  // (the last stage's loss included it), and replicated pipelines average each stage's.
  void finish_step(int r, int s, StageNetwork& net, const std::vector<Variable>& trainable) {
    const double scale = 1.0 / o_.micro_batches;
    for (const Variable& v : trainable) {
      if (!v.has_grad()) continue;
      Tensor g = v.grad();
      g.copy_(osprey::mul(g, scale));
    }
    if (s < o_.stages - 1) {
      const auto reg = net.regularization_losses();
      if (!reg.empty()) {
        Variable total = reg[0];
        for (size_t k = 1; k < reg.size(); ++k) total = total + reg[k];
        optimizer_->scale_loss(total).backward();
      }
    }
    average_over_replicas(r, s, trainable);
  }

  // PipeDream, after each micro-batch's backward: the stage's own update.
  void finish_update(int r, int s, const std::vector<Variable>& trainable) {
    average_over_replicas(r, s, trainable);
    stage_optimizer(r, s).apply(trainable);
  }

  void average_over_replicas(int r, int s, const std::vector<Variable>& trainable) {
    if (o_.replicas == 1) return;
    comm::Communicator& c = stage_groups_[static_cast<size_t>(s)]->rank(r);
    for (Variable v : trainable) {
      if (!v.has_grad()) continue;
      Tensor g = v.grad();
      if (!g.is_contiguous() || g.dtype() != DType::float32) {
        g = g.to(DType::float32).clone();
        v.set_grad(g);
      }
      c.all_reduce(g, comm::ReduceOp::mean);
    }
  }

  void record_stats(double wall, const std::vector<StageRecord>& records) {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    PipelineStats& st = shared_->stats;
    const auto p = static_cast<size_t>(o_.stages);
    st.busy_seconds.resize(p, 0.0);
    st.max_live_activations.resize(p, 0);
    ++st.steps;
    st.wall_seconds += wall;
    st.split_points = split_points_;
    st.versions.clear();
    for (size_t w = 0; w < records.size(); ++w) {
      const StageRecord& rec = records[w];
      // The stage's busy time averaged over the replicated pipelines.
      st.busy_seconds[w % p] += rec.busy / o_.replicas;
      st.max_live_activations[w % p] = std::max(st.max_live_activations[w % p], rec.max_live);
      if (w < p) st.versions.insert(st.versions.end(), rec.versions.begin(), rec.versions.end());
      st.max_version_gap = std::max(st.max_version_gap, rec.max_gap);
    }
  }

  PipelineOptions o_;
  std::shared_ptr<PipelineParallel::Shared> shared_;
  std::shared_ptr<WorkerGroup> group_;        // null: every stage in this process
  std::unique_ptr<comm::Communicator> link_;  // across workers: stage s is worker s
  std::shared_ptr<models::Network> primary_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  Replicas replicas_;
  ReplicaWorkers workers_;
  std::vector<std::unique_ptr<comm::InProcessGroup>> links_, stage_groups_;
  std::unique_ptr<CollectiveAbort> abort_;
  std::vector<std::vector<std::unique_ptr<StageNetwork>>> stages_;   // [replica][stage]
  std::vector<std::shared_ptr<optim::Optimizer>> optimizers_;        // per replica
  std::vector<std::shared_ptr<optim::Optimizer>> stage_optimizers_;  // pipedream: [r * p + s]
  std::vector<int> split_points_;
  std::vector<Shape> boundaries_;
};

}  // namespace

std::unique_ptr<train::StepExecutor> make_pipeline_executor(
    std::shared_ptr<models::Network> network, std::shared_ptr<optim::Optimizer> optimizer,
    const PipelineOptions& options, std::shared_ptr<PipelineParallel::Shared> shared,
    std::shared_ptr<WorkerGroup> group) {
  return std::make_unique<PipelineExecutor>(std::move(network), std::move(optimizer), options,
                                            std::move(shared), std::move(group));
}

}  // namespace osprey::distribute
