#include "osprey/train/trainer.h"

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <utility>

#include "osprey/autograd/creation_scope.h"
#include "osprey/autograd/grad_mode.h"
#include "osprey/autograd/ops.h"
#include "osprey/core/rng.h"
#include "osprey/core/trace.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"
#include "osprey/train/progbar.h"

namespace osprey::train {

namespace {

// Rows idx[b..e) of t [N, ...] as a new [e - b, ...] tensor, in one gather.
Tensor gather_rows(const Tensor& t, const Tensor& flat, const Tensor& idx) {
  Shape s = t.shape();
  s[0] = idx.numel();
  Tensor out = Tensor::empty({idx.numel(), flat.size(1)}, {t.dtype(), t.device()});
  backend_for(t.device()).gather_rows(flat, idx, out);
  return out.view(s);
}

// A seeded Fisher-Yates permutation of [0, n): the same order on any machine and thread count.
void permute(std::vector<int64_t>& order, uint64_t seed) {
  const Philox rng(seed);
  for (int64_t i = static_cast<int64_t>(order.size()) - 1; i > 0; --i) {
    const auto w = rng(static_cast<uint64_t>(i));
    const auto j =
        static_cast<int64_t>(Philox::to_unit_double(w[0], w[1]) * static_cast<double>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(std::min(j, i))]);
  }
}

// OSPREY_MAX_STEPS=N caps every epoch of fit (training and validation) and every evaluate at N
// batches, in every program: the docs test runs each documented command with it so that a
// 50-epoch example finishes in seconds (README.md, "Environment"). Read once; a value that is not
// a positive integer is an error rather than silently ignored.
int64_t max_steps_from_env() {
  static const int64_t cap = [] {
    const char* v = std::getenv("OSPREY_MAX_STEPS");
    if (v == nullptr || *v == '\0') return int64_t{-1};
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    OSPREY_CHECK(*end == '\0' && n > 0,
                 "OSPREY_MAX_STEPS must be a positive number of batches. Received: '{}'", v);
    return static_cast<int64_t>(n);
  }();
  return cap;
}

// `steps` (-1: the whole data) limited by OSPREY_MAX_STEPS.
int64_t capped_steps(int64_t steps) {
  const int64_t cap = max_steps_from_env();
  if (cap < 0) return steps;
  return steps < 0 ? cap : std::min(steps, cap);
}

// The steps an epoch shows in its progress: the limit, or the data's steps (-1: unknown) if fewer.
int64_t steps_to_show(int64_t limit, int64_t data_steps) {
  if (limit < 0) return data_steps;
  return data_steps < 0 ? limit : std::min(limit, data_steps);
}

}  // namespace

BatchSource tensor_source(const Tensor& x_in, const Tensor& y_in, int64_t batch_size, bool shuffle,
                          uint64_t seed) {
  OSPREY_CHECK(x_in.defined() && x_in.ndim() >= 1, "fit: x must be a tensor with a batch axis");
  OSPREY_CHECK(batch_size > 0, "fit: batch_size must be positive. Received: {}", batch_size);
  const int64_t n = x_in.size(0);
  OSPREY_CHECK(n > 0, "fit: x holds no samples (shape {})", x_in.shape().to_string());
  if (y_in.defined()) {
    OSPREY_CHECK(y_in.ndim() >= 1 && y_in.size(0) == n,
                 "fit: x and y must have the same number of samples. Received: x {} and y {}",
                 x_in.shape().to_string(), y_in.shape().to_string());
  }
  const Tensor x = x_in.contiguous();
  const Tensor y = y_in.defined() ? y_in.contiguous() : Tensor();
  const Tensor xf = x.reshape({n, -1});
  const Tensor yf = y.defined() ? y.reshape({n, -1}) : Tensor();
  BatchSource src;
  src.steps = (n + batch_size - 1) / batch_size;
  src.epoch = [=](int epoch, int64_t first_step) -> BatchStream {
    auto pos = std::make_shared<int64_t>(std::min(n, first_step * batch_size));
    if (!shuffle) {
      return [=](Tensor& bx, Tensor& by) {
        if (*pos >= n) return false;
        const int64_t len = std::min(batch_size, n - *pos);
        bx = x.narrow(0, *pos, len);
        by = y.defined() ? y.narrow(0, *pos, len) : Tensor();
        *pos += len;
        return true;
      };
    }
    auto order = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(n));
    std::iota(order->begin(), order->end(), 0);
    permute(*order, seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(epoch + 1));
    auto idx = std::make_shared<Tensor>();
    return [=](Tensor& bx, Tensor& by) {
      if (*pos >= n) return false;
      const int64_t len = std::min(batch_size, n - *pos);
      if (!idx->defined() || idx->numel() != len) *idx = Tensor::empty({len}, {DType::int64});
      std::copy_n(order->begin() + *pos, len, idx->data<int64_t>());
      bx = gather_rows(x, xf, *idx);
      by = y.defined() ? gather_rows(y, yf, *idx) : Tensor();
      *pos += len;
      return true;
    };
  };
  return src;
}

BatchSource dataset_source(const data::Dataset& dataset) {
  BatchSource src;
  const int64_t c = dataset.cardinality();
  src.steps = c >= 0 ? c : -1;
  src.epoch = [dataset](int epoch, int64_t first_step) -> BatchStream {
    auto it = std::make_shared<data::Iterator>(dataset.iterator(static_cast<uint64_t>(epoch)));
    // The epoch's order is a function of the seeds and the epoch (shuffle reseeds per epoch), so
    // skipping the batches already taken puts the pipeline where it was.
    for (int64_t s = 0; s < first_step && it->next(); ++s) {
    }
    return [it](Tensor& bx, Tensor& by) {
      auto e = it->next();
      if (!e) return false;
      OSPREY_CHECK(e->size() >= 1,
                   "fit: dataset elements must hold (x, y) or x; received an empty element");
      bx = (*e)[0];
      by = e->size() >= 2 ? (*e)[1] : Tensor();
      return true;
    };
  };
  return src;
}

Trainer::Trainer(std::shared_ptr<models::Network> network,
                 std::shared_ptr<optim::Optimizer> optimizer, std::shared_ptr<losses::Loss> loss,
                 std::vector<std::shared_ptr<metrics::Metric>> metrics, CompileOptions options)
    : network_(std::move(network)),
      optimizer_(std::move(optimizer)),
      loss_(std::move(loss)),
      metrics_(std::move(metrics)),
      options_(options) {
  OSPREY_CHECK(options_.steps_per_execution >= 1,
               "compile: steps_per_execution must be at least 1. Received: {}",
               options_.steps_per_execution);
  if (!options_.strategy) options_.strategy = current_strategy();
  if (!options_.strategy) options_.strategy = single_device_strategy();
  if (options_.strategy != single_device_strategy()) {
    scope_label_ = options_.strategy->scope_label();
  }
  check_created_under_this_strategy();
}

namespace {
std::string created_where(const std::string& scope) {
  return scope.empty() ? "outside any strategy scope" : "under " + scope + "'s scope";
}
std::string compiled_for(const std::string& scope) { return scope.empty() ? "no strategy" : scope; }
}  // namespace

void Trainer::check_created_under_this_strategy() const {
  // Compiled inside its strategy's scope, the model must have been built (or loaded) there too,
  // as Keras requires ("Variable ... was not created in the distribution strategy scope"): a
  // model built before the scope was opened is the mistake the scope exists to catch. Outside
  // any scope, a strategy named in CompileOptions or set process-wide (set_distribution) adopts
  // weights made outside any scope: its executor copies the primary's weights into every
  // replica. Created under another strategy's scope is the mistake tf.distribute forbids.
  const bool inside_its_scope = !scope_label_.empty() && scope_strategy_label() == scope_label_;
  for (const autograd::Variable& v : network_->variables()) {
    const std::string& scope = v.creation_scope();
    OSPREY_CHECK(!(inside_its_scope && scope.empty()),
                 "compile: model '{}' is compiled inside {}'s scope, but its variable {} was "
                 "created outside any strategy scope; build (or load) the model inside "
                 "strategy.scope() and compile it there",
                 network_->name(), scope_label_, v.name());
    OSPREY_CHECK(scope.empty() || scope == scope_label_,
                 "compile: variable {} was created {}, but model '{}' is compiled for {}; mixing "
                 "strategies is not "
                 "supported: build, compile and fit the model under one strategy's scope",
                 v.name(), created_where(scope), network_->name(), compiled_for(scope_label_));
  }
  const optim::Optimizer::SlotOrigin& slots = optimizer_->slot_origin();
  OSPREY_CHECK(slots.scope.empty() || slots.scope == scope_label_,
               "compile: optimizer '{}' already holds slots created {} (the first for variable "
               "{}), but model '{}' "
               "is compiled for {}; mixing strategies is not supported: create the optimizer under "
               "the scope of the "
               "strategy it trains with",
               optimizer_->name(), created_where(slots.scope), slots.variable, network_->name(),
               compiled_for(scope_label_));
}

void Trainer::check_scope(const char* what) const {
  const std::string& open = scope_strategy_label();
  if (open.empty() || open == scope_label_) return;
  const std::vector<autograd::Variable> vars = network_->variables();
  const std::string variable = vars.empty()
                                   ? std::string()
                                   : fmt::format("; its variable {} was created {}", vars[0].name(),
                                                 created_where(vars[0].creation_scope()));
  OSPREY_THROW(ValueError,
               "{}: called inside a {} scope, but model '{}' is compiled for {}{}. A model runs "
               "under the strategy it "
               "was compiled with: build and compile it inside this scope, or call {} outside it",
               what, open, network_->name(), compiled_for(scope_label_), variable, what);
}

StepExecutor& Trainer::executor() {
  if (!executor_) executor_ = options_.strategy->make_executor(network_, optimizer_);
  return *executor_;
}

void Trainer::accumulate(const std::vector<ReplicaOutput>& outputs) {
  for (const ReplicaOutput& r : outputs) {
    const auto n = static_cast<double>(r.y.size(0));
    loss_sum_ += r.loss * n;
    loss_count_ += n;
    // Padded steps (the model output's mask) weigh 0, as Keras's compiled metrics apply it.
    const Tensor weight = r.mask.defined() ? r.mask.to(DType::float32) : Tensor();
    for (auto& m : metrics_) m->update_state(r.y, r.y_pred, weight.defined() ? &weight : nullptr);
  }
}

void Trainer::train_step(const Tensor& x, const Tensor& y) {
  OSPREY_CHECK(y.defined(), "fit: the training data has no targets (y)");
  check_scope("fit");
  const autograd::CreationScopeGuard creation(scope_label_.empty() ? nullptr : &scope_label_);
  accumulate(executor().train_step(x, y, replica_step()));
}

ReplicaStep Trainer::replica_step() {
  // Runs on each replica's thread: nothing here may touch the trainer's running state.
  return [this](models::Network& net, const std::vector<autograd::Variable>& trainable,
                const Tensor& xr, const Tensor& yr) {
    autograd::Variable y_pred = net(autograd::Variable(xr), true);
    autograd::Variable loss = (*loss_)(yr, y_pred);
    for (const autograd::Variable& r : net.regularization_losses()) loss = loss + r;
    for (autograd::Variable v : trainable) v.zero_grad();
    optimizer_->scale_loss(loss).backward();
    return ReplicaOutput{loss.item(), y_pred.value(), yr, y_pred.mask()};
  };
}

Logs Trainer::fit_results() const {
  Logs logs = results();
  if (executor_) executor_->add_logs(logs);
  return logs;
}

void Trainer::test_step(const Tensor& x, const Tensor& y) {
  OSPREY_CHECK(y.defined(), "evaluate: the data has no targets (y)");
  check_scope("evaluate");
  const autograd::CreationScopeGuard creation(scope_label_.empty() ? nullptr : &scope_label_);
  const ReplicaForward forward = [this](models::Network& net, const Tensor& xr, const Tensor& yr) {
    autograd::NoGradGuard no_grad;
    autograd::Variable y_pred = net(autograd::Variable(xr), false);
    return ReplicaOutput{(*loss_)(yr, y_pred).item(), y_pred.value(), yr, y_pred.mask()};
  };
  accumulate(executor().run_forward(x, y, forward));
}

Tensor Trainer::predict_step(const Tensor& x) {
  check_scope("predict");
  const autograd::CreationScopeGuard creation(scope_label_.empty() ? nullptr : &scope_label_);
  const ReplicaForward forward = [](models::Network& net, const Tensor& xr, const Tensor&) {
    autograd::NoGradGuard no_grad;
    return ReplicaOutput{0.0, net(autograd::Variable(xr), false).value(), Tensor(), Tensor()};
  };
  std::vector<ReplicaOutput> outs = executor().run_forward(x, Tensor(), forward);
  if (outs.size() == 1) return outs[0].y_pred;
  std::vector<Tensor> parts;
  parts.reserve(outs.size());
  for (ReplicaOutput& r : outs) parts.push_back(std::move(r.y_pred));
  return concat(parts, 0);
}

Logs Trainer::results(const std::string& prefix) const {
  Logs logs;
  logs.set(prefix + "loss", loss_count_ > 0 ? loss_sum_ / loss_count_ : 0.0);
  for (const auto& m : metrics_) logs.set(prefix + m->name(), m->result());
  return logs;
}

void Trainer::reset_metrics() {
  loss_sum_ = loss_count_ = 0.0;
  for (auto& m : metrics_) m->reset_state();
}

std::vector<double> Trainer::running_state() const {
  // {loss_sum, loss_count, then per metric: its number of values, the values}.
  std::vector<double> out{loss_sum_, loss_count_};
  for (const auto& m : metrics_) {
    const std::vector<double> v = m->state_values();
    out.push_back(static_cast<double>(v.size()));
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

void Trainer::check_running_state(const std::vector<double>& state) const {
  OSPREY_CHECK(state.size() >= 2,
               "load_running_state: the saved state holds {} values; at least "
               "2 (the running loss) expected",
               state.size());
  size_t at = 2;
  for (const auto& m : metrics_) {
    OSPREY_CHECK(at < state.size(),
                 "load_running_state: the saved state ends before metric {} (it was saved with "
                 "fewer metrics)",
                 m->name());
    // A count read from a file: a whole number that fits what is left, before any cast.
    const double n = state[at++];
    OSPREY_CHECK(n >= 0 && n <= static_cast<double>(state.size() - at) && n == std::floor(n),
                 "load_running_state: metric {}'s saved state is cut short (it claims {} "
                 "values; {} are left)",
                 m->name(), n, state.size() - at);
    at += static_cast<size_t>(n);
  }
  OSPREY_CHECK(at == state.size(),
               "load_running_state: the saved state holds more metrics than the {} compiled",
               metrics_.size());
}

void Trainer::load_running_state(const std::vector<double>& state) {
  check_running_state(state);
  size_t at = 2;
  for (const auto& m : metrics_) {
    const auto n = static_cast<size_t>(state[at++]);
    m->load_state_values(std::vector<double>(state.begin() + static_cast<std::ptrdiff_t>(at),
                                             state.begin() + static_cast<std::ptrdiff_t>(at + n)));
    at += n;
  }
  loss_sum_ = state[0];
  loss_count_ = state[1];
}

History Trainer::fit(Model& model, const BatchSource& train, const FitOptions& o,
                     const std::optional<BatchSource>& validation) {
  OSPREY_CHECK(o.epochs >= 0 && o.initial_epoch >= 0,
               "fit: epochs and initial_epoch must be non-negative");
  auto history = std::make_shared<History>();
  {  // a process that serves another's steps (a parameter-server worker task) runs no loop
    check_scope("fit");
    const autograd::CreationScopeGuard creation(scope_label_.empty() ? nullptr : &scope_label_);
    if (executor().serve_steps(replica_step())) return *history;
  }
  std::vector<CallbackPtr> all = o.callbacks;
  if (o.verbose > 0) all.insert(all.begin(), std::make_shared<ProgbarLogger>());
  all.push_back(history);
  const int64_t limit = capped_steps(o.steps_per_epoch > 0 ? o.steps_per_epoch : -1);
  // An explicit steps_per_epoch is shown as given (as before OSPREY_MAX_STEPS), capped.
  const int64_t steps = o.steps_per_epoch > 0 ? limit : steps_to_show(limit, train.steps);
  CallbackList callbacks(all, &model, {o.epochs, steps, o.verbose});
  model.stop_training() = false;
  resume_.reset();
  callbacks.each([](Callback& c) { c.on_train_begin({}); });
  executor().sync_replicas();  // weights may have been set (or restored) since the last fit
  Logs epoch_logs;
  try {
    epoch_logs = run_epochs(model, train, o, validation, callbacks, *history);
  } catch (const std::exception& e) {
    executor().end_fit(e.what());
    throw;
  }
  executor().end_fit("");
  callbacks.each([&](Callback& c) { c.on_train_end(epoch_logs); });
  return *history;
}

Logs Trainer::run_epochs(Model& model, const BatchSource& train, const FitOptions& o,
                         const std::optional<BatchSource>& validation, CallbackList& callbacks,
                         History& history) {
  const std::optional<ResumePoint> resume = std::exchange(resume_, std::nullopt);
  const int first_epoch = resume ? resume->epoch : o.initial_epoch;
  const int64_t first_step = resume ? resume->step : 0;
  if (resume) {
    history.history = resume->history;
    history.epoch = resume->history_epochs;
  }
  const int64_t limit = capped_steps(o.steps_per_epoch > 0 ? o.steps_per_epoch : -1);
  Logs epoch_logs;
  for (int epoch = first_epoch; epoch < o.epochs && !model.stop_training(); ++epoch) {
    reset_metrics();
    if (resume && epoch == first_epoch && first_step > 0) load_running_state(resume->running_state);
    callbacks.each([&](Callback& c) { c.on_epoch_begin(epoch, {}); });
    int64_t step = epoch == first_epoch ? first_step : 0;
    BatchStream stream = train.epoch(epoch, step);
    Tensor bx, by;
    // steps_per_execution = k: callbacks see one batch per k steps (begin before the first,
    // end after the last, with the last step's index), as Keras; the epoch's last group may be
    // shorter. Nothing is read back between the steps of a group.
    const int64_t k = options_.steps_per_execution;
    bool group_open = false;
    // The profiler's data span: the time this thread waits for the pipeline's next batch.
    auto next_batch = [&] {
      const trace::Span span(trace::Category::data, "next_batch");
      return stream(bx, by);
    };
    while ((limit < 0 || step < limit) && next_batch()) {
      if (step % k == 0) {
        callbacks.each([&](Callback& c) { c.on_train_batch_begin(step, {}); });
        group_open = true;
      }
      {
        const trace::Span span(trace::Category::step, "train_step", [&](trace::Args& a) {
          a.emplace_back("step", std::to_string(step));
          a.emplace_back("batch_shape", bx.shape().to_string());
        });
        train_step(bx, by);
      }
      ++step;
      if (step % k == 0) {
        group_open = false;
        const Logs logs = fit_results();
        callbacks.each([&](Callback& c) { c.on_train_batch_end(step - 1, logs); });
        if (model.stop_training()) break;
      }
    }
    if (group_open) {
      const Logs logs = fit_results();
      callbacks.each([&](Callback& c) { c.on_train_batch_end(step - 1, logs); });
    }
    accumulate(executor().finish_epoch());
    epoch_logs = fit_results();
    if (validation) {
      const Logs val = evaluate(model, *validation, {.batch_size = 0, .verbose = 0});
      for (const auto& [k, v] : val.items()) epoch_logs.set("val_" + k, v);
    }
    callbacks.each([&](Callback& c) { c.on_epoch_end(epoch, epoch_logs); });
  }
  return epoch_logs;
}

Logs Trainer::evaluate(Model& model, const BatchSource& source, const EvaluateOptions& o) {
  const int64_t limit = capped_steps(o.steps);
  const int64_t steps = steps_to_show(limit, source.steps);
  CallbackList callbacks(o.callbacks, &model, {1, steps, o.verbose});
  executor().sync_replicas();
  // fit reads the epoch's training logs before validating, so evaluation may reset the metrics.
  reset_metrics();
  callbacks.each([](Callback& c) { c.on_test_begin({}); });
  BatchStream stream = source.epoch(0, 0);
  Tensor bx, by;
  int64_t step = 0;
  while ((limit < 0 || step < limit) && stream(bx, by)) {
    callbacks.each([&](Callback& c) { c.on_test_batch_begin(step, {}); });
    test_step(bx, by);
    const Logs logs = results();
    callbacks.each([&](Callback& c) { c.on_test_batch_end(step, logs); });
    ++step;
  }
  Logs logs = results();
  callbacks.each([&](Callback& c) { c.on_test_end(logs); });
  return logs;
}

Tensor Trainer::predict(Model& model, const BatchSource& source, const PredictOptions& o) {
  CallbackList callbacks(o.callbacks, &model, {1, source.steps, o.verbose});
  callbacks.each([](Callback& c) { c.on_predict_begin({}); });
  executor().sync_replicas();
  BatchStream stream = source.epoch(0, 0);
  Tensor bx, by;
  std::vector<Tensor> outputs;
  int64_t step = 0;
  while (stream(bx, by)) {
    callbacks.each([&](Callback& c) { c.on_predict_batch_begin(step, {}); });
    outputs.push_back(predict_step(bx));
    callbacks.each([&](Callback& c) { c.on_predict_batch_end(step, {}); });
    ++step;
  }
  callbacks.each([](Callback& c) { c.on_predict_end({}); });
  OSPREY_CHECK(!outputs.empty(), "predict: the data holds no samples");
  return outputs.size() == 1 ? outputs[0] : concat(outputs, 0);
}

}  // namespace osprey::train
