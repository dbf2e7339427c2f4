#include "osprey/nn/layers/multi_head_attention.h"

#include "osprey/autograd/ops.h"
#include "osprey/core/rng.h"
#include "osprey/nn/layers/masking.h"
#include "osprey/nn/layers/options.h"
#include "osprey/tensor/factory.h"

namespace osprey::nn {

MultiHeadAttention::MultiHeadAttention(int64_t num_heads, int64_t key_dim,
                                       MultiHeadAttentionOptions options)
    : MultiHeadAttention("MultiHeadAttention", num_heads, num_heads, key_dim, std::move(options)) {}

MultiHeadAttention::MultiHeadAttention(std::string class_name, int64_t num_heads,
                                       int64_t num_kv_heads, int64_t key_dim,
                                       MultiHeadAttentionOptions options)
    : Layer(std::move(class_name), base_options(options)),
      num_heads_(num_heads),
      num_kv_heads_(num_kv_heads),
      key_dim_(key_dim),
      options_(std::move(options)) {
  OSPREY_CHECK(num_heads > 0,
               "MultiHeadAttention: num_heads must be positive. Received: num_heads={}", num_heads);
  OSPREY_CHECK(key_dim > 0, "MultiHeadAttention: key_dim must be positive. Received: key_dim={}",
               key_dim);
  OSPREY_CHECK(options_.value_dim >= 0 && options_.output_shape >= 0,
               "MultiHeadAttention: value_dim and output_shape must not be negative. Received: "
               "value_dim={}, output_shape={}",
               options_.value_dim, options_.output_shape);
  OSPREY_CHECK(options_.dropout >= 0 && options_.dropout < 1,
               "MultiHeadAttention: dropout must be in [0, 1). Received: dropout={}",
               options_.dropout);
}

void MultiHeadAttention::check_shapes(const Shape& q, const Shape& v, const Shape& k) const {
  const std::pair<const char*, const Shape*> inputs[] = {{"query", &q}, {"value", &v}, {"key", &k}};
  for (const auto& input : inputs) {
    OSPREY_CHECK(input.second->ndim() == 3, "{}: {} must be [batch, steps, features]. Received: {}",
                 name(), input.first, input.second->to_string());
  }
  OSPREY_CHECK(q[0] == v[0] && v[0] == k[0],
               "{}: query, value and key must have one batch size. Received: query {}, value {}, "
               "key {}",
               name(), q.to_string(), v.to_string(), k.to_string());
  OSPREY_CHECK(v[1] == k[1],
               "{}: key and value must have the same number of steps. Received: value {}, key {}",
               name(), v.to_string(), k.to_string());
}

std::array<Shape, MultiHeadAttention::kNumProjections> MultiHeadAttention::kernel_shapes(
    const std::vector<Shape>& shapes) const {
  OSPREY_CHECK(shapes.size() == 2 || shapes.size() == 3,
               "{}: expected [query, value] or [query, value, key]. Received {} inputs", name(),
               shapes.size());
  const Shape& q = shapes[0];
  const Shape& v = shapes[1];
  const Shape& k = shapes.size() == 3 ? shapes[2] : shapes[1];
  check_shapes(q, v, k);
  return {Shape{q[2], num_heads_, key_dim_}, Shape{k[2], num_kv_heads_, key_dim_},
          Shape{v[2], num_kv_heads_, value_dim()},
          Shape{num_heads_, value_dim(), output_dim(q[2])}};
}

Shape MultiHeadAttention::bias_shape(Projection p, const Shape& kernel) {
  return p == Projection::output ? Shape{kernel[2]} : Shape{kernel[1], kernel[2]};
}

MultiHeadAttentionOptions MultiHeadAttention::options_of_built(
    const MultiHeadAttention& attention) {
  OSPREY_CHECK(attention.built(),
               "quantize: layer '{}' is not built yet; call the model on data (or build it) first",
               attention.name());
  MultiHeadAttentionOptions o = attention.options();
  o.name = attention.name();
  o.trainable = attention.trainable();
  return o;
}

void MultiHeadAttention::build_impl(const std::vector<Shape>& shapes) {
  const std::array<Shape, kNumProjections> kernels = kernel_shapes(shapes);
  Variable* weights[kNumProjections][2] = {{&query_kernel_, &query_bias_},
                                           {&key_kernel_, &key_bias_},
                                           {&value_kernel_, &value_bias_},
                                           {&output_kernel_, &output_bias_}};
  for (int i = 0; i < kNumProjections; ++i) {
    const auto p = static_cast<Projection>(i);
    const std::string prefix = projection_name(p);
    *weights[i][0] = add_weight(prefix + "/kernel", kernels[i], options_.kernel_initializer, true,
                                options_.kernel_regularizer);
    *weights[i][1] = options_.use_bias
                         ? add_weight(prefix + "/bias", bias_shape(p, kernels[i]),
                                      options_.bias_initializer, true, options_.bias_regularizer)
                         : Variable();
  }
}

Shape MultiHeadAttention::compute_output_shape(const std::vector<Shape>& shapes) {
  OSPREY_CHECK(shapes.size() == 2 || shapes.size() == 3,
               "{}: expected [query, value] or [query, value, key]. Received {} inputs", name(),
               shapes.size());
  check_shapes(shapes[0], shapes[1], shapes.size() == 3 ? shapes[2] : shapes[1]);
  return {shapes[0][0], shapes[0][1],
          options_.output_shape > 0 ? options_.output_shape : shapes[0][2]};
}

int64_t MultiHeadAttention::output_dim(int64_t query_dim) const {
  return options_.output_shape > 0 ? options_.output_shape : query_dim;
}

const char* MultiHeadAttention::projection_name(Projection p) {
  switch (p) {
    case Projection::query:
      return "query";
    case Projection::key:
      return "key";
    case Projection::value:
      return "value";
    case Projection::output:
      return "attention_output";
  }
  return "";
}

Shape MultiHeadAttention::matrix_shape(Projection p, const Shape& kernel) {
  return p == Projection::output ? Shape{kernel[0] * kernel[1], kernel[2]}
                                 : Shape{kernel[0], kernel[1] * kernel[2]};
}

const Variable& MultiHeadAttention::kernel(Projection p) const {
  const Variable* k[] = {&query_kernel_, &key_kernel_, &value_kernel_, &output_kernel_};
  return *k[static_cast<int>(p)];
}

const Variable& MultiHeadAttention::bias(Projection p) const {
  const Variable* b[] = {&query_bias_, &key_bias_, &value_bias_, &output_bias_};
  return *b[static_cast<int>(p)];
}

Variable MultiHeadAttention::linear(const Variable& x, Projection p, bool /*training*/) {
  const Variable& k = kernel(p);
  const Variable& b = bias(p);
  const Shape m = matrix_shape(p, k.shape());
  const Variable flat_bias = b.defined() ? autograd::reshape(autocast(b), {m[1]}) : Variable();
  return autograd::linear(x, autograd::reshape(autocast(k), m), flat_bias);
}

Variable MultiHeadAttention::project(const Variable& x, Projection p, bool training) {
  const int64_t b = x.shape()[0], t = x.shape()[1];
  const int64_t heads = p == Projection::query ? num_heads_ : num_kv_heads_;
  const int64_t width = p == Projection::value ? value_dim() : key_dim_;
  // The features this projection was built for: query, value, key (default: value) inputs.
  const std::vector<Shape>& built_for = build_input_shapes();
  const size_t input =
      p == Projection::query ? 0 : (p == Projection::key && built_for.size() == 3 ? 2 : 1);
  const int64_t in = built_for[input][2];
  OSPREY_CHECK(x.shape()[2] == in,
               "{}: an input has {} features; the layer was built for {}. Received: {}", name(),
               x.shape()[2], in, x.shape().to_string());
  const Variable y = linear(x, p, training);
  return autograd::permute(autograd::reshape(y, {b, t, heads, width}), {0, 2, 1, 3});
}

MultiHeadAttention::Result MultiHeadAttention::run(const Variable& query_in,
                                                   const Variable& value_in, const Variable& key_in,
                                                   const CallOptions& call, bool training,
                                                   bool with_scores) {
  OSPREY_CHECK(query_in.defined() && value_in.defined(), "{}: query and value are required",
               name());
  const Variable& key_given = key_in.defined() ? key_in : value_in;
  check_shapes(query_in.shape(), value_in.shape(), key_given.shape());
  check_input_masks({query_in, value_in, key_given});
  if (!built()) build({query_in.shape(), value_in.shape(), key_given.shape()});
  const Variable query = cast_input(query_in), value = cast_input(value_in),
                 key = cast_input(key_given);
  AttentionOptions o{.causal = call.use_causal_mask || options_.use_causal_mask};
  // Padded keys and values (their masks) are never attended to. A padded query's output is not
  // meaningful (Keras masks its whole row; here it attends to the real keys) and keeps the
  // query's mask, so whatever follows skips it.
  o.key_padding_mask = merge_masks({value_in, key_given});
  if (call.attention_mask.defined()) {
    const Tensor& m = call.attention_mask;  // [batch, Tq, Tk]: one mask for every head
    o.mask = m.ndim() == 3 ? m.view({m.size(0), 1, m.size(1), m.size(2)}) : m;
  }
  if (training && options_.dropout > 0) {
    o.dropout = options_.dropout;
    o.seed = options_.seed ? *options_.seed + calls_++ : next_seed();
  }
  const Variable q = project(query, Projection::query, training);
  const Variable k = project(key, Projection::key, training);
  const Variable v = project(value, Projection::value, training);
  Result r;
  Variable heads;  // [batch, heads, Tq, value_dim]
  if (with_scores) {
    auto [out, weights] = autograd::scaled_dot_product_attention_with_weights(q, k, v, o);
    heads = out;
    r.scores = weights;
  } else {
    heads = autograd::scaled_dot_product_attention(q, k, v, o);
  }
  r.output = merge_heads(heads, training);
  if (query_in.mask().defined()) r.output.set_mask(query_in.mask());
  return r;
}

Variable MultiHeadAttention::cast_input(const Variable& x) const {
  return dtype_policy().casts_input(x.dtype()) ? autograd::cast(x, compute_dtype()) : x;
}

Variable MultiHeadAttention::merge_heads(const Variable& heads, bool training) {
  const int64_t b = heads.shape()[0], t = heads.shape()[2];
  const Variable merged =
      autograd::reshape(autograd::permute(heads, {0, 2, 1, 3}), {b, t, num_heads_ * value_dim()});
  return linear(merged, Projection::output, training);
}

AttentionCache MultiHeadAttention::make_cache(int64_t batch, int64_t capacity) const {
  OSPREY_CHECK(built(), "{}: make_cache() needs the layer built (call it on a sequence first)",
               name());
  OSPREY_CHECK(batch > 0 && capacity > 0,
               "{}: a cache needs a positive batch and capacity. Received: batch={}, capacity={}",
               name(), batch, capacity);
  return {zeros({batch, num_kv_heads_, capacity, key_dim_}, {.dtype = compute_dtype()}),
          zeros({batch, num_kv_heads_, capacity, value_dim()}, {.dtype = compute_dtype()}), 0};
}

Variable MultiHeadAttention::attend_cached(const Variable& x_in, AttentionCache& cache) {
  autograd::NoGradGuard no_grad;
  check_shapes(x_in.shape(), x_in.shape(), x_in.shape());
  if (!built()) build({x_in.shape(), x_in.shape()});
  const int64_t b = x_in.shape()[0], t = x_in.shape()[1], start = cache.length;
  OSPREY_CHECK(cache.key.defined() && cache.key.size(0) == b,
               "{}: the cache holds a batch of {}; the input has {}. Received: {}", name(),
               cache.key.defined() ? cache.key.size(0) : 0, b, x_in.shape().to_string());
  OSPREY_CHECK(start + t <= cache.capacity(),
               "{}: {} new positions after {} overflow the cache's capacity of {}", name(), t,
               start, cache.capacity());
  const Variable x = cast_input(x_in);
  const Variable q = project(x, Projection::query, false);
  cache.key.narrow(2, start, t).copy_(project(x, Projection::key, false).value());
  cache.value.narrow(2, start, t).copy_(project(x, Projection::value, false).value());
  cache.length = start + t;
  const Variable k(cache.key.narrow(2, 0, cache.length));
  const Variable v(cache.value.narrow(2, 0, cache.length));
  AttentionOptions o;
  if (start == 0) {
    o.causal = true;   // top-left aligned: the square case
  } else if (t > 1) {  // query i sits at position start + i and sees keys j <= start + i
    Tensor mask = zeros({t, cache.length}, {.dtype = DType::boolean});
    auto* m = mask.data<bool>();
    for (int64_t i = 0; i < t; ++i) {
      for (int64_t j = 0; j <= start + i; ++j) m[i * cache.length + j] = true;
    }
    o.mask = mask;
  }  // one new token sees every cached key
  return merge_heads(autograd::scaled_dot_product_attention(q, k, v, o), false);
}

Variable MultiHeadAttention::attend(const Variable& query, const Variable& value,
                                    const Variable& key, const CallOptions& call, bool training) {
  return run(query, value, key, call, training, false).output;
}

MultiHeadAttention::Result MultiHeadAttention::attend_with_scores(const Variable& query,
                                                                  const Variable& value,
                                                                  const Variable& key,
                                                                  const CallOptions& call,
                                                                  bool training) {
  return run(query, value, key, call, training, true);
}

Variable MultiHeadAttention::call(const std::vector<Variable>& inputs, bool training) {
  OSPREY_CHECK(inputs.size() == 2 || inputs.size() == 3,
               "{}: expected [query, value] or [query, value, key]. Received {} inputs", name(),
               inputs.size());
  return run(inputs[0], inputs[1], inputs.size() == 3 ? inputs[2] : Variable(), {}, training, false)
      .output;
}

nlohmann::json MultiHeadAttention::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["num_heads"] = num_heads_;
  c["key_dim"] = key_dim_;
  c["value_dim"] = value_dim();
  c["dropout"] = options_.dropout;
  c["output_shape"] =
      options_.output_shape > 0 ? nlohmann::json(options_.output_shape) : nlohmann::json();
  c["use_causal_mask"] = options_.use_causal_mask;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json();
  write_kernel_bias_config(c, options_);
  return c;
}

MultiHeadAttentionOptions MultiHeadAttention::read_options(const nlohmann::json& c) {
  MultiHeadAttentionOptions o;
  read_base_options(c, o);
  read_kernel_bias_config(c, o);
  o.value_dim =
      c.contains("value_dim") && !c["value_dim"].is_null() ? c["value_dim"].get<int64_t>() : 0;
  o.dropout = c.value("dropout", 0.0);
  if (c.contains("output_shape") && !c["output_shape"].is_null()) {
    const nlohmann::json& s = c["output_shape"];  // Keras writes an int or a 1-tuple
    o.output_shape = s.is_array() ? s.at(0).get<int64_t>() : s.get<int64_t>();
  }
  o.use_causal_mask = c.value("use_causal_mask", false);
  if (c.contains("seed") && !c["seed"].is_null()) o.seed = c["seed"].get<uint64_t>();
  return o;
}

std::shared_ptr<Layer> MultiHeadAttention::from_config(const nlohmann::json& c) {
  return std::make_shared<MultiHeadAttention>(c.at("num_heads").get<int64_t>(),
                                              c.at("key_dim").get<int64_t>(), read_options(c));
}

namespace {

MultiHeadAttentionOptions mha_options(GroupedQueryAttentionOptions o) {
  return {.dropout = o.dropout,
          .use_bias = o.use_bias,
          .kernel_initializer = std::move(o.kernel_initializer),
          .bias_initializer = std::move(o.bias_initializer),
          .kernel_regularizer = o.kernel_regularizer,
          .bias_regularizer = o.bias_regularizer,
          .seed = o.seed,
          .name = std::move(o.name),
          .dtype = std::move(o.dtype),
          .trainable = o.trainable};
}

int64_t checked_kv_heads(int64_t num_query_heads, int64_t num_key_value_heads) {
  OSPREY_CHECK(
      num_key_value_heads > 0 && num_query_heads > 0 && num_query_heads % num_key_value_heads == 0,
      "GroupedQueryAttention: num_query_heads ({}) must be a positive multiple of "
      "num_key_value_heads ({}): each key/value head serves a group of query heads",
      num_query_heads, num_key_value_heads);
  return num_key_value_heads;
}

}  // namespace

GroupedQueryAttention::GroupedQueryAttention(int64_t head_dim, int64_t num_query_heads,
                                             int64_t num_key_value_heads,
                                             GroupedQueryAttentionOptions options)
    : MultiHeadAttention("GroupedQueryAttention", num_query_heads,
                         checked_kv_heads(num_query_heads, num_key_value_heads), head_dim,
                         mha_options(std::move(options))) {}

nlohmann::json GroupedQueryAttention::get_config() const {
  // MultiHeadAttention's fields, renamed as Keras's GroupedQueryAttention names them.
  nlohmann::json c = MultiHeadAttention::get_config();
  for (const char* key : {"num_heads", "key_dim", "value_dim", "output_shape", "use_causal_mask"})
    c.erase(key);
  c["head_dim"] = key_dim();
  c["num_query_heads"] = num_heads();
  c["num_key_value_heads"] = num_key_value_heads();
  return c;
}

std::shared_ptr<Layer> GroupedQueryAttention::from_config(const nlohmann::json& c) {
  MultiHeadAttentionOptions m;
  read_kernel_bias_config(c, m);
  GroupedQueryAttentionOptions o{.dropout = c.value("dropout", 0.0),
                                 .use_bias = m.use_bias,
                                 .kernel_initializer = m.kernel_initializer,
                                 .bias_initializer = m.bias_initializer,
                                 .kernel_regularizer = m.kernel_regularizer,
                                 .bias_regularizer = m.bias_regularizer};
  read_base_options(c, o);
  if (c.contains("seed") && !c["seed"].is_null()) o.seed = c["seed"].get<uint64_t>();
  return std::make_shared<GroupedQueryAttention>(c.at("head_dim").get<int64_t>(),
                                                 c.at("num_query_heads").get<int64_t>(),
                                                 c.at("num_key_value_heads").get<int64_t>(), o);
}

}  // namespace osprey::nn
