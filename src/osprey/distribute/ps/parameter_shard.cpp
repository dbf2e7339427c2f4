// ParameterShard (parameter_shard.h). Decisions the header leaves open:
//  - Every push is checked whole (names, shapes, weight, finite gradients) before anything
//    changes. A NaN or Inf gradient is refused (ValueError naming the variable): applied, it
//    would poison the shared parameters of every worker, and nothing could undo it.
//  - sync: the k shares of a step are averaged per variable, weighted by their rows, in double
//    (one share's gradient comes back exactly). A variable that only some shares carry averages
//    over those. Non-trainable state is assigned when the step applies: each name takes the value
//    of the last accepted share that carried it. A share of a step the shard gave up on (a newer
//    step arrived first) is late.
//  - async: the gradient is applied as it is (weight only has to be valid); staleness is
//    version - base_version, at least 0 (a restored shard may be behind its workers).
//  - Re-registration without overwrite keeps values, slots, version and last step, and takes the
//    new config, the optimizer's included (its slots and iterations carried over, so a changed
//    learning rate applies); a different optimizer class is an error. With overwrite it is a new
//    job: values, state and optimizer start fresh and last_step returns to -1; the version keeps
//    counting up, so no worker ever sees it go back.
//  - Counters: pushes (every push), applied (pushes whose gradients went into an update: each of
//    a sync step's k shares), dropped (late, stale, or discarded with an abandoned step).
//  - Checkpoints are taken from a copy made under the lock, and written outside it.
#include "osprey/distribute/ps/parameter_shard.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "osprey/autograd/variable.h"
#include "osprey/comm/rpc/not_found_error.h"
#include "osprey/core/error.h"
#include "osprey/distribute/ps/shard_checkpoint.h"
#include "osprey/optim/factory.h"

namespace osprey::distribute::ps {

namespace fs = std::filesystem;
using autograd::Variable;

namespace {

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& text, const std::string& who) {
  OSPREY_CHECK(!text.empty(),
               "{}: the optimizer config is empty; expected optim::serialize(optimizer) as JSON",
               who);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "{}: the optimizer config is not valid JSON: {}. Received: {}", who,
                 e.what(), text.substr(0, 200));
  }
  return optim::deserialize(j);
}

void check_config(const ShardConfig& c, const std::string& who) {
  OSPREY_CHECK(c.mode == "sync" || c.mode == "async",
               "{}: mode must be \"sync\" or \"async\". Received: mode=\"{}\"", who, c.mode);
  if (c.mode == "sync") {
    OSPREY_CHECK(c.replicas_to_aggregate >= 1 && c.replicas_to_aggregate <= c.total_replicas,
                 "{}: sync training needs 1 <= replicas_to_aggregate <= total_replicas. "
                 "Received: replicas_to_aggregate={}, total_replicas={}",
                 who, c.replicas_to_aggregate, c.total_replicas);
  }
  OSPREY_CHECK(c.staleness.max_staleness >= -1,
               "{}: max_staleness must be -1 (no bound) or >= 0. Received: max_staleness={}", who,
               c.staleness.max_staleness);
}

// Names unique and non-empty; returns name -> position.
std::map<std::string, size_t, std::less<>> index_names(const NamedTensors& tensors,
                                                       std::string_view kind,
                                                       const std::string& who) {
  std::map<std::string, size_t, std::less<>> index;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    OSPREY_CHECK(!name.empty(), "{}: {} {} has an empty name", who, kind, i);
    OSPREY_CHECK(t.defined(), "{}: {} '{}' is undefined", who, kind, name);
    OSPREY_CHECK(index.emplace(name, i).second, "{}: {} '{}' appears twice", who, kind, name);
  }
  return index;
}

}  // namespace

struct ParameterShard::Impl {
  ShardOptions options;
  mutable std::mutex mu;
  std::mutex checkpoint_mu;  // one checkpoint write at a time (taken before mu, never inside it)

  bool registered = false;
  ShardConfig config;
  std::vector<Variable> variables;  // float32, contiguous, in registration order
  std::map<std::string, size_t, std::less<>> variable_index;
  NamedTensors state;
  std::map<std::string, size_t, std::less<>> state_index;
  std::unique_ptr<optim::Optimizer> optimizer;
  int64_t version = 0;
  int64_t last_step = -1;
  // Mutations so far, and how many the last checkpoint written (or restored) holds.
  int64_t changes = 0, saved_changes = 0;

  // sync: the step being accumulated (-1: none), per variable sum(w g), sum(w) and a float32
  // buffer for the averaged gradient (allocated on first use, reused).
  int64_t acc_step = -1;
  std::set<int> acc_shares;
  std::vector<std::vector<double>> acc_sum;
  std::vector<double> acc_weight;
  std::vector<Tensor> grad_buffer;
  std::map<std::string, Tensor, std::less<>> acc_state;

  int64_t pushes = 0, applied = 0, dropped = 0;
  std::vector<int64_t> histogram = std::vector<int64_t>(kStalenessBuckets, 0);

  const std::string& who() const { return options.name; }
  void check_registered(std::string_view op) const {
    OSPREY_CHECK(registered, "{}: {} before any variables were registered", who(), op);
  }

  // Forgets the step being accumulated; the sums stay allocated (a weight of 0 marks them
  // unused), so a step allocates nothing after the first.
  void reset_accumulation() {
    acc_step = -1;
    acc_shares.clear();
    if (acc_sum.size() != variables.size()) acc_sum.assign(variables.size(), {});
    acc_weight.assign(variables.size(), 0.0);
    acc_state.clear();
  }
  Tensor& buffer(size_t i) {
    if (grad_buffer.size() != variables.size()) grad_buffer.resize(variables.size());
    if (!grad_buffer[i].defined()) grad_buffer[i] = Tensor::empty(variables[i].shape());
    return grad_buffer[i];
  }

  void install(const NamedTensors& vars, const NamedTensors& st) {
    variables.clear();
    variable_index.clear();
    for (const auto& [name, t] : vars) {
      variable_index.emplace(name, variables.size());
      variables.emplace_back(t.to(DType::float32).contiguous().clone(), true, name);
    }
    state.clear();
    state_index.clear();
    for (const auto& [name, t] : st) {
      state_index.emplace(name, state.size());
      state.emplace_back(name, t.contiguous().clone());
    }
    grad_buffer.clear();
    acc_sum.clear();
    reset_accumulation();
  }

  // Checks a registration against what the shard holds: same names, same shapes.
  void check_same_layout(const NamedTensors& vars, const NamedTensors& st) const {
    const auto compare = [&](const NamedTensors& mine, const NamedTensors& theirs,
                             std::string_view kind) {
      std::map<std::string, const Tensor*, std::less<>> held;
      for (const auto& [name, t] : mine) held.emplace(name, &t);
      for (const auto& [name, t] : theirs) {
        const auto it = held.find(name);
        OSPREY_CHECK(it != held.end(),
                     "{}: registration names {} '{}', which this shard does not hold (it holds "
                     "{} {}s registered earlier or restored); names must agree",
                     who(), kind, name, mine.size(), kind);
        OSPREY_CHECK(it->second->shape() == t.shape(),
                     "{}: {} '{}' has shape {} on this shard, but the registration has {}", who(),
                     kind, name, it->second->shape().to_string(), t.shape().to_string());
        held.erase(it);
      }
      OSPREY_CHECK(held.empty(),
                   "{}: this shard holds {} '{}', which the registration does not name; names "
                   "must agree",
                   who(), kind, held.empty() ? std::string() : held.begin()->first);
    };
    NamedTensors mine;
    for (const Variable& v : variables) mine.emplace_back(v.name(), v.value());
    compare(mine, vars, "variable");
    compare(state, st, "state tensor");
  }

  // Validates every gradient of a push and returns, per variable, the float32 gradient or an
  // undefined tensor.
  std::vector<Tensor> check_push(const PushArgs& args) const {
    OSPREY_CHECK(std::isfinite(args.weight) && args.weight > 0,
                 "{}: a push's weight (its rows) must be positive and finite. Received: "
                 "weight={} from worker {}",
                 who(), args.weight, args.worker);
    std::vector<Tensor> grads(variables.size());
    for (const auto& [name, g] : args.gradients) {
      const auto it = variable_index.find(name);
      if (it == variable_index.end()) {
        OSPREY_THROW(comm::rpc::NotFoundError,
                     "{}: worker {} pushed a gradient for '{}', which is not one of this "
                     "shard's {} variables",
                     who(), args.worker, name, variables.size());
      }
      const Variable& v = variables[it->second];
      OSPREY_CHECK(g.defined() && g.shape() == v.shape(),
                   "{}: the gradient of '{}' from worker {} has shape {}, but the variable has "
                   "shape {}",
                   who(), name, args.worker, g.defined() ? g.shape().to_string() : "undefined",
                   v.shape().to_string());
      OSPREY_CHECK(is_floating(g.dtype()),
                   "{}: the gradient of '{}' must be floating point. Received: {}", who(), name,
                   g.describe());
      OSPREY_CHECK(!grads[it->second].defined(), "{}: the push has two gradients for '{}'", who(),
                   name);
      Tensor f = g.to(Device::cpu(0)).to(DType::float32).contiguous();
      const float* p = f.data<float>();
      for (int64_t i = 0; i < f.numel(); ++i) {
        if (!std::isfinite(p[i])) [[unlikely]] {
          OSPREY_THROW(ValueError,
                       "{}: the gradient of '{}' from worker {} is not finite ({} at flat index "
                       "{}); refused so that the shared parameters stay usable",
                       who(), name, args.worker, p[i], i);
        }
      }
      grads[it->second] = std::move(f);
    }
    std::set<std::string_view> seen;
    for (const auto& [name, t] : args.state) {
      const auto it = state_index.find(name);
      if (it == state_index.end()) {
        OSPREY_THROW(comm::rpc::NotFoundError,
                     "{}: worker {} pushed state '{}', which is not one of this shard's {} state "
                     "tensors",
                     who(), args.worker, name, state.size());
      }
      const Tensor& held = state[it->second].second;
      OSPREY_CHECK(t.defined() && t.shape() == held.shape(),
                   "{}: state '{}' from worker {} has shape {}, but the shard's has shape {}",
                   who(), name, args.worker, t.defined() ? t.shape().to_string() : "undefined",
                   held.shape().to_string());
      OSPREY_CHECK(seen.insert(name).second, "{}: the push has two values for state '{}'", who(),
                   name);
    }
    return grads;
  }

  void assign_state(const std::string& name, const Tensor& t) {
    Tensor& held = state[state_index.at(name)].second;
    held = t.to(Device::cpu(0)).to(held.dtype()).contiguous().clone();
  }

  // Sets the gradients, applies the optimizer (with lr_divisor > 1: at lr / lr_divisor for this
  // update only) and drops the gradients again.
  void apply(const std::vector<Tensor>& grads, double lr_divisor) {
    std::vector<Variable> with_grad;
    for (size_t i = 0; i < variables.size(); ++i) {
      if (!grads[i].defined()) continue;
      variables[i].set_grad(grads[i]);
      with_grad.push_back(variables[i]);
    }
    if (with_grad.empty()) return;  // a push of state only
    const auto clear = [&] {
      for (Variable& v : with_grad) v.zero_grad(true);
    };
    try {
      if (lr_divisor > 1) {
        const optim::LearningRate saved = optimizer->learning_rate_option();
        optimizer->set_learning_rate(optimizer->learning_rate() / lr_divisor);
        try {
          optimizer->apply(with_grad);
        } catch (...) {
          optimizer->set_learning_rate(saved);
          throw;
        }
        optimizer->set_learning_rate(saved);
      } else {
        optimizer->apply(with_grad);
      }
    } catch (...) {
      clear();
      throw;
    }
    clear();
  }

  PushResult push_sync(const PushArgs& args, const std::vector<Tensor>& grads) {
    const int n = config.total_replicas;
    OSPREY_CHECK(args.step >= 0, "{}: a sync push needs a step >= 0. Received: step={}", who(),
                 args.step);
    OSPREY_CHECK(args.share >= 0 && args.share < n,
                 "{}: a sync push's share must be in [0, {}) (total_replicas={}). Received: "
                 "share={} from worker {}",
                 who(), n, n, args.share, args.worker);
    PushResult r{.outcome = PushOutcome::aggregating, .version = version, .staleness = 0};
    if (args.step <= last_step || (acc_step >= 0 && args.step < acc_step)) {
      ++dropped;
      r.outcome = PushOutcome::dropped_late;
      return r;
    }
    if (args.step > acc_step) {
      // A newer step: the partial one will never complete (its stragglers are late now).
      dropped += static_cast<int64_t>(acc_shares.size());
      reset_accumulation();
      acc_step = args.step;
    }
    if (acc_shares.contains(args.share)) {
      r.outcome = PushOutcome::duplicate;
      return r;
    }
    acc_shares.insert(args.share);
    for (size_t i = 0; i < variables.size(); ++i) {
      if (!grads[i].defined()) continue;
      std::vector<double>& sum = acc_sum[i];
      sum.resize(static_cast<size_t>(variables[i].numel()));
      const float* g = grads[i].data<float>();
      const double w = args.weight;
      if (acc_weight[i] == 0) {  // the step's first gradient of this variable
        for (size_t j = 0; j < sum.size(); ++j) sum[j] = w * static_cast<double>(g[j]);
      } else {
        for (size_t j = 0; j < sum.size(); ++j) sum[j] += w * static_cast<double>(g[j]);
      }
      acc_weight[i] += w;
    }
    for (const auto& [name, t] : args.state) acc_state[name] = t.contiguous().clone();
    if (static_cast<int>(acc_shares.size()) < config.replicas_to_aggregate) return r;

    std::vector<Tensor> mean(variables.size());
    for (size_t i = 0; i < variables.size(); ++i) {
      if (acc_weight[i] <= 0) continue;
      Tensor& b = buffer(i);
      float* p = b.data<float>();
      const std::vector<double>& sum = acc_sum[i];
      for (size_t j = 0; j < sum.size(); ++j) p[j] = static_cast<float>(sum[j] / acc_weight[i]);
      mean[i] = b;
    }
    apply(mean, 1.0);
    for (const auto& [name, t] : acc_state) assign_state(name, t);
    applied += static_cast<int64_t>(acc_shares.size());
    ++version;
    ++changes;
    last_step = args.step;
    reset_accumulation();
    r.outcome = PushOutcome::applied;
    r.version = version;
    return r;
  }

  PushResult push_async(const PushArgs& args, std::vector<Tensor>& grads) {
    const StalenessPolicy& p = config.staleness;
    const int64_t staleness = std::max<int64_t>(0, version - args.base_version);
    ++histogram[static_cast<size_t>(std::min<int64_t>(staleness, kStalenessBuckets - 1))];
    PushResult r{.outcome = PushOutcome::applied, .version = version, .staleness = staleness};
    double scale = 1.0;
    if (p.max_staleness >= 0 && staleness > p.max_staleness) {
      if (!p.down_weight_beyond) {
        ++dropped;
        r.outcome = PushOutcome::dropped_stale;
        return r;
      }
      scale = 1.0 / (1.0 + static_cast<double>(staleness));
    }
    if (scale != 1.0) {
      for (size_t i = 0; i < grads.size(); ++i) {
        if (!grads[i].defined()) continue;
        Tensor& b = buffer(i);
        const float* g = grads[i].data<float>();
        float* out = b.data<float>();
        for (int64_t j = 0; j < b.numel(); ++j) {
          out[j] = static_cast<float>(static_cast<double>(g[j]) * scale);
        }
        grads[i] = b;
      }
    }
    const double divisor =
        p.staleness_aware_lr ? static_cast<double>(std::max<int64_t>(1, staleness)) : 1.0;
    apply(grads, divisor);
    for (const auto& [name, t] : args.state) assign_state(name, t);
    ++applied;
    ++version;
    ++changes;
    r.version = version;
    return r;
  }

  // A copy of everything a checkpoint holds (taken under the lock, written outside it).
  ShardCheckpoint snapshot() const {
    ShardCheckpoint c{.name = options.name,
                      .config = config,
                      .version = version,
                      .last_step = last_step,
                      .variables = {},
                      .state = {},
                      .optimizer_state = {}};
    for (const Variable& v : variables) c.variables.emplace_back(v.name(), v.value().clone());
    for (const auto& [name, t] : state) c.state.emplace_back(name, t.clone());
    for (const auto& [name, t] : optimizer->state("optimizer")) {
      c.optimizer_state.emplace_back(name, t.clone());
    }
    return c;
  }

  // Restores from options.checkpoint_dir when it holds a checkpoint; every problem is an IoError
  // naming the file.
  void restore() {
    std::optional<ShardCheckpoint> c = read_shard_checkpoint(options.checkpoint_dir, who());
    if (!c) return;
    const std::string manifest = (fs::path(options.checkpoint_dir) / kShardManifestFile).string();
    const std::string tensors = (fs::path(options.checkpoint_dir) / kShardTensorsFile).string();
    std::unique_ptr<optim::Optimizer> opt;
    try {
      check_config(c->config, who());
      opt = make_optimizer(c->config.optimizer, who());
    } catch (const ValueError& e) {
      OSPREY_THROW(IoError, "{}: damaged checkpoint {}: {}", who(), manifest, e.what());
    }
    try {
      index_names(c->variables, "variable", who());
      index_names(c->state, "state tensor", who());
      opt->load_state(c->optimizer_state, "optimizer");
    } catch (const ValueError& e) {
      OSPREY_THROW(IoError, "{}: damaged checkpoint {}: {}", who(), tensors, e.what());
    }
    install(c->variables, c->state);
    config = std::move(c->config);
    optimizer = std::move(opt);
    version = c->version;
    last_step = c->last_step;
    registered = true;
  }
};

ParameterShard::ParameterShard(ShardOptions options) : impl_(std::make_shared<Impl>()) {
  impl_->options = std::move(options);
  if (!impl_->options.checkpoint_dir.empty()) impl_->restore();
}

RegisterResult ParameterShard::register_variables(const NamedTensors& variables,
                                                  const NamedTensors& state,
                                                  const ShardConfig& config, bool overwrite) {
  Impl& s = *impl_;
  const std::string& who = s.who();
  check_config(config, who);
  const auto vindex = index_names(variables, "variable", who);
  const auto sindex = index_names(state, "state tensor", who);
  for (const auto& [name, t] : variables) {
    OSPREY_CHECK(t.dtype() == DType::float32,
                 "{}: variable '{}' must be float32 (trainable variables are kept and updated in "
                 "float32). Received: {}",
                 who, name, t.describe());
    OSPREY_CHECK(!sindex.contains(name), "{}: '{}' is registered both as a variable and as state",
                 who, name);
  }
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(config.optimizer, who);

  std::lock_guard lock(s.mu);
  RegisterResult r;
  if (s.registered && !overwrite) {
    s.check_same_layout(variables, state);
    OSPREY_CHECK(opt->class_name() == s.optimizer->class_name(),
                 "{}: this shard's optimizer is {} (its slots live here), but the registration "
                 "asks for {}; register with overwrite to start a new job",
                 who, s.optimizer->class_name(), opt->class_name());
    opt->load_state(s.optimizer->state("optimizer"), "optimizer");
    r.kept_existing = true;
    s.dropped += static_cast<int64_t>(s.acc_shares.size());  // a partial sync step is abandoned
    s.reset_accumulation();
  } else {
    s.dropped += static_cast<int64_t>(s.acc_shares.size());
    if (s.registered) ++s.version;  // new values: what workers pulled before is stale
    s.install(variables, state);
    s.last_step = -1;
  }
  s.optimizer = std::move(opt);
  s.config = config;
  s.registered = true;
  ++s.changes;
  r.version = s.version;
  r.last_step = s.last_step;
  return r;
}

NamedTensors ParameterShard::variables() const {
  std::lock_guard lock(impl_->mu);
  impl_->check_registered("variables()");
  NamedTensors out;
  for (const Variable& v : impl_->variables) out.emplace_back(v.name(), v.value().clone());
  return out;
}

NamedTensors ParameterShard::state() const {
  std::lock_guard lock(impl_->mu);
  impl_->check_registered("state()");
  NamedTensors out;
  for (const auto& [name, t] : impl_->state) out.emplace_back(name, t.clone());
  return out;
}

ParameterShard::Values ParameterShard::pull() const {
  std::lock_guard lock(impl_->mu);
  impl_->check_registered("pull");
  Values out;
  for (const Variable& v : impl_->variables)
    out.variables.emplace_back(v.name(), v.value().clone());
  for (const auto& [name, t] : impl_->state) out.state.emplace_back(name, t.clone());
  out.version = impl_->version;
  return out;
}

int64_t ParameterShard::version() const {
  std::lock_guard lock(impl_->mu);
  return impl_->version;
}

bool ParameterShard::registered() const {
  std::lock_guard lock(impl_->mu);
  return impl_->registered;
}

PushResult ParameterShard::push(const PushArgs& args) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  s.check_registered("push");
  std::vector<Tensor> grads = s.check_push(args);
  ++s.pushes;
  return s.config.mode == "sync" ? s.push_sync(args, grads) : s.push_async(args, grads);
}

ShardStats ParameterShard::stats(bool reset) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  ShardStats out{.version = s.version,
                 .pushes = s.pushes,
                 .applied = s.applied,
                 .dropped = s.dropped,
                 .staleness_histogram = s.histogram,
                 .variables = static_cast<int64_t>(s.variables.size()),
                 .parameters = 0};
  for (const Variable& v : s.variables) out.parameters += v.numel();
  if (reset) {
    s.pushes = s.applied = s.dropped = 0;
    std::fill(s.histogram.begin(), s.histogram.end(), 0);
  }
  return out;
}

bool ParameterShard::changed_since_checkpoint() const {
  std::lock_guard lock(impl_->mu);
  return impl_->changes != impl_->saved_changes;
}

std::string ParameterShard::checkpoint(int64_t* version) {
  Impl& s = *impl_;
  OSPREY_CHECK(!s.options.checkpoint_dir.empty(),
               "{}: checkpoint() needs a checkpoint directory (ShardOptions::checkpoint_dir, "
               "`osprey ps --checkpoint-dir`)",
               s.who());
  std::lock_guard write_lock(s.checkpoint_mu);
  ShardCheckpoint snap;
  int64_t changes = 0;
  {
    std::lock_guard lock(s.mu);
    s.check_registered("checkpoint()");
    snap = s.snapshot();
    changes = s.changes;
  }
  const fs::path dir = s.options.checkpoint_dir;
  write_shard_checkpoint(dir, snap);
  {
    std::lock_guard lock(s.mu);
    s.saved_changes = changes;
  }
  if (version != nullptr) *version = snap.version;
  return dir.string();
}

}  // namespace osprey::distribute::ps
