#include "osprey/nn/layers/transformer.h"

#include "osprey/autograd/ops.h"
#include "osprey/core/rng.h"
#include "osprey/nn/layers/options.h"

namespace osprey::nn {

TransformerBlock::TransformerBlock(std::string class_name, int64_t intermediate_dim,
                                   int64_t num_heads, TransformerOptions options, bool causal)
    : Layer(class_name, base_options(options)),
      intermediate_dim_(intermediate_dim),
      num_heads_(num_heads),
      options_(std::move(options)),
      causal_(causal) {
  OSPREY_CHECK(intermediate_dim > 0 && num_heads > 0,
               "{}: intermediate_dim and num_heads must be positive. Received: "
               "intermediate_dim={}, num_heads={}",
               class_name, intermediate_dim, num_heads);
  OSPREY_CHECK(options_.dropout >= 0 && options_.dropout < 1,
               "{}: dropout must be in [0, 1). Received: dropout={}", class_name, options_.dropout);
  OSPREY_CHECK(options_.layer_norm_epsilon > 0,
               "{}: layer_norm_epsilon must be positive. Received: {}", class_name,
               options_.layer_norm_epsilon);
  ActivationFn check(options_.activation);  // the ValueError listing the names, now
}

std::vector<std::shared_ptr<Layer>> TransformerBlock::sublayers() const {
  std::vector<std::shared_ptr<Layer>> out;
  const std::shared_ptr<Layer> all[] = {
      self_norm_,     self_attention_, self_dropout_,    cross_norm_, cross_attention_,
      cross_dropout_, ff_norm_,        ff_intermediate_, ff_output_,  ff_dropout_};
  for (const auto& l : all) {
    if (l) out.push_back(l);
  }
  return out;
}

void TransformerBlock::replace_sublayer(const std::string& name, std::shared_ptr<Layer> layer) {
  const bool replaced = replace_in_slot(self_norm_, name, layer, *this) ||
                        replace_in_slot(self_attention_, name, layer, *this) ||
                        replace_in_slot(self_dropout_, name, layer, *this) ||
                        replace_in_slot(cross_norm_, name, layer, *this) ||
                        replace_in_slot(cross_attention_, name, layer, *this) ||
                        replace_in_slot(cross_dropout_, name, layer, *this) ||
                        replace_in_slot(ff_norm_, name, layer, *this) ||
                        replace_in_slot(ff_intermediate_, name, layer, *this) ||
                        replace_in_slot(ff_output_, name, layer, *this) ||
                        replace_in_slot(ff_dropout_, name, layer, *this);
  if (!replaced) {
    std::string known;
    for (const auto& l : sublayers()) known += (known.empty() ? "" : ", ") + l->name();
    OSPREY_THROW(ValueError, "{}: no sublayer named '{}'. Sublayers: {}", this->name(), name,
                 known.empty() ? "none (the block is not built yet)" : known);
  }
  swaps_.record(name);
}

void TransformerBlock::set_path_prefix(const std::string& prefix) {
  Layer::set_path_prefix(prefix);
  for (const auto& l : sublayers()) l->set_path_prefix(path());
}

void TransformerBlock::check_input(const Shape& s) const {
  OSPREY_CHECK(s.ndim() == 3, "{}: expected [batch, steps, features]. Received: {}", name(),
               s.to_string());
  OSPREY_CHECK(s[2] % num_heads_ == 0,
               "{}: the input width {} must be a multiple of num_heads ({}), which splits it "
               "into heads. Received: {}",
               name(), s[2], num_heads_, s.to_string());
}

void TransformerBlock::build_impl(const std::vector<Shape>& shapes) {
  const size_t expected = causal_ ? 2 : 1;
  OSPREY_CHECK(!shapes.empty() && shapes.size() <= expected, "{}: expected {}. Received {} inputs",
               name(),
               causal_ ? "[decoder_sequence] or [decoder_sequence, encoder_sequence]" : "one input",
               shapes.size());
  const Shape& x = shapes[0];
  check_input(x);
  const int64_t d = x[2];
  const std::string dtype = dtype_policy().name();
  const Initializer out_init = options_.output_kernel_initializer.defined()
                                   ? options_.output_kernel_initializer
                                   : options_.kernel_initializer;
  const auto norm = [&](const char* n) {
    return std::make_shared<LayerNormalization>(
        LayerNormalizationOptions{.epsilon = options_.layer_norm_epsilon,
                                  .center = options_.use_bias,
                                  .name = n,
                                  .dtype = dtype});
  };
  const auto attention = [&](const char* n) {
    return std::make_shared<MultiHeadAttention>(
        num_heads_, d / num_heads_,
        MultiHeadAttentionOptions{.use_bias = options_.use_bias,
                                  .kernel_initializer = options_.kernel_initializer,
                                  .bias_initializer = options_.bias_initializer,
                                  .name = n,
                                  .dtype = dtype});
  };
  const auto dropout = [&](const char* n) {
    return std::make_shared<Dropout>(options_.dropout, DropoutOptions{.name = n, .dtype = dtype});
  };
  const auto dense = [&](const char* n, int64_t units, const std::string& activation,
                         const Initializer& init) {
    return std::make_shared<Dense>(units, activation,
                                   DenseOptions{.use_bias = options_.use_bias,
                                                .kernel_initializer = init,
                                                .bias_initializer = options_.bias_initializer,
                                                .name = n,
                                                .dtype = dtype});
  };
  // A sublayer swapped before a save (quant::quantize's) is made from its saved config instead.
  const auto made = [&](auto layer) { return swaps_.resolve(std::move(layer), name()); };
  self_norm_ = made(norm("self_attention_layer_norm"));
  self_attention_ = made(attention("self_attention"));
  self_dropout_ = made(dropout("self_attention_dropout"));
  if (shapes.size() == 2) {
    OSPREY_CHECK(shapes[1].ndim() == 3 && shapes[1][0] == x[0],
                 "{}: encoder_sequence must be [batch, steps, features] with the decoder's batch. "
                 "Received: decoder {}, encoder {}",
                 name(), x.to_string(), shapes[1].to_string());
    cross_norm_ = made(norm("cross_attention_layer_norm"));
    cross_attention_ = made(attention("cross_attention"));
    cross_dropout_ = made(dropout("cross_attention_dropout"));
  }
  ff_norm_ = made(norm("feedforward_layer_norm"));
  ff_intermediate_ =
      made(std::shared_ptr<Layer>(dense("feedforward_intermediate_dense", intermediate_dim_,
                                        options_.activation, options_.kernel_initializer)));
  ff_output_ = made(std::shared_ptr<Layer>(
      dense("feedforward_output_dense", d, "linear", options_.kernel_initializer)));
  ff_dropout_ = made(dropout("feedforward_dropout"));
  for (const auto& l : sublayers()) l->set_path_prefix(path());
  // Weights in a fixed order (the model's variables() order), and made now so that loading
  // or set_weights() can follow build() without a call.
  self_norm_->build({x});
  self_attention_->build({x, x});
  if (cross_attention_) {
    cross_norm_->build({x});
    cross_attention_->build({x, shapes[1]});
  }
  ff_norm_->build({x});
  ff_intermediate_->build({x});
  ff_output_->build({Shape{x[0], x[1], intermediate_dim_}});
  // The residual projections' own initializer (GPT-2's scaled one) when given.
  if (options_.output_kernel_initializer.defined()) {
    for (const auto& l :
         {std::shared_ptr<Layer>(self_attention_), std::shared_ptr<Layer>(ff_output_)}) {
      for (Variable w : l->variables()) {
        // An int8 kernel (a quantized sublayer rebuilt for a load) is not initialized: the
        // load fills it.
        if (!w.name().ends_with("attention_output/kernel") && !w.name().ends_with("dense/kernel"))
          continue;
        if (!is_floating(w.dtype())) continue;
        w.set_value(out_init(w.shape(), w.dtype(), next_seed()));
      }
    }
  }
}

Shape TransformerBlock::compute_output_shape(const std::vector<Shape>& input_shapes) {
  OSPREY_CHECK(!input_shapes.empty(), "{}: expected an input", name());
  check_input(input_shapes[0]);
  return input_shapes[0];
}

template <class F>
Variable TransformerBlock::residual(const Variable& x, LayerNormalization& norm, Dropout& dropout,
                                    bool training, F&& f) {
  if (options_.normalize_first) return autograd::add(x, dropout(f(norm(x)), training));
  return norm(autograd::add(x, dropout(f(x), training)));
}

template <class SelfAttention>
Variable TransformerBlock::run(const Variable& x, const Variable& encoder, bool training,
                               SelfAttention&& self) {
  check_input(x.shape());
  OSPREY_CHECK(encoder.defined() == (cross_attention_ != nullptr),
               "{}: the block was built {} an encoder_sequence; call it the same way", name(),
               cross_attention_ ? "with" : "without");
  Variable h = residual(x, *self_norm_, *self_dropout_, training, self);
  if (cross_attention_) {
    h = residual(h, *cross_norm_, *cross_dropout_, training, [&](const Variable& q) {
      return cross_attention_->attend(q, encoder, {}, {}, training);
    });
  }
  return residual(h, *ff_norm_, *ff_dropout_, training, [&](const Variable& y) {
    return (*ff_output_)((*ff_intermediate_)(y, training), training);
  });
}

Variable TransformerBlock::call(const std::vector<Variable>& inputs, bool training) {
  OSPREY_CHECK(!inputs.empty() && inputs.size() <= (causal_ ? 2u : 1u),
               "{}: expected {}. Received {} inputs", name(),
               causal_ ? "[decoder_sequence] or [decoder_sequence, encoder_sequence]" : "one input",
               inputs.size());
  const Variable encoder = inputs.size() == 2 ? inputs[1] : Variable();
  return run(inputs[0], encoder, training, [&](const Variable& q) {
    return self_attention_->attend(q, q, {}, {.use_causal_mask = causal_}, training);
  });
}

nlohmann::json TransformerBlock::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["intermediate_dim"] = intermediate_dim_;
  c["num_heads"] = num_heads_;
  c["dropout"] = options_.dropout;
  c["activation"] = options_.activation;
  c["layer_norm_epsilon"] = options_.layer_norm_epsilon;
  c["normalize_first"] = options_.normalize_first;
  c["use_bias"] = options_.use_bias;
  c["kernel_initializer"] = options_.kernel_initializer.to_json();
  c["bias_initializer"] = options_.bias_initializer.to_json();
  c["output_kernel_initializer"] = options_.output_kernel_initializer.defined()
                                       ? options_.output_kernel_initializer.to_json()
                                       : nlohmann::json();
  swaps_.write(c, sublayers());
  return c;
}

TransformerOptions TransformerBlock::read_options(const nlohmann::json& c) {
  TransformerOptions o;
  read_base_options(c, o);
  o.dropout = c.value("dropout", 0.0);
  o.activation = c.value("activation", std::string("relu"));
  o.layer_norm_epsilon = c.value("layer_norm_epsilon", 1e-5);
  o.normalize_first = c.value("normalize_first", false);
  o.use_bias = c.value("use_bias", true);
  if (c.contains("kernel_initializer"))
    o.kernel_initializer = initializers::from_json(c["kernel_initializer"]);
  if (c.contains("bias_initializer"))
    o.bias_initializer = initializers::from_json(c["bias_initializer"]);
  if (c.contains("output_kernel_initializer") && !c["output_kernel_initializer"].is_null())
    o.output_kernel_initializer = initializers::from_json(c["output_kernel_initializer"]);
  return o;
}

TransformerEncoder::TransformerEncoder(int64_t intermediate_dim, int64_t num_heads,
                                       TransformerOptions options)
    : TransformerBlock("TransformerEncoder", intermediate_dim, num_heads, std::move(options),
                       false) {}

std::shared_ptr<Layer> TransformerEncoder::from_config(const nlohmann::json& c) {
  auto block = std::make_shared<TransformerEncoder>(
      c.at("intermediate_dim").get<int64_t>(), c.at("num_heads").get<int64_t>(), read_options(c));
  block->swaps_.read(c, block->name());
  return block;
}

TransformerDecoder::TransformerDecoder(int64_t intermediate_dim, int64_t num_heads,
                                       TransformerOptions options)
    : TransformerBlock("TransformerDecoder", intermediate_dim, num_heads, std::move(options),
                       true) {}

std::shared_ptr<Layer> TransformerDecoder::from_config(const nlohmann::json& c) {
  auto block = std::make_shared<TransformerDecoder>(
      c.at("intermediate_dim").get<int64_t>(), c.at("num_heads").get<int64_t>(), read_options(c));
  block->swaps_.read(c, block->name());
  return block;
}

Variable TransformerDecoder::call_cached(const Variable& x, AttentionCache& cache,
                                         const Variable& encoder) {
  autograd::NoGradGuard no_grad;
  if (!built()) {
    build(encoder.defined() ? std::vector<Shape>{x.shape(), encoder.shape()}
                            : std::vector<Shape>{x.shape()});
  }
  return run(x, encoder, false,
             [&](const Variable& q) { return self_attention()->attend_cached(q, cache); });
}

}  // namespace osprey::nn
