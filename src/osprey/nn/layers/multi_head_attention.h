// MultiHeadAttention, as keras.layers.MultiHeadAttention: query, key and value projected to
// num_heads heads (key_dim wide for query and key, value_dim for value), scaled dot-product
// attention per head (autograd::scaled_dot_product_attention: one tiled op, memory linear in the
// sequence length), and the heads projected back to output_shape (the query's width by default).
// Weights as Keras 3 names and shapes them, so a Keras model's weights load one for one:
//   query/kernel [query_dim, heads, key_dim], query/bias [heads, key_dim], the same for key/ and
//   value/ (value_dim), attention_output/kernel [heads, value_dim, out], attention_output/bias
//   [out].
// Called with [query, value] or [query, value, key] (key defaults to value). Keras's call
// arguments are attend()'s CallOptions; in a Sequential or functional model, where a layer gets
// only tensors, `use_causal_mask` may also be set once in the options (osprey's addition).
// The four projections run through one protected hook, linear(), which quant/ overrides in the
// int8 and float8 forms it swaps in for the whole layer (QuantizedMultiHeadAttention,
// Float8MultiHeadAttention): the attention, its cache and its weight paths stay here.
//   auto mha = layers::MultiHeadAttention(4, 32);
//   Variable y = mha(std::vector<Variable>{x, x});                         // self-attention
//   Variable z = mha->attend(x, memory, {}, {.use_causal_mask = true}, /*training=*/true);
#pragma once

#include <array>
#include <optional>

#include "osprey/nn/layer.h"

namespace osprey::nn {

struct MultiHeadAttentionOptions {
  int64_t value_dim = 0;  // 0: key_dim
  double dropout = 0.0;   // on the attention weights, in training
  bool use_bias = true;
  int64_t output_shape = 0;      // 0: the query's last dimension
  bool use_causal_mask = false;  // every call of this layer is causal (top-left aligned)
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  std::optional<uint64_t> seed{};  // of the attention dropout; none: the global seed
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Keras's call arguments. attention_mask: bool [batch, Tq, Tk] (or anything that broadcasts to
// it), true = may attend.
struct MultiHeadAttentionCall {
  Tensor attention_mask{};
  bool use_causal_mask = false;
};
// The keys and values a decoder has already computed, so that generating a token costs one step
// of attention over them instead of a re-run of the whole prefix: projected keys
// [batch, heads, capacity, key_dim] and values [batch, heads, capacity, value_dim], of which the
// first `length` positions are filled. make_cache() allocates one; attend_cached() fills it.
struct AttentionCache {
  Tensor key, value;
  int64_t length = 0;
  int64_t capacity() const { return key.defined() ? key.size(2) : 0; }
};

struct MultiHeadAttentionResult {
  Variable output;
  Tensor scores;  // [batch, heads, Tq, Tk], the softmax before dropout (return_attention_scores)
};

class MultiHeadAttention : public Layer {
 public:
  MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options = {});

  using CallOptions = MultiHeadAttentionCall;
  using Result = MultiHeadAttentionResult;
  // key undefined: the value. Builds the layer on the first call.
  Variable attend(const Variable& query, const Variable& value, const Variable& key = {},
                  const CallOptions& call = {}, bool training = false);
  Result attend_with_scores(const Variable& query, const Variable& value, const Variable& key = {},
                            const CallOptions& call = {}, bool training = false);

  // Incremental causal self-attention for generation, without gradients or dropout: x
  // [batch, t, features] holds the next t tokens; their keys and values join the cache at
  // positions [length, length + t), each attends causally to everything before it and itself, and
  // cache.length grows by t. ValueError naming the layer when the cache would overflow or its
  // batch differs. Equal to attend(x, x, {}, {.use_causal_mask = true}) on the whole sequence.
  AttentionCache make_cache(int64_t batch, int64_t capacity) const;
  Variable attend_cached(const Variable& x, AttentionCache& cache);

  int64_t num_heads() const { return num_heads_; }
  // Heads of key and value: num_heads, or fewer in GroupedQueryAttention.
  int64_t num_key_value_heads() const { return num_kv_heads_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t value_dim() const { return options_.value_dim > 0 ? options_.value_dim : key_dim_; }
  const MultiHeadAttentionOptions& options() const { return options_; }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
  // Masks on value and key (Variable::mask()) exclude padded keys; the output has the query's.
  bool supports_masking() const override { return true; }
  uint64_t seed_calls() const override { return calls_; }
  void set_seed_calls(uint64_t calls) override { calls_ = calls; }

 protected:
  // GroupedQueryAttention: num_kv_heads key and value heads, each read by num_heads /
  // num_kv_heads query heads.
  MultiHeadAttention(std::string class_name, int64_t num_heads, int64_t num_kv_heads,
                     int64_t key_dim, MultiHeadAttentionOptions options);
  void build_impl(const std::vector<Shape>& input_shapes) override;
  Variable call(const std::vector<Variable>& inputs, bool training) override;

  // The four projections, named as their weights are (query/, key/, value/, attention_output/).
  enum class Projection { query, key, value, output };
  static constexpr int kNumProjections = 4;
  static const char* projection_name(Projection p);
  // A projection's kernel as the matrix linear() multiplies by: [in, heads * width] for query,
  // key and value ([in, heads, width]), [heads * value_dim, out] for the output.
  static Shape matrix_shape(Projection p, const Shape& kernel);
  // One projection as a plain product, its kernel viewed as a matrix: x [..., in] ->
  // [..., out] with in x out = [in, heads * width] for query, key and value, [heads * value_dim,
  // out] for the output. The float32 product here; quant/'s forms override it (training says
  // whether float8 scaling histories update). The heads are split and merged around it.
  virtual Variable linear(const Variable& x, Projection p, bool training);
  // This layer's float kernel and bias (undefined without bias) of a projection, in Keras's
  // shapes (see the top of this file).
  const Variable& kernel(Projection p) const;
  const Variable& bias(Projection p) const;
  // [query, value, key] shapes checked: 3-D, one batch, key and value of one length.
  void check_shapes(const Shape& q, const Shape& v, const Shape& k) const;
  // The output width for a query of `query_dim` features: output_shape, or the query's width.
  int64_t output_dim(int64_t query_dim) const;
  // The options a config describes (MultiHeadAttention's fields), for from_config.
  static MultiHeadAttentionOptions read_options(const nlohmann::json& config);
  // The [query, value] or [query, value, key] shapes build() gets, checked, as the four
  // projections' kernel shapes in Projection order: [q_dim, heads, key_dim], [k_dim, kv_heads,
  // key_dim], [v_dim, kv_heads, value_dim], [heads, value_dim, out]. quant/'s forms build their
  // own kernels in these shapes.
  std::array<Shape, kNumProjections> kernel_shapes(const std::vector<Shape>& input_shapes) const;
  // A projection's bias shape for its kernel: [heads, width] for query, key and value, [out] for
  // the output (one value per output column).
  static Shape bias_shape(Projection p, const Shape& kernel);
  // The options of a layer made to take a built attention's place (quant/'s from_attention), its
  // name and trainable flag included. ValueError when `attention` is not built yet.
  static MultiHeadAttentionOptions options_of_built(const MultiHeadAttention& attention);

 private:
  Result run(const Variable& query, const Variable& value, const Variable& key,
             const CallOptions& call, bool training, bool with_scores);
  // x [batch, T, in] through projection p -> [batch, heads, T, width].
  Variable project(const Variable& x, Projection p, bool training);
  // heads [batch, heads, T, value_dim] -> [batch, T, out] through attention_output.
  Variable merge_heads(const Variable& heads, bool training);
  Variable cast_input(const Variable& x) const;

  int64_t num_heads_, num_kv_heads_, key_dim_;
  MultiHeadAttentionOptions options_;
  uint64_t calls_ = 0;
  Variable query_kernel_, query_bias_, key_kernel_, key_bias_, value_kernel_, value_bias_,
      output_kernel_, output_bias_;
};

// GroupedQueryAttention, as keras.layers.GroupQueryAttention (Ainslie et al., 2023):
// num_key_value_heads key and value heads shared by groups of the num_query_heads query heads
// (1: multi-query attention; num_query_heads: multi-head attention), so the key/value cache
// shrinks by num_query_heads / num_key_value_heads. value_dim is head_dim and the output has the
// query's width. Weights as Keras names them (query/kernel [in, num_query_heads, head_dim],
// key/kernel and value/kernel [in, num_key_value_heads, head_dim], attention_output/kernel
// [num_query_heads, head_dim, out]); calls as MultiHeadAttention's.
//   auto gqa = layers::GroupedQueryAttention(64, 8, 2);
//   Variable y = gqa->attend(x, x, {}, {.use_causal_mask = true});
struct GroupedQueryAttentionOptions {
  double dropout = 0.0;
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  std::optional<uint64_t> seed{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class GroupedQueryAttention : public MultiHeadAttention {
 public:
  // ValueError naming the layer unless num_query_heads is a multiple of num_key_value_heads.
  GroupedQueryAttention(int64_t head_dim, int64_t num_query_heads, int64_t num_key_value_heads,
                        GroupedQueryAttentionOptions options = {});
  nlohmann::json get_config() const override;
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config);
};

}  // namespace osprey::nn

namespace osprey::layers {
inline nn::LayerRef<nn::GroupedQueryAttention> GroupedQueryAttention(
    int64_t head_dim, int64_t num_query_heads, int64_t num_key_value_heads,
    nn::GroupedQueryAttentionOptions options = {}) {
  return nn::make_layer<nn::GroupedQueryAttention>(head_dim, num_query_heads, num_key_value_heads,
                                                   std::move(options));
}
inline nn::LayerRef<nn::MultiHeadAttention> MultiHeadAttention(
    int64_t num_heads, int64_t key_dim, nn::MultiHeadAttentionOptions options = {}) {
  return nn::make_layer<nn::MultiHeadAttention>(num_heads, key_dim, std::move(options));
}
}  // namespace osprey::layers
