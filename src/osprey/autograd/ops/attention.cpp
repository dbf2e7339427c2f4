#include "osprey/autograd/ops/attention.h"

#include <utility>
#include <vector>

#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

std::pair<Variable, AttentionInputs> attention_op(const Variable& q, const Variable& k,
                                                  const Variable& v,
                                                  const AttentionOptions& options) {
  detail::check_input(q, kOp, "query");
  detail::check_input(k, kOp, "key");
  detail::check_input(v, kOp, "value");
  AttentionInputs in = resolve_attention(q.value(), k.value(), v.value(), options);
  AttentionOutputs fwd = attention_forward(in);
  if (!should_record(q, k, v)) return {Variable(std::move(fwd.out)), std::move(in)};
  Tensor out = fwd.out;
  // Saved: the inputs, the output and one log-sum-exp per query row; nothing of size Tq * Tk.
  Variable y = make_variable(
      std::move(out), kOp, {q, k, v}, [in, fwd](const Tensor& g, const std::vector<bool>&) {
        AttentionGrads d = attention_backward(in, fwd, g);
        return std::vector<Tensor>{std::move(d.dq), std::move(d.dk), std::move(d.dv)};
      });
  return {std::move(y), std::move(in)};
}

}  // namespace

Variable scaled_dot_product_attention(const Variable& q, const Variable& k, const Variable& v,
                                      const AttentionOptions& options) {
  return attention_op(q, k, v, options).first;
}

AttentionResult scaled_dot_product_attention_with_weights(const Variable& q, const Variable& k,
                                                          const Variable& v,
                                                          const AttentionOptions& options) {
  auto [y, in] = attention_op(q, k, v, options);
  return {std::move(y), attention_weights(in)};
}

}  // namespace osprey::autograd
