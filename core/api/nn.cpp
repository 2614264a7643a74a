// softmax, log_softmax, logsumexp: compositions of max, exp, sum and log,
// shifted by the maximum so exp never overflows. Each is two or three fused
// kernels (the maximum, then the shifted sum; explain() shows them): a
// reduction broadcast back over its own input is where a kernel must end.
#include "arrayjit/nn.hpp"

#include <algorithm>
#include <limits>
#include <new>
#include <string>

#include "core/api/trace.hpp"

namespace aj {

namespace {

using trace::describe;

// x in the float dtype these compute in: its own, f64 for integers.
Array as_float(const Array& x_in, const char* name, const Loc& loc) {
  trace::Scope scope;
  const Array& x = trace::local(x_in, name, loc);
  if (x.dtype() == DType::bool_) {
    user_error(name, "does not accept bool (" + describe(x) + "); use astype() to a float type first", loc);
  }
  if (is_float(x.dtype())) return x;
  trace::check_array_size(x.shape(), DType::f64, name, loc);
  return trace::cast(x, DType::f64, loc);
}

// The axes, normalized, sorted, each once.
std::vector<int> axis_list(const Array& x, const Axes& axes, const char* name, const Loc& loc) {
  std::vector<int> out;
  if (axes.is_all()) {
    for (int i = 0; i < x.ndim(); ++i) out.push_back(i);
    return out;
  }
  for (int a : axes.list()) out.push_back(trace::normalize_axis(a, x.ndim(), name, x.shape(), x.dtype(), loc));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    user_error(name, "repeated axis in the axes over " + describe(x), loc);
  }
  return out;
}

std::int64_t count_over(const Array& x, const std::vector<int>& axes) {
  std::int64_t n = 1;
  for (int a : axes) n *= x.shape()[a];
  return n;
}

}  // namespace

Array softmax(const Array& x, Axes axes_in, Loc loc) try {
  trace::Scope scope;  // (shape reads below are the library's, not the user's: aj::compile counts those)
  const Array xf = as_float(x, "softmax", loc);
  const std::vector<int> axes = axis_list(xf, axes_in, "softmax", loc);
  if (count_over(xf, axes) == 0) return xf;  // empty lines: nothing to normalize
  const Array m = max(xf, Axes(axes), true, loc);
  const Array e = exp(Operand(subtract(Operand(xf, loc), Operand(m, loc)), loc));
  return divide(Operand(e, loc), Operand(sum(e, Axes(axes), true, loc), loc));
} catch (const std::bad_alloc&) {
  detail::out_of_memory("softmax", loc);
}

Array log_softmax(const Array& x, Axes axes_in, Loc loc) try {
  trace::Scope scope;  // (shape reads below are the library's, not the user's: aj::compile counts those)
  const Array xf = as_float(x, "log_softmax", loc);
  const std::vector<int> axes = axis_list(xf, axes_in, "log_softmax", loc);
  if (count_over(xf, axes) == 0) return xf;
  // x - (m + log(sum(exp(x - m)))): x - m is computed inside the exp-sum's
  // kernel only, m + log(...) after each line of it, and the last kernel
  // subtracts one value per line (every element computed once).
  const Array m = max(xf, Axes(axes), true, loc);
  const Array shifted = subtract(Operand(xf, loc), Operand(m, loc));
  const Array s = sum(exp(Operand(shifted, loc)), Axes(axes), false, loc);  // reduced: the epilogue runs per line
  const Array t = add(Operand(log(Operand(s, loc)), loc), Operand(reshape(m, s.shape(), loc), loc));
  return subtract(Operand(xf, loc), Operand(reshape(t, m.shape(), loc), loc));
} catch (const std::bad_alloc&) {
  detail::out_of_memory("log_softmax", loc);
}

Array logsumexp(const Array& x, Axes axes_in, bool keepdims, Loc loc) try {
  trace::Scope scope;
  const Array xf = as_float(x, "logsumexp", loc);
  const std::vector<int> axes = axis_list(xf, axes_in, "logsumexp", loc);
  if (count_over(xf, axes) == 0) {  // log of an empty sum: -inf (max has no identity here)
    return log(Operand(sum(exp(Operand(xf, loc)), Axes(axes), keepdims, loc), loc));
  }
  // The maximum clipped to the finite range: a line of only -inf sums
  // exp(-inf) = 0 (log: -inf), one with +inf sums inf, NaN stays NaN; finite
  // maxima are unchanged. The max of the clipped values is the clipped max,
  // and clipping each element inside the max's kernel keeps the shift a
  // reduction's output (no kernel of its own for two ops on m).
  const double big = xf.dtype() == DType::f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  const Array shift =
      max(clip(Operand(xf, loc), Operand(-big, loc), Operand(big, loc)), Axes(axes), true, loc);
  const Array& m = shift;
  // The sum reduced (not kept): log and + shift then run after each line in
  // the sum's own kernel; keepdims is a reshape of that.
  const Array s = sum(exp(Operand(subtract(Operand(xf, loc), Operand(shift, loc)), loc)), Axes(axes), false, loc);
  const Shape reduced = s.shape();
  const Array r = add(Operand(log(Operand(s, loc)), loc), Operand(reshape(shift, reduced, loc), loc));
  return keepdims ? reshape(r, m.shape(), loc) : r;
} catch (const std::bad_alloc&) {
  detail::out_of_memory("logsumexp", loc);
}

// ---- activations -------------------------------------------------------------------------

namespace {
// The operand as an array, bool refused under the activation's name.
Array activation_input(const char* name, const Operand& x) {
  Array a = trace::operand_array(x, name);
  if (a.dtype() == DType::bool_) {
    user_error(name, "does not accept bool (" + describe(a) + "); use astype() to a number type first", x.loc);
  }
  return a;
}
// The same in as_float's dtype: f64 for integers (x^3 of an i32 must not wrap).
Array float_activation_input(const char* name, const Operand& x) {
  return as_float(trace::operand_array(x, name), name, x.loc);
}
}  // namespace

Array relu(const Operand& x) {
  const Array a = activation_input("relu", x);
  return where(Operand(Operand(a, x.loc) <= Operand(0, x.loc), x.loc), Operand(0, x.loc),
               Operand(a, x.loc));
}

Array gelu(const Operand& x, bool approximate) {
  const Loc& loc = x.loc;
  const Array a = float_activation_input("gelu", x);
  auto o = [&](const Array& v) { return Operand(v, loc); };
  auto k = [&](double v) { return Operand(v, loc); };
  if (!approximate) {
    constexpr double kMinusInvSqrt2 = -0.70710678118654752440;
    return multiply(o(multiply(o(a), k(0.5))), o(erfc(o(multiply(o(a), k(kMinusInvSqrt2))))));
  }
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  Array inner = multiply(o(add(o(a), o(multiply(o(multiply(o(multiply(o(a), o(a))), o(a))), k(0.044715))))),
                         k(kSqrt2OverPi));
  return multiply(o(multiply(o(a), k(0.5))), o(add(o(tanh(o(inner))), k(1.0))));
}

Array silu(const Operand& x) {
  const Array a = float_activation_input("silu", x);
  return multiply(Operand(a, x.loc), Operand(sigmoid(Operand(a, x.loc)), x.loc));
}

Array softplus(const Operand& x) {
  const Loc& loc = x.loc;
  const Array a = float_activation_input("softplus", x);
  Array tail = log1p(Operand(exp(Operand(negative(Operand(abs(Operand(a, loc)), loc)), loc)), loc));
  return add(Operand(maximum(Operand(a, loc), Operand(0.0, loc)), loc), Operand(tail, loc));
}

}  // namespace aj
