#include "osprey/testing/layer_conformance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/gradcheck.h"

namespace osprey::testing {

using autograd::Variable;

namespace {

struct Checker {
  ConformanceResult result;
  void expect(bool cond, const std::string& what) {
    if (cond) return;
    result.ok = false;
    result.message += (result.message.empty() ? "" : "\n") + what;
  }
};

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector<double>()) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

// max |a - b| / max(1, |b|), or infinity when the shapes differ.
double max_difference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  double worst = 0.0;
  for (size_t i = 0; i < va.size(); ++i)
    worst = std::max(worst, std::fabs(va[i] - vb[i]) / std::max(1.0, std::fabs(vb[i])));
  return worst;
}

std::vector<Variable> make_inputs(const std::vector<Shape>& shapes,
                                  const ConformanceExpectations& e, DType dtype,
                                  bool requires_grad) {
  std::vector<Variable> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const uint64_t seed = e.seed + 17 * i;
    Tensor t = e.make_input ? e.make_input(static_cast<int>(i), shapes[i], seed)
                            : random_normal(shapes[i], {.seed = seed, .dtype = dtype});
    out.emplace_back(t, requires_grad && is_floating(t.dtype()));
  }
  return out;
}

std::vector<Shape> with_symbolic_batch(std::vector<Shape> shapes) {
  for (Shape& s : shapes) {
    if (s.ndim() > 0) s[0] = -1;
  }
  return shapes;
}

// L = sum(y * r) for fixed random r: a plain sum is degenerate for normalization layers (its
// gradient with respect to gamma is zero) and for softmax (a constant).
Variable weighted_sum(const Variable& y, uint64_t seed) {
  const Tensor r = random_normal(y.shape(), {.seed = seed, .dtype = y.dtype()});
  return autograd::sum(autograd::mul(y, Variable(r)));
}

void check_weights(Checker& c, nn::Layer& layer, const ConformanceExpectations& e) {
  std::vector<std::string> names, expected;
  for (const nn::Weight& w : layer.own_weights()) names.push_back(w.name);
  for (const auto& [name, shape] : e.weights) expected.push_back(name);
  std::sort(names.begin(), names.end());
  c.expect(names == expected, fmt::format("weight names: got [{}], expected [{}]",
                                          fmt::join(names, ", "), fmt::join(expected, ", ")));
  for (const nn::Weight& w : layer.own_weights()) {
    auto it = e.weights.find(w.name);
    if (it != e.weights.end()) {
      c.expect(w.variable.shape() == it->second,
               fmt::format("weight '{}': shape {}, expected {}", w.name,
                           w.variable.shape().to_string(), it->second.to_string()));
    }
    const std::string path = layer.name() + "/" + w.name;
    c.expect(w.variable.name() == path,
             fmt::format("weight path '{}', expected '{}'", w.variable.name(), path));
  }
  layer.set_path_prefix("conformance_model");
  for (const nn::Weight& w : layer.own_weights()) {
    const std::string path = "conformance_model/" + layer.name() + "/" + w.name;
    c.expect(w.variable.name() == path,
             fmt::format("after set_path_prefix: weight path '{}', expected '{}'",
                         w.variable.name(), path));
  }
  layer.set_path_prefix("");
  if (e.params >= 0) {
    c.expect(layer.count_params() == e.params,
             fmt::format("count_params() = {}, expected {}", layer.count_params(), e.params));
  }
  int64_t non_trainable = 0;
  for (const Variable& v : layer.non_trainable_variables()) non_trainable += v.numel();
  c.expect(non_trainable == e.non_trainable_params,
           fmt::format("non-trainable parameters: {}, expected {}", non_trainable,
                       e.non_trainable_params));
}

void check_round_trip(Checker& c, nn::Layer& layer, const std::vector<Shape>& shapes,
                      const std::vector<Variable>& x, const Variable& y) {
  const nlohmann::json saved = nlohmann::json::parse(nn::serialize_layer(layer).dump());
  std::shared_ptr<nn::Layer> clone =
      nn::layer_from_config(saved.at("class_name").get<std::string>(), saved.at("config"));
  c.expect(clone->class_name() == layer.class_name(),
           "round trip: class name " + clone->class_name());
  c.expect(clone->get_config() == saved.at("config"),
           fmt::format("round trip: config {} differs from the saved {}",
                       clone->get_config().dump(), saved.at("config").dump()));
  clone->build(shapes);
  // Every weight, the sublayers' too (a wrapper such as Bidirectional owns none itself).
  const std::vector<Variable> from = layer.variables();
  const std::vector<Variable> to = clone->variables();
  c.expect(from.size() == to.size(),
           fmt::format("round trip: {} weights, expected {}", to.size(), from.size()));
  if (from.size() != to.size()) return;
  for (size_t i = 0; i < from.size(); ++i) Variable(to[i]).set_value(from[i].value().clone());
  autograd::NoGradGuard no_grad;
  const Variable y2 = (*clone)(x, false);
  const double diff = max_difference(y2.value(), y.value());
  c.expect(diff <= 1e-6, fmt::format("round trip: the rebuilt layer's output differs by {}", diff));
}

void check_training_step(Checker& c, nn::Layer& layer, const std::vector<Shape>& shapes,
                         const ConformanceExpectations& e) {
  const std::vector<Variable> x = make_inputs(shapes, e, layer.compute_dtype(), true);
  for (Variable v : layer.variables()) v.zero_grad();
  const Variable loss0 = weighted_sum(layer(x, true), e.seed + 1);
  loss0.backward();
  c.expect(std::isfinite(loss0.item()),
           fmt::format("training: loss {} is not finite", loss0.item()));
  const std::vector<Variable> trainable = layer.trainable_variables();
  for (const Variable& v : trainable) {
    const bool has = v.has_grad();
    c.expect(has, "training: no gradient for " + v.name());
    if (has) c.expect(all_finite(v.grad()), "training: non-finite gradient for " + v.name());
  }
  for (const Variable& v : layer.non_trainable_variables()) {
    c.expect(!v.has_grad(), "training: the non-trainable " + v.name() + " received a gradient");
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].requires_grad()) {
      c.expect(x[i].has_grad() && all_finite(x[i].grad()),
               fmt::format("training: bad gradient for input {}", i));
    }
  }
  if (trainable.empty()) return;
  {
    autograd::NoGradGuard no_grad;
    for (const Variable& v : trainable) {
      if (!v.has_grad()) return;
      Tensor w = v.value();
      w.copy_(osprey::sub(w, osprey::mul(v.grad(), 0.01)));
    }
  }
  const Variable loss1 = weighted_sum(layer(x, true), e.seed + 1);
  c.expect(std::isfinite(loss1.item()) && loss1.item() != loss0.item(),
           fmt::format("training: an SGD step left the loss at {} (before: {})", loss1.item(),
                       loss0.item()));
  for (Variable v : layer.variables()) v.zero_grad();
}

void check_gradients(Checker& c, nn::Layer& layer, const std::vector<Shape>& shapes,
                     const ConformanceExpectations& e) {
  std::vector<Variable> x = make_inputs(shapes, e, DType::float64, true);
  const bool any =
      std::any_of(x.begin(), x.end(), [](const Variable& v) { return v.requires_grad(); });
  if (!any) return;
  const bool training = e.deterministic;
  const GradcheckResult g =
      gradcheck([&](const std::vector<Variable>& v) { return layer(v, training); }, x);
  c.expect(g.ok, fmt::format("gradcheck (training={}): {}", training, g.message));
  for (Variable v : layer.variables()) v.zero_grad();
}

}  // namespace

ConformanceResult check_layer_conformance(const LayerMaker& make,
                                          const std::vector<Shape>& input_shapes,
                                          const ConformanceExpectations& e) {
  Checker c;
  try {
    std::shared_ptr<nn::Layer> layer = make();
    c.expect(!layer->built(), "the layer was built before its first call");
    const std::vector<Variable> x = make_inputs(input_shapes, e, layer->compute_dtype(), false);
    Variable y;
    {
      autograd::NoGradGuard no_grad;
      y = (*layer)(x, false);
    }
    c.expect(layer->built(), "the layer is not built after its first call");
    c.expect(y.shape() == e.output_shape,
             fmt::format("output shape {}, expected {}", y.shape().to_string(),
                         e.output_shape.to_string()));
    const Shape computed = layer->compute_output_shape(input_shapes);
    c.expect(computed == e.output_shape,
             fmt::format("compute_output_shape: {}, expected {}", computed.to_string(),
                         e.output_shape.to_string()));
    Shape symbolic_expected = e.output_shape;
    if (symbolic_expected.ndim() > 0) symbolic_expected[0] = -1;
    const Shape symbolic = layer->compute_output_shape(with_symbolic_batch(input_shapes));
    c.expect(symbolic == symbolic_expected,
             fmt::format("compute_output_shape with batch -1: {}, expected {}",
                         symbolic.to_string(), symbolic_expected.to_string()));
    check_weights(c, *layer, e);
    check_round_trip(c, *layer, input_shapes, x, y);
    check_training_step(c, *layer, input_shapes, e);
    if (layer->compute_dtype() == DType::float64 && e.gradcheck)
      check_gradients(c, *layer, input_shapes, e);
  } catch (const std::exception& ex) {
    c.expect(false, std::string("threw: ") + ex.what());
  }
  return c.result;
}

ConformanceResult check_layer_conformance(const LayerMaker& make, const Shape& input_shape,
                                          const ConformanceExpectations& e) {
  return check_layer_conformance(make, std::vector<Shape>{input_shape}, e);
}

}  // namespace osprey::testing
