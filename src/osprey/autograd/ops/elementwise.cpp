// Elementwise ops: forward through tensor/ops.h, backward as small tensor expressions. Each
// closure captures only the tensors its gradient formula reads, and only for inputs that want
// a gradient.
#include "osprey/autograd/ops/elementwise.h"

#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

using detail::check_input;
using detail::scalar_like;
using Grads = std::vector<Tensor>;

namespace {

// The pattern of every binary op: check, compute, and record when a gradient is wanted.
template <class Forward, class MakeBackward>
Variable binary(const char* op, const Variable& a, const Variable& b, Forward forward,
                MakeBackward make_backward) {
  check_input(a, op, "a");
  check_input(b, op, "b");
  Tensor y = forward(a.value(), b.value());
  if (!should_record(a, b)) return Variable(std::move(y));
  BackwardFn fn = make_backward(y);
  return make_variable(std::move(y), op, {a, b}, std::move(fn));
}

Tensor if_needed(const Variable& v, const Tensor& t) { return v.requires_grad() ? t : Tensor(); }

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  return binary(
      "add", a, b, [](const Tensor& x, const Tensor& y) { return osprey::add(x, y); },
      [as = a.shape(), bs = b.shape()](const Tensor&) -> BackwardFn {
        return [as, bs](const Tensor& g, const std::vector<bool>& need) {
          return Grads{need[0] ? sum_to(g, as) : Tensor(), need[1] ? sum_to(g, bs) : Tensor()};
        };
      });
}

Variable sub(const Variable& a, const Variable& b) {
  return binary(
      "sub", a, b, [](const Tensor& x, const Tensor& y) { return osprey::sub(x, y); },
      [as = a.shape(), bs = b.shape()](const Tensor&) -> BackwardFn {
        return [as, bs](const Tensor& g, const std::vector<bool>& need) {
          return Grads{need[0] ? sum_to(g, as) : Tensor(),
                       need[1] ? sum_to(osprey::neg(g), bs) : Tensor()};
        };
      });
}

Variable mul(const Variable& a, const Variable& b) {
  return binary(
      "mul", a, b, [](const Tensor& x, const Tensor& y) { return osprey::mul(x, y); },
      [&](const Tensor&) -> BackwardFn {
        // a's gradient needs b's value and vice versa.
        return [av = if_needed(b, a.value()), bv = if_needed(a, b.value()), as = a.shape(),
                bs = b.shape()](const Tensor& g, const std::vector<bool>& need) {
          return Grads{need[0] ? sum_to(osprey::mul(g, bv), as) : Tensor(),
                       need[1] ? sum_to(osprey::mul(g, av), bs) : Tensor()};
        };
      });
}

Variable div(const Variable& a, const Variable& b) {
  return binary(
      "div", a, b, [](const Tensor& x, const Tensor& y) { return osprey::div(x, y); },
      [&](const Tensor& y) -> BackwardFn {
        // d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b.
        return [bv = b.value(), yv = if_needed(b, y), as = a.shape(), bs = b.shape()](
                   const Tensor& g, const std::vector<bool>& need) {
          const Tensor ga = osprey::div(g, bv);
          return Grads{need[0] ? sum_to(ga, as) : Tensor(),
                       need[1] ? sum_to(osprey::neg(osprey::mul(ga, yv)), bs) : Tensor()};
        };
      });
}

Variable pow(const Variable& a, const Variable& b) {
  return binary(
      "pow", a, b, [](const Tensor& x, const Tensor& y) { return osprey::pow(x, y); },
      [&](const Tensor& y) -> BackwardFn {
        return [av = a.value(), bv = b.value(), yv = if_needed(b, y), as = a.shape(),
                bs = b.shape()](const Tensor& g, const std::vector<bool>& need) {
          Grads out(2);
          const Tensor zero = scalar_like(g, 0.0);
          if (need[0]) {  // b * a^(b-1), 0 where b == 0 (0 * 0^-1 would be NaN)
            const Tensor d = osprey::mul(bv, osprey::pow(av, osprey::add(bv, -1.0)));
            out[0] = sum_to(osprey::where(osprey::eq(bv, zero), zero, osprey::mul(g, d)), as);
          }
          if (need[1]) {  // a^b * log(a), 0 where a == 0
            const Tensor d = osprey::mul(yv, osprey::log(av));
            out[1] = sum_to(osprey::where(osprey::eq(av, zero), zero, osprey::mul(g, d)), bs);
          }
          return out;
        };
      });
}

namespace {
Variable extremum(const char* op, bool is_max, const Variable& a, const Variable& b) {
  return binary(
      op, a, b,
      [is_max](const Tensor& x, const Tensor& y) {
        return is_max ? osprey::maximum(x, y) : osprey::minimum(x, y);
      },
      [&](const Tensor&) -> BackwardFn {
        // Where a wins (ties included) its gradient is g, else b's is.
        Tensor a_wins =
            is_max ? osprey::ge(a.value(), b.value()) : osprey::le(a.value(), b.value());
        return [a_wins, as = a.shape(), bs = b.shape()](const Tensor& g,
                                                        const std::vector<bool>& need) {
          const Tensor zero = scalar_like(g, 0.0);
          return Grads{need[0] ? sum_to(osprey::where(a_wins, g, zero), as) : Tensor(),
                       need[1] ? sum_to(osprey::where(a_wins, zero, g), bs) : Tensor()};
        };
      });
}
}  // namespace

Variable maximum(const Variable& a, const Variable& b) { return extremum("maximum", true, a, b); }
Variable minimum(const Variable& a, const Variable& b) { return extremum("minimum", false, a, b); }

namespace {
// The pattern of every unary op. make_backward(x, y) builds the closure from the input and output.
template <class Forward, class MakeBackward>
Variable unary(const char* op, const Variable& x, Forward forward, MakeBackward make_backward) {
  check_input(x, op, "x");
  Tensor y = forward(x.value());
  if (!should_record(x)) return Variable(std::move(y));
  BackwardFn fn = make_backward(x.value(), y);
  return make_variable(std::move(y), op, {x}, std::move(fn));
}

// A unary op whose gradient is g * dydx(x, y), with dydx a tensor expression.
template <class Forward, class Derivative>
Variable unary_chain(const char* op, const Variable& x, Forward forward, bool keep_x, bool keep_y,
                     Derivative dydx) {
  return unary(op, x, forward, [&](const Tensor& xv, const Tensor& yv) -> BackwardFn {
    return [xs = keep_x ? xv : Tensor(), ys = keep_y ? yv : Tensor(), dydx](
               const Tensor& g, const std::vector<bool>&) {
      return Grads{osprey::mul(g, dydx(xs, ys))};
    };
  });
}
}  // namespace

Variable add(const Variable& a, double b) {
  return unary(
      "add", a, [b](const Tensor& x) { return osprey::add(x, b); },
      [](const Tensor&, const Tensor&) -> BackwardFn {
        return [](const Tensor& g, const std::vector<bool>&) { return Grads{g}; };
      });
}

Variable sub(const Variable& a, double b) { return add(a, -b); }

Variable rsub(double a, const Variable& b) {
  return unary(
      "rsub", b, [a](const Tensor& x) { return osprey::unary_op(UnaryOp::rsub_scalar, x, {a}); },
      [](const Tensor&, const Tensor&) -> BackwardFn {
        return [](const Tensor& g, const std::vector<bool>&) { return Grads{osprey::neg(g)}; };
      });
}

Variable mul(const Variable& a, double b) {
  return unary(
      "mul", a, [b](const Tensor& x) { return osprey::mul(x, b); },
      [b](const Tensor&, const Tensor&) -> BackwardFn {
        return [b](const Tensor& g, const std::vector<bool>&) { return Grads{osprey::mul(g, b)}; };
      });
}

Variable div(const Variable& a, double b) {
  OSPREY_CHECK(b != 0.0, "div: division by the scalar 0 (x {})",
               a.defined() ? a.value().describe() : "undefined");
  return mul(a, 1.0 / b);
}

Variable pow(const Variable& a, double p) {
  return unary_chain(
      "pow", a, [p](const Tensor& x) { return osprey::pow(x, p); }, true, false,
      [p](const Tensor& x, const Tensor&) {
        // d(x^p)/dx = p * x^(p-1); x^0 is constant.
        return p == 0.0 ? scalar_like(x, 0.0) : osprey::mul(osprey::pow(x, p - 1.0), p);
      });
}

Variable neg(const Variable& x) {
  return unary(
      "neg", x, [](const Tensor& t) { return osprey::neg(t); },
      [](const Tensor&, const Tensor&) -> BackwardFn {
        return [](const Tensor& g, const std::vector<bool>&) { return Grads{osprey::neg(g)}; };
      });
}

Variable exp(const Variable& x) {
  return unary_chain(
      "exp", x, [](const Tensor& t) { return osprey::exp(t); }, false, true,
      [](const Tensor&, const Tensor& y) { return y; });
}

Variable log(const Variable& x) {
  return unary(
      "log", x, [](const Tensor& t) { return osprey::log(t); },
      [](const Tensor& xv, const Tensor&) -> BackwardFn {
        return
            [xv](const Tensor& g, const std::vector<bool>&) { return Grads{osprey::div(g, xv)}; };
      });
}

Variable sqrt(const Variable& x) {
  return unary(
      "sqrt", x, [](const Tensor& t) { return osprey::sqrt(t); },
      [](const Tensor&, const Tensor& yv) -> BackwardFn {
        return [yv](const Tensor& g, const std::vector<bool>&) {
          return Grads{osprey::div(osprey::mul(g, 0.5), yv)};
        };
      });
}

Variable rsqrt(const Variable& x) {
  return unary_chain(
      "rsqrt", x, [](const Tensor& t) { return osprey::rsqrt(t); }, false, true,
      [](const Tensor&, const Tensor& y) { return osprey::mul(osprey::pow(y, 3.0), -0.5); });
}

Variable square(const Variable& x) {
  return unary_chain(
      "square", x, [](const Tensor& t) { return osprey::square(t); }, true, false,
      [](const Tensor& xv, const Tensor&) { return osprey::mul(xv, 2.0); });
}

Variable abs(const Variable& x) {
  return unary_chain(
      "abs", x, [](const Tensor& t) { return osprey::abs(t); }, true, false,
      [](const Tensor& xv, const Tensor&) { return osprey::sign(xv); });
}

Variable clamp(const Variable& x, double low, double high) {
  return unary(
      "clamp", x, [=](const Tensor& t) { return osprey::clamp(t, low, high); },
      [=](const Tensor& xv, const Tensor&) -> BackwardFn {
        return [xv, low, high](const Tensor& g, const std::vector<bool>&) {
          const Tensor zero = scalar_like(g, 0.0);
          const Tensor inside = osprey::where(osprey::gt(xv, scalar_like(xv, high)), zero, g);
          return Grads{osprey::where(osprey::lt(xv, scalar_like(xv, low)), zero, inside)};
        };
      });
}

Variable where(const Tensor& cond, const Variable& a, const Variable& b) {
  check_defined(cond, "where", "cond");
  return binary(
      "where", a, b, [&](const Tensor& x, const Tensor& y) { return osprey::where(cond, x, y); },
      [&](const Tensor&) -> BackwardFn {
        return
            [cond, as = a.shape(), bs = b.shape()](const Tensor& g, const std::vector<bool>& need) {
              const Tensor zero = scalar_like(g, 0.0);
              return Grads{need[0] ? sum_to(osprey::where(cond, g, zero), as) : Tensor(),
                           need[1] ? sum_to(osprey::where(cond, zero, g), bs) : Tensor()};
            };
      });
}

}  // namespace osprey::autograd
