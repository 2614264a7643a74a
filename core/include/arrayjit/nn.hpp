// Functions neural-network code needs, as numerically stable compositions of
// arrayjit's ops (so they fuse like any other graph); semantics in
// docs/semantics.md. erf and erfc are in arrayjit/array.hpp.
#pragma once

#include "arrayjit/array.hpp"

namespace aj {

// exp(x - max) / sum(exp(x - max)) over `axes` (the last by default). Integer
// inputs compute in f64; bool is an error. A line holding NaN or +inf, or
// only -inf, gives NaN throughout that line (as JAX).
Array softmax(const Array& x, Axes axes = -1, Loc loc = Loc::current());
// (x - max) - log(sum(exp(x - max))): the log of softmax, without its
// underflow to log(0). NaN where softmax is NaN.
Array log_softmax(const Array& x, Axes axes = -1, Loc loc = Loc::current());
// log(sum(exp(x))) over `axes` (all by default), computed as
// m + log(sum(exp(x - m))) with m the maximum clipped to the finite range:
// lines of only -inf (and empty lines) give -inf, lines with +inf give +inf,
// NaN gives NaN.
Array logsumexp(const Array& x, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());

// Activations, elementwise (bool is an error; relu keeps integers, the
// others compute integers in f64):
// relu: max(x, 0) written as where(x <= 0, 0, x): NaN stays NaN, and the
// derivative at 0 is 0 (PyTorch's and JAX's choice).
Array relu(const Operand& x);
// gelu: x Phi(x) = x erfc(-x / sqrt 2) / 2 (erfc: no cancellation for large
// negative x); approximate = true: x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2.
Array gelu(const Operand& x, bool approximate = false);
// silu (swish): x sigmoid(x).
Array silu(const Operand& x);
// softplus: log(1 + e^x), as max(x, 0) + log1p(e^-|x|) (no overflow; sigmoid's slope).
Array softplus(const Operand& x);

}  // namespace aj
