// Elementwise, reduction, matmul and copying shape ops: checks, promotion, broadcasting and
// allocation, then one Backend call. Convolution, pooling and softmax are in ops_nn.cpp.
#include "osprey/tensor/ops.h"

#include <algorithm>
#include <cmath>

#include "osprey/tensor/factory.h"

namespace osprey {

void check_defined(const Tensor& t, const char* op, const char* name) {
  OSPREY_CHECK(t.defined(), "{}: {} is an undefined tensor", op, name);
}

void check_floating(const Tensor& t, const char* op, const char* name) {
  check_defined(t, op, name);
  OSPREY_CHECK(is_floating(t.dtype()), "{}: {} must be a floating-point tensor. Received: {}", op,
               name, t.describe());
}

void check_same_device(const std::vector<const Tensor*>& ts, const char* op) {
  for (const Tensor* t : ts) {
    OSPREY_CHECK(t->defined(), "{}: received an undefined tensor", op);
    OSPREY_CHECK(t->device() == ts[0]->device(), "{}: tensors are on different devices: {} and {}",
                 op, ts[0]->describe(), t->describe());
  }
}

namespace {

const char* unary_name(UnaryOp op) {
  static constexpr const char* kNames[] = {
      "neg",     "exp",  "log",  "sqrt", "rsqrt", "abs", "sign", "square", "reciprocal", "relu",
      "sigmoid", "tanh", "gelu", "gelu", "add",   "mul", "pow",  "sub",    "clamp"};
  return kNames[static_cast<int>(op)];
}

const char* binary_name(BinaryOp op) {
  static constexpr const char* kNames[] = {"add",
                                           "sub",
                                           "mul",
                                           "div",
                                           "pow",
                                           "maximum",
                                           "minimum",
                                           "eq",
                                           "ne",
                                           "lt",
                                           "le",
                                           "gt",
                                           "ge",
                                           "relu_backward",
                                           "sigmoid_backward",
                                           "tanh_backward",
                                           "gelu_backward",
                                           "gelu_backward"};
  return kNames[static_cast<int>(op)];
}

bool is_comparison(BinaryOp op) { return op >= BinaryOp::eq && op <= BinaryOp::ge; }

// Ops whose result is fractional even for integer inputs compute in float32, as PyTorch.
bool needs_float(UnaryOp op, const UnaryParams& p) {
  switch (op) {
    case UnaryOp::exp:
    case UnaryOp::log:
    case UnaryOp::sqrt:
    case UnaryOp::rsqrt:
    case UnaryOp::reciprocal:
    case UnaryOp::sigmoid:
    case UnaryOp::tanh:
    case UnaryOp::gelu_tanh:
    case UnaryOp::gelu_erf:
    case UnaryOp::pow_scalar:
      return true;
    case UnaryOp::add_scalar:
    case UnaryOp::mul_scalar:
    case UnaryOp::rsub_scalar:
      return p.alpha != std::trunc(p.alpha);
    case UnaryOp::clamp:
      return p.alpha != std::trunc(p.alpha) || p.beta != std::trunc(p.beta);
    default:
      return false;
  }
}

Shape drop_axes(const Shape& keep, const std::vector<int>& axes) {
  Shape s;
  for (int i = 0; i < keep.ndim(); ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) s.push_back(keep[i]);
  }
  return s;
}

}  // namespace

Tensor unary_op(UnaryOp op, const Tensor& x, UnaryParams params) {
  check_defined(x, unary_name(op), "x");
  DType d = x.dtype();
  if (is_integral(d) && needs_float(op, params)) d = DType::float32;
  if (d == DType::boolean && op != UnaryOp::abs && op != UnaryOp::relu) d = DType::int64;
  const Tensor in = x.to(d);
  Tensor y = Tensor::empty(x.shape(), {d, x.device()});
  backend_for(x.device()).unary(op, in, y, params);
  return y;
}

std::pair<Tensor, Tensor> broadcast_pair(const Tensor& a, const Tensor& b, const char* op) {
  check_same_device({&a, &b}, op);
  const Shape s = broadcast_shapes(a.shape(), b.shape(), op);
  const DType d = promote_types(a.dtype(), b.dtype());
  return {a.to(d).expand(s), b.to(d).expand(s)};
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  check_defined(a, name, "a");
  check_defined(b, name, "b");
  auto [x, y] = broadcast_pair(a, b, name);
  DType d = x.dtype();
  if ((op == BinaryOp::div || op == BinaryOp::pow || op > BinaryOp::ge) && is_integral(d)) {
    d = DType::float32;
    x = x.to(d);
    y = y.to(d);
  }
  Tensor out = Tensor::empty(x.shape(), {is_comparison(op) ? DType::boolean : d, x.device()});
  backend_for(x.device()).binary(op, x, y, out);
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ge, a, b); }
Tensor add(const Tensor& a, double b) { return unary_op(UnaryOp::add_scalar, a, {b}); }
Tensor mul(const Tensor& a, double b) { return unary_op(UnaryOp::mul_scalar, a, {b}); }
Tensor pow(const Tensor& a, double exponent) {
  return unary_op(UnaryOp::pow_scalar, a, {exponent});
}
Tensor neg(const Tensor& x) { return unary_op(UnaryOp::neg, x); }
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary_op(UnaryOp::rsqrt, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::abs, x); }
Tensor sign(const Tensor& x) { return unary_op(UnaryOp::sign, x); }
Tensor square(const Tensor& x) { return unary_op(UnaryOp::square, x); }
Tensor reciprocal(const Tensor& x) { return unary_op(UnaryOp::reciprocal, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::relu, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::sigmoid, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::tanh, x); }
Tensor gelu(const Tensor& x, bool approximate_tanh) {
  return unary_op(approximate_tanh ? UnaryOp::gelu_tanh : UnaryOp::gelu_erf, x);
}
Tensor clamp(const Tensor& x, double low, double high) {
  OSPREY_CHECK(low <= high, "clamp: low must not exceed high. Received: low={}, high={}", low,
               high);
  return unary_op(UnaryOp::clamp, x, {low, high});
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined(cond, "where", "cond");
  check_defined(a, "where", "a");
  check_defined(b, "where", "b");
  check_same_device({&cond, &a, &b}, "where");
  OSPREY_CHECK(cond.dtype() == DType::boolean, "where: cond must be a bool tensor. Received: {}",
               cond.describe());
  const Shape s =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  const DType d = promote_types(a.dtype(), b.dtype());
  Tensor out = Tensor::empty(s, {d, a.device()});
  backend_for(a.device()).where(cond.expand(s), a.to(d).expand(s), b.to(d).expand(s), out);
  return out;
}

Tensor reduce(ReduceOp op, const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  static constexpr const char* kNames[] = {"sum", "mean", "max", "min"};
  const char* name = kNames[static_cast<int>(op)];
  check_defined(x, name, "x");
  const std::vector<int> ax = normalize_axes(axes, x.ndim(), name);
  Shape kept = x.shape();
  for (int a : ax) {
    OSPREY_CHECK(op == ReduceOp::sum || x.shape()[a] > 0,
                 "{}: cannot reduce over axis {} of size 0 (shape {}): the reduction is empty",
                 name, a, x.shape().to_string());
    kept[a] = 1;
  }
  if (op != ReduceOp::sum && x.ndim() == 0) {
    OSPREY_CHECK(x.numel() > 0, "{}: the reduction is empty", name);
  }
  DType d = x.dtype();
  if (op == ReduceOp::sum && is_integral(d)) d = DType::int64;
  if (op == ReduceOp::mean && is_integral(d)) d = DType::float32;
  Tensor out = Tensor::empty(kept, {d, x.device()});
  backend_for(x.device()).reduce(op, x.to(d), out);
  return keepdims ? out : out.view(drop_axes(kept, ax));
}

Tensor sum(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return reduce(ReduceOp::sum, x, axes, keepdims);
}
Tensor mean(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return reduce(ReduceOp::mean, x, axes, keepdims);
}
Tensor max(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return reduce(ReduceOp::max, x, axes, keepdims);
}
Tensor min(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return reduce(ReduceOp::min, x, axes, keepdims);
}

namespace {
Tensor arg_reduce_op(bool is_max, const Tensor& x, int axis, bool keepdims) {
  const char* name = is_max ? "argmax" : "argmin";
  check_defined(x, name, "x");
  const Tensor in = x.ndim() == 0 ? x.reshape({1}) : x;
  const int a = normalize_axis(axis, in.ndim(), name);
  OSPREY_CHECK(in.shape()[a] > 0,
               "{}: cannot reduce over axis {} of size 0 (shape {}): the reduction is empty", name,
               a, x.shape().to_string());
  Shape kept = in.shape();
  kept[a] = 1;
  Tensor out = Tensor::empty(kept, {DType::int64, x.device()});
  backend_for(x.device()).arg_reduce(is_max, in, a, out);
  return keepdims ? out : out.squeeze(a);
}
}  // namespace

Tensor argmax(const Tensor& x, int axis, bool keepdims) {
  return arg_reduce_op(true, x, axis, keepdims);
}
Tensor argmin(const Tensor& x, int axis, bool keepdims) {
  return arg_reduce_op(false, x, axis, keepdims);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int lead = x.ndim() - shape.ndim();
  OSPREY_CHECK(lead >= 0, "sum_to: cannot sum shape {} to the larger rank of {}",
               x.shape().to_string(), shape.to_string());
  std::vector<int> axes;
  for (int i = 0; i < x.ndim(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && x.shape()[i] != 1)) {
      axes.push_back(i);  // an axis the broadcast added or stretched from 1
    } else {
      OSPREY_CHECK(shape[i - lead] == x.shape()[i], "sum_to: shape {} is not a broadcast of {}",
                   x.shape().to_string(), shape.to_string());
    }
  }
  if (axes.empty()) return x.reshape(shape);
  return sum(x, axes, true).reshape(shape);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_floating(a, "matmul", "a");
  check_floating(b, "matmul", "b");
  check_same_device({&a, &b}, "matmul");
  OSPREY_CHECK(a.ndim() >= 1 && b.ndim() >= 1,
               "matmul: both operands need at least one dimension. Received: {} x {}",
               a.shape().to_string(), b.shape().to_string());
  const DType d = promote_types(a.dtype(), b.dtype());
  Tensor x = a.ndim() == 1 ? a.unsqueeze(0) : a;
  Tensor y = b.ndim() == 1 ? b.unsqueeze(1) : b;
  const int64_t m = x.size(-2), k = x.size(-1), k2 = y.size(-2), n = y.size(-1);
  OSPREY_CHECK(k == k2, "matmul: inner dimensions differ: {} x {}", a.shape().to_string(),
               b.shape().to_string());
  Shape xb, yb;
  for (int i = 0; i + 2 < x.ndim(); ++i) xb.push_back(x.shape()[i]);
  for (int i = 0; i + 2 < y.ndim(); ++i) yb.push_back(y.shape()[i]);
  Shape batch = broadcast_shapes(xb, yb, "matmul");
  Shape xs = batch, ys = batch, os = batch;
  xs.push_back(m);
  xs.push_back(k);
  ys.push_back(k);
  ys.push_back(n);
  os.push_back(m);
  os.push_back(n);
  Tensor out = Tensor::empty(os, {d, a.device()});
  backend_for(a.device()).matmul(x.to(d).expand(xs), y.to(d).expand(ys), nullptr, out, {});
  if (a.ndim() == 1) out = out.squeeze(-2);
  if (b.ndim() == 1) out = out.squeeze(-1);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor* bias, Activation activation) {
  check_floating(x, "linear", "x");
  check_floating(w, "linear", "kernel");
  check_same_device({&x, &w}, "linear");
  OSPREY_CHECK(x.ndim() >= 1 && w.ndim() == 2,
               "linear: expected x [..., in] and kernel [in, out]. Received: x {} and kernel {}",
               x.shape().to_string(), w.shape().to_string());
  OSPREY_CHECK(x.size(-1) == w.size(0), "linear: inner dimensions differ: {} x {}",
               x.shape().to_string(), w.shape().to_string());
  const DType d = promote_types(x.dtype(), w.dtype());
  Tensor b;
  if (bias != nullptr) {
    check_floating(*bias, "linear", "bias");
    check_same_device({&x, bias}, "linear");
    OSPREY_CHECK(bias->ndim() == 1 && bias->size(0) == w.size(1),
                 "linear: bias must have shape [{}] to match kernel {}. Received: bias {}",
                 w.size(1), w.shape().to_string(), bias->shape().to_string());
    b = bias->to(d);
  }
  const Tensor rows = x.to(d).reshape({-1, x.size(-1)});
  Tensor out = Tensor::empty({rows.size(0), w.size(1)}, {d, x.device()});
  backend_for(x.device())
      .matmul(rows, w.to(d), b.defined() ? &b : nullptr, out, {.activation = activation});
  Shape s = x.shape();
  s[s.ndim() - 1] = w.size(1);
  return out.view(s);
}

Tensor concat(const std::vector<Tensor>& tensors, int axis) {
  OSPREY_CHECK(!tensors.empty(), "concat: expected at least one tensor");
  std::vector<const Tensor*> ptrs;
  ptrs.reserve(tensors.size());
  for (const Tensor& t : tensors) ptrs.push_back(&t);
  check_same_device(ptrs, "concat");
  const Tensor& first = tensors[0];
  const int a = normalize_axis(axis, first.ndim(), "concat");
  DType d = first.dtype();
  Shape s = first.shape();
  s[a] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    OSPREY_CHECK(t.ndim() == first.ndim(),
                 "concat: tensor {} has rank {} ({}), tensor 0 has rank {} ({})", i, t.ndim(),
                 t.shape().to_string(), first.ndim(), first.shape().to_string());
    for (int j = 0; j < t.ndim(); ++j) {
      OSPREY_CHECK(j == a || t.shape()[j] == first.shape()[j],
                   "concat: shapes differ outside axis {}: tensor 0 is {}, tensor {} is {}", a,
                   first.shape().to_string(), i, t.shape().to_string());
    }
    s[a] += t.shape()[a];
    d = promote_types(d, t.dtype());
  }
  Tensor out = Tensor::empty(s, {d, first.device()});
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    const int64_t n = t.shape()[a];
    if (n > 0) {
      Tensor dst = out.narrow(a, at, n);
      backend_for(out.device()).copy(t, dst);
    }
    at += n;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int axis) {
  OSPREY_CHECK(!tensors.empty(), "stack: expected at least one tensor");
  const int a = normalize_axis(axis, tensors[0].ndim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_defined(tensors[i], "stack", "input");
    OSPREY_CHECK(tensors[i].shape() == tensors[0].shape(),
                 "stack: every tensor must have one shape: tensor 0 is {}, tensor {} is {}",
                 tensors[0].shape().to_string(), i, tensors[i].shape().to_string());
    parts.push_back(tensors[i].unsqueeze(a));
  }
  return concat(parts, a);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis) {
  check_defined(x, "split", "x");
  const int a = normalize_axis(axis, x.ndim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    OSPREY_CHECK(s >= 0, "split: sizes must be non-negative. Received: {}", s);
    total += s;
  }
  OSPREY_CHECK(total == x.shape()[a],
               "split: sizes add up to {} but axis {} of shape {} has size {}", total, a,
               x.shape().to_string(), x.shape()[a]);
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(a, at, s));
    at += s;
  }
  return out;
}

Tensor pad(const Tensor& x, const std::vector<std::array<int64_t, 2>>& pads, double value) {
  check_defined(x, "pad", "x");
  OSPREY_CHECK(static_cast<int>(pads.size()) <= x.ndim(),
               "pad: {} (before, after) pairs given for a tensor of rank {}", pads.size(),
               x.ndim());
  Shape s = x.shape();
  for (size_t i = 0; i < pads.size(); ++i) {
    OSPREY_CHECK(pads[i][0] >= 0 && pads[i][1] >= 0,
                 "pad: padding must be non-negative. Received: ({}, {}) on axis {}", pads[i][0],
                 pads[i][1], i);
    s[static_cast<int>(i)] += pads[i][0] + pads[i][1];
  }
  Tensor out = full(s, value, {x.dtype(), x.device()});
  Tensor inner = out;
  for (size_t i = 0; i < pads.size(); ++i)
    inner = inner.narrow(static_cast<int>(i), pads[i][0], x.shape()[static_cast<int>(i)]);
  if (x.numel() > 0) backend_for(x.device()).copy(x, inner);
  return out;
}

}  // namespace osprey
