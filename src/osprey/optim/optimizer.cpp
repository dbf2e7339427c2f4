#include "osprey/optim/optimizer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "osprey/autograd/creation_scope.h"
#include "osprey/autograd/ops/elementwise.h"
#include "osprey/core/error.h"
#include "osprey/core/parallel.h"
#include "osprey/core/trace.h"
#include "osprey/optim/config_reader.h"
#include "osprey/tensor/factory.h"

namespace osprey::optim {

using autograd::Variable;
using nlohmann::json;

namespace {

std::string show(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : "None"; }
json to_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

void check_learning_rate(const std::string& owner, const LearningRate& lr) {
  if (lr.is_schedule()) return;
  const double v = lr(0);
  OSPREY_CHECK(std::isfinite(v) && v >= 0.0,
               "{}: learning_rate must be >= 0. Received: learning_rate={}", owner, v);
}

void check_positive(const std::string& owner, const char* field, const std::optional<double>& v) {
  if (!v) return;
  OSPREY_CHECK(std::isfinite(*v) && *v > 0.0, "{}: {} must be > 0. Received: {}={}", owner, field,
               field, *v);
}

// The first task whose range ends after `pos` (tasks are sorted and cover [0, total)).
const detail::VarTask* task_at(const detail::VarTask* begin, const detail::VarTask* end,
                               int64_t pos) {
  return std::upper_bound(
      begin, end, pos, [](int64_t p, const detail::VarTask& t) { return p < t.begin + t.numel; });
}

}  // namespace

Optimizer::Optimizer(std::string class_name, OptimizerOptions options,
                     std::array<std::string, detail::kMaxSlots> slot_names)
    : class_name_(std::move(class_name)),
      o_(std::move(options)),
      slot_names_(std::move(slot_names)) {
  check_learning_rate(class_name_, o_.learning_rate);
  const int clips = int{o_.clipnorm.has_value()} + int{o_.clipvalue.has_value()} +
                    int{o_.global_clipnorm.has_value()};
  OSPREY_CHECK(clips <= 1,
               "{}: only one of clipnorm, clipvalue and global_clipnorm can be set. Received: "
               "clipnorm={}, clipvalue={}, global_clipnorm={}",
               class_name_, show(o_.clipnorm), show(o_.clipvalue), show(o_.global_clipnorm));
  check_positive(class_name_, "clipnorm", o_.clipnorm);
  check_positive(class_name_, "clipvalue", o_.clipvalue);
  check_positive(class_name_, "global_clipnorm", o_.global_clipnorm);
  check_positive(class_name_, "loss_scale_factor", o_.loss_scale_factor);
  if (o_.weight_decay) {
    OSPREY_CHECK(std::isfinite(*o_.weight_decay) && *o_.weight_decay >= 0.0,
                 "{}: weight_decay must be >= 0. Received: weight_decay={}", class_name_,
                 *o_.weight_decay);
  }
}

void Optimizer::set_learning_rate(LearningRate learning_rate) {
  check_learning_rate(class_name_, learning_rate);
  o_.learning_rate = std::move(learning_rate);
}

Variable Optimizer::scale_loss(const Variable& loss) const {
  return o_.loss_scale_factor ? autograd::mul(loss, *o_.loss_scale_factor) : loss;
}

double Optimizer::scale_loss(double loss) const {
  return o_.loss_scale_factor ? loss * *o_.loss_scale_factor : loss;
}

void Optimizer::exclude_from_weight_decay(std::vector<std::string> var_names) {
  exclude_from_weight_decay_ = std::move(var_names);
  for (auto& [path, set] : slots_) set.decay = uses_weight_decay(path);
}

bool Optimizer::uses_weight_decay(std::string_view path) const {
  return std::none_of(exclude_from_weight_decay_.begin(), exclude_from_weight_decay_.end(),
                      [&](const std::string& s) { return path.find(s) != std::string_view::npos; });
}

Optimizer::SlotSet& Optimizer::slots_for(const Variable& v, int64_t call) {
  const std::string& path = v.name();
  OSPREY_CHECK(
      !path.empty(),
      "{}: every variable needs a name (its path, e.g. \"sequential/dense/kernel\"): slots "
      "are keyed by it. Received an unnamed variable {}",
      class_name_, v.value().describe());
  auto it = slots_.find(path);
  if (it == slots_.end()) {
    if (slots_.empty()) slot_origin_ = {autograd::creation_scope(), path};
    it = slots_.emplace(path, SlotSet{}).first;
    it->second.decay = uses_weight_decay(path);
  }
  SlotSet& set = it->second;
  OSPREY_CHECK(
      set.seen_in_call != call,
      "{}: two variables passed to apply() share the name \"{}\"; slots are keyed by name, "
      "so names must be unique",
      class_name_, path);
  set.seen_in_call = call;
  const Tensor& value = v.value();
  const DType slot_dtype = value.dtype() == DType::float64 ? DType::float64 : DType::float32;
  for (int k = 0; k < detail::kMaxSlots; ++k) {
    if (slot_names_[k].empty()) continue;
    Tensor& s = set.tensors[k];
    if (!s.defined()) {
      s = zeros(value.shape(), {slot_dtype, value.device()});  // the only allocation: first step
      continue;
    }
    OSPREY_CHECK(s.shape() == value.shape(),
                 "{}: slot \"{}\" of \"{}\" has shape {}, but the variable has shape {}",
                 class_name_, slot_names_[k], path, s.shape().to_string(),
                 value.shape().to_string());
    if (s.dtype() != slot_dtype || !s.is_contiguous()) s = s.to(slot_dtype).contiguous();  // loaded
  }
  return set;
}

void Optimizer::apply(const std::vector<Variable>& variables) {
  if (variables.empty()) return;
  const trace::Span span(trace::Category::optimizer, class_name_.c_str(), [&](trace::Args& a) {
    a.emplace_back("variables", std::to_string(variables.size()));
  });
  const int64_t call = apply_calls_++;
  const double lr = learning_rate();
  const double inv_scale = o_.loss_scale_factor ? 1.0 / *o_.loss_scale_factor : 1.0;
  tasks_.clear();
  int64_t total = 0;
  size_t with_grad = 0;
  for (const Variable& v : variables) {
    if (!v.defined() || !v.has_grad()) continue;
    ++with_grad;
    const Tensor& value = v.value();
    const Tensor& grad = v.grad();
    OSPREY_CHECK(
        detail::is_update_dtype(value.dtype()) && detail::is_update_dtype(grad.dtype()),
        "{}: variable \"{}\" must be float64, float32, bfloat16 or float16, with a gradient "
        "of one of those. Received: value {}, gradient {}",
        class_name_, v.name(), value.describe(), grad.describe());
    OSPREY_CHECK(grad.shape() == value.shape(),
                 "{}: the gradient of \"{}\" has shape {}, but the variable has shape {}",
                 class_name_, v.name(), grad.shape().to_string(), value.shape().to_string());
    OSPREY_CHECK(value.is_contiguous() && grad.is_contiguous(),
                 "{}: variable \"{}\" and its gradient must be contiguous. Received: value strides "
                 "{}, gradient strides {}",
                 class_name_, v.name(), value.strides().to_string(), grad.strides().to_string());
    SlotSet& set = slots_for(v, call);
    if (value.numel() == 0) continue;
    detail::VarTask& t = tasks_.emplace_back();
    t.value = value.raw_data();
    t.grad = grad.raw_data();
    for (int k = 0; k < detail::kMaxSlots; ++k) {
      t.slots[k] = set.tensors[k].defined() ? set.tensors[k].raw_data() : nullptr;
    }
    t.begin = total;
    t.numel = value.numel();
    total += t.numel;
    t.grad_scale = inv_scale;
    if (o_.clipvalue) t.clipvalue = *o_.clipvalue;
    if (o_.weight_decay && set.decay) t.keep = 1.0 - *o_.weight_decay * lr;
    t.kernel = kernel(value.dtype(), grad.dtype());
    t.sum_squares = detail::sum_squares_for(grad.dtype());
  }
  OSPREY_CHECK(with_grad > 0, "{}: no gradients provided for any variable (received {} variables)",
               class_name_, variables.size());
  if (o_.clipnorm || o_.global_clipnorm) clip_gradients(inv_scale);
  run_tasks(prepare_step(lr, iterations_ + 1));
  ++iterations_;
  // The values changed in place: caches derived from them (nn::Layer::autocast) are stale now.
  for (const Variable& v : variables) {
    if (v.defined() && v.has_grad()) Variable(v).mark_modified();
  }
}

// Norms in double over fixed blocks of the flat range: piece (block k, task j) writes
// partials_[k + j] (unique: both indices only grow along the range), then each task sums its
// pieces in block order, so the result does not depend on the thread count.
void Optimizer::clip_gradients(double inv_scale) {
  if (tasks_.empty()) return;
  const int64_t total = tasks_.back().begin + tasks_.back().numel;
  const int64_t blocks = (total + detail::kNormBlock - 1) / detail::kNormBlock;
  partials_.assign(static_cast<size_t>(blocks) + tasks_.size(), 0.0);
  struct Context {
    const detail::VarTask* tasks;
    const detail::VarTask* end;
    double* partials;
    int64_t total;
  } ctx{tasks_.data(), tasks_.data() + tasks_.size(), partials_.data(), total};
  parallel_for(0, blocks, 1, [c = &ctx](int64_t kb, int64_t ke) {
    for (int64_t k = kb; k < ke; ++k) {
      const int64_t lo = k * detail::kNormBlock;
      const int64_t hi = std::min(lo + detail::kNormBlock, c->total);
      for (const detail::VarTask* t = task_at(c->tasks, c->end, lo); t != c->end && t->begin < hi;
           ++t) {
        const int64_t a = std::max(lo, t->begin) - t->begin;
        const int64_t b = std::min(hi, t->begin + t->numel) - t->begin;
        c->partials[k + (t - c->tasks)] = t->sum_squares(t->grad, a, b);
      }
    }
  });
  double global_sq = 0.0;
  for (size_t j = 0; j < tasks_.size(); ++j) {
    detail::VarTask& t = tasks_[j];
    double sq = 0.0;
    const int64_t k_last = (t.begin + t.numel - 1) / detail::kNormBlock;
    for (int64_t k = t.begin / detail::kNormBlock; k <= k_last; ++k) sq += partials_[k + j];
    sq *= inv_scale * inv_scale;  // the norm of the unscaled gradient
    if (o_.clipnorm) {
      const double c = *o_.clipnorm;  // Keras: g * c / max(|g|, c)
      t.grad_scale = inv_scale * c / std::max(std::sqrt(sq), c);
    }
    global_sq += sq;
  }
  if (o_.global_clipnorm) {
    // Keras's clip_by_global_norm: c * min(1/norm, 1/c), NaN when the norm is not finite.
    const double c = *o_.global_clipnorm;
    const double norm = std::sqrt(global_sq);
    const double scale = c * std::min(1.0 / norm, 1.0 / c) + (norm - norm);
    for (detail::VarTask& t : tasks_) t.grad_scale *= scale;
  }
}

void Optimizer::run_tasks(const void* params) {
  if (tasks_.empty()) return;
  const int64_t total = tasks_.back().begin + tasks_.back().numel;
  // One pointer captured: the std::function keeps it inline, so launching allocates nothing.
  struct Context {
    const detail::VarTask* tasks;
    const detail::VarTask* end;
    const void* params;
  } ctx{tasks_.data(), tasks_.data() + tasks_.size(), params};
  parallel_for(0, total, detail::kGrain, [c = &ctx](int64_t lo, int64_t hi) {
    for (const detail::VarTask* t = task_at(c->tasks, c->end, lo); t != c->end && t->begin < hi;
         ++t) {
      const int64_t a = std::max(lo, t->begin) - t->begin;
      const int64_t b = std::min(hi, t->begin + t->numel) - t->begin;
      t->kernel(*t, c->params, a, b);
    }
  });
}

json Optimizer::get_config() const {
  json c = {{"name", o_.name},
            {"learning_rate", o_.learning_rate.to_config()},
            {"weight_decay", to_json(o_.weight_decay)},
            {"clipnorm", to_json(o_.clipnorm)},
            {"global_clipnorm", to_json(o_.global_clipnorm)},
            {"clipvalue", to_json(o_.clipvalue)},
            {"use_ema", false},
            {"ema_momentum", 0.99},
            {"ema_overwrite_frequency", nullptr},
            {"loss_scale_factor", to_json(o_.loss_scale_factor)},
            {"gradient_accumulation_steps", nullptr}};
  add_config(c);
  return c;
}

void Optimizer::read_config(detail::ConfigReader& r, OptimizerOptions& o) {
  o.name = r.string("name", o.name);
  if (const json* lr = r.raw("learning_rate")) o.learning_rate = LearningRate::from_config(*lr);
  if (r.has("weight_decay")) o.weight_decay = r.optional_number("weight_decay");
  o.clipnorm = r.optional_number("clipnorm");
  o.global_clipnorm = r.optional_number("global_clipnorm");
  o.clipvalue = r.optional_number("clipvalue");
  o.loss_scale_factor = r.optional_number("loss_scale_factor");
  r.unsupported("use_ema", false);
  r.raw("ema_momentum");  // only meaningful with use_ema
  r.unsupported("ema_overwrite_frequency", nullptr);
  r.unsupported("gradient_accumulation_steps", nullptr);
}

std::vector<std::string> Optimizer::slot_names() const {
  std::vector<std::string> out;
  for (const auto& s : slot_names_) {
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

Tensor Optimizer::slot(std::string_view variable_path, std::string_view slot_name) const {
  const auto it = slots_.find(variable_path);
  if (it == slots_.end()) return {};
  for (int k = 0; k < detail::kMaxSlots; ++k) {
    if (!slot_names_[k].empty() && slot_names_[k] == slot_name) return it->second.tensors[k];
  }
  return {};
}

std::vector<std::pair<std::string, Tensor>> Optimizer::state(std::string_view prefix) const {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back(fmt::format("{}/iterations", prefix),
                   from_vector<int64_t>(std::vector<int64_t>{iterations_}, Shape{}));
  for (const auto& [path, set] : slots_) {
    for (int k = 0; k < detail::kMaxSlots; ++k) {
      if (slot_names_[k].empty() || !set.tensors[k].defined()) continue;
      out.emplace_back(fmt::format("{}/{}/{}", prefix, path, slot_names_[k]), set.tensors[k]);
    }
  }
  return out;
}

void Optimizer::load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                           std::string_view prefix) {
  const std::string head = fmt::format("{}/", prefix);
  std::map<std::string, SlotSet, std::less<>> loaded;
  std::optional<int64_t> iterations;
  for (const auto& [name, tensor] : state) {
    OSPREY_CHECK(name.starts_with(head), "{}: state entry \"{}\" does not start with \"{}\"",
                 class_name_, name, head);
    const std::string_view rest = std::string_view(name).substr(head.size());
    if (rest == "iterations") {
      OSPREY_CHECK(tensor.defined() && tensor.numel() == 1 && !is_floating(tensor.dtype()),
                   "{}: state entry \"{}\" must be an integer scalar. Received: {}", class_name_,
                   name, tensor.defined() ? tensor.describe() : "an undefined tensor");
      iterations = static_cast<int64_t>(tensor.item());
      continue;
    }
    const size_t cut = rest.rfind('/');
    const std::string_view slot_name = cut == std::string_view::npos ? rest : rest.substr(cut + 1);
    int k = 0;
    while (k < detail::kMaxSlots && (slot_names_[k].empty() || slot_names_[k] != slot_name)) ++k;
    OSPREY_CHECK(cut != std::string_view::npos && cut > 0 && k < detail::kMaxSlots,
                 "{}: state entry \"{}\" is not a slot of this optimizer (its slots: {})",
                 class_name_, name, fmt::join(slot_names(), ", "));
    OSPREY_CHECK(tensor.defined() && is_floating(tensor.dtype()),
                 "{}: state entry \"{}\" must be a floating-point tensor", class_name_, name);
    SlotSet& set = loaded[std::string(rest.substr(0, cut))];
    OSPREY_CHECK(!set.tensors[k].defined(), "{}: state entry \"{}\" appears twice", class_name_,
                 name);
    set.tensors[k] = tensor.clone();
  }
  OSPREY_CHECK(iterations.has_value(), "{}: the state has no \"{}iterations\" entry", class_name_,
               head);
  for (auto& [path, set] : loaded) {
    for (int k = 0; k < detail::kMaxSlots; ++k) {
      OSPREY_CHECK(slot_names_[k].empty() || set.tensors[k].defined(),
                   "{}: the state has no \"{}{}/{}\" entry", class_name_, head, path,
                   slot_names_[k]);
    }
    set.decay = uses_weight_decay(path);
  }
  slots_ = std::move(loaded);
  iterations_ = *iterations;
}

}  // namespace osprey::optim
