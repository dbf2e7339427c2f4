// Differentiable elementwise ops with NumPy broadcasting and PyTorch type promotion (the tensor
// ops in tensor/ops.h do the forward). The gradient of a broadcast input is summed back to its
// shape (sum_to); a gradient computed in a promoted dtype is cast back to the input's dtype.
//   Variable y = (x - mu) / sqrt(var + 1e-5) * gamma;   // operators are the same ops
#pragma once

#include "osprey/autograd/variable.h"

namespace osprey::autograd {

Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
// a ^ b. d/db = a^b * log(a), taken as 0 where a == 0 (as PyTorch); d/da is 0 where b == 0.
Variable pow(const Variable& a, const Variable& b);
// Gradient to a where a >= b (maximum) or a <= b (minimum): ties go to the first argument.
Variable maximum(const Variable& a, const Variable& b);
Variable minimum(const Variable& a, const Variable& b);

Variable add(const Variable& a, double b);
Variable sub(const Variable& a, double b);
Variable rsub(double a, const Variable& b);  // a - b
Variable mul(const Variable& a, double b);
Variable div(const Variable& a, double b);
Variable pow(const Variable& a, double exponent);

Variable neg(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);
Variable sqrt(const Variable& x);
Variable rsqrt(const Variable& x);
Variable square(const Variable& x);
// d|x|/dx = sign(x), 0 at 0.
Variable abs(const Variable& x);
// The gradient passes where low <= x <= high (bounds included, as PyTorch), else 0.
Variable clamp(const Variable& x, double low, double high);
// cond ? a : b, broadcasting all three; cond is a bool tensor (not differentiable).
Variable where(const Tensor& cond, const Variable& a, const Variable& b);

inline Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
inline Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
inline Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
inline Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
inline Variable operator-(const Variable& x) { return neg(x); }
inline Variable operator+(const Variable& a, double b) { return add(a, b); }
inline Variable operator+(double a, const Variable& b) { return add(b, a); }
inline Variable operator-(const Variable& a, double b) { return sub(a, b); }
inline Variable operator-(double a, const Variable& b) { return rsub(a, b); }
inline Variable operator*(const Variable& a, double b) { return mul(a, b); }
inline Variable operator*(double a, const Variable& b) { return mul(b, a); }
inline Variable operator/(const Variable& a, double b) { return div(a, b); }

}  // namespace osprey::autograd
