#!/usr/bin/python3
"""NumPy as an outside oracle for arrayjit (driven by tests/test_numpy_oracle.cpp).

    numpy_oracle.py PROGRAMS REPORT

PROGRAMS holds random programs in the line form tests/numpy_program.hpp
writes, each step with arrayjit's value. Every step is recomputed here with
NumPy from arrayjit's values of its operands and compared: dtype and shape
exactly; values exactly (NaN matches NaN, signed zeros must agree), except
transcendental functions and float pow (within ULPS units in the last place:
SLEEF's and NumPy's own errors together) and float reductions and matmul
(within n * eps of the sum of absolute values, the freedom docs/semantics.md
gives an optimized backend).

NumPy 1.24 has no NEP 50 (its Python scalars and 0-d arrays promote by value),
so this script applies NumPy 2's promotion itself: arrays by np.result_type of
their dtypes, scalars weak by category. Where arrayjit deliberately differs
from NumPy, the expected value follows docs/semantics.md and each element
where that changes NumPy's own answer is counted under the difference's id;
every id must be listed in the "Differences from NumPy" section there.

REPORT gets: counts ("programs", "ops", "elements", "op NAME N", "deliberate
ID N") and one "fail ..." line per disagreement (the first few in full).
"""
import fractions
import math
import os
import re
import statistics
import sys
import warnings

import numpy as np

np.seterr(all="ignore")  # NumPy's warnings (x / 0, mean of nothing) are arrayjit's defined results
warnings.filterwarnings("ignore")

ULPS = 8
DTYPES = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64,
          "u8": np.uint8, "i8": np.int8, "i16": np.int16, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}
TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "erfc",
                  "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "exp2", "log2",
                  "log10", "cbrt"}
# Special functions NumPy lacks (no SciPy here): computed below from Python's
# math module in f64, within ULPS or an absolute SPECIAL_TOL * eps (their zeros).
SPECIAL = {"lgamma", "digamma", "trigamma", "erfinv", "ndtri", "log_ndtr", "i0", "i1"}
ACTIVATIONS = {"gelu", "gelu_tanh", "silu", "softplus"}
FLOAT_ONLY = TRANSCENDENTAL | SPECIAL | ACTIVATIONS | {"sqrt", "rsqrt"}
# Binary functions of floats (integers give f64): within ULPS, or exact.
FLOAT_BINARY = {"arctan2": (np.arctan2, ULPS), "hypot": (np.hypot, ULPS), "copysign": (np.copysign, 0),
                "nextafter": (np.nextafter, 0), "logaddexp": (np.logaddexp, ULPS),
                "logaddexp2": (np.logaddexp2, ULPS)}
DELIBERATE = {}  # id -> elements where arrayjit's documented choice changed NumPy's answer


class Scalar:
    """A weak C++ scalar operand: kind 'b', 'i' or 'f'."""

    def __init__(self, kind, value):
        self.kind, self.value = kind, value


class Expect:
    """Expected value of one step: exact, within `ulps`, or within `tol` (per element)."""

    def __init__(self, value, ulps=0, tol=None, order_free=None, free_id="reduction-overflow-order"):
        self.value, self.ulps, self.tol, self.order_free = np.asarray(value), ulps, tol, order_free
        self.free_id = free_id  # the docs/semantics.md id the order_free elements count under


def category(dt):
    return 0 if dt == np.bool_ else 1 if np.issubdtype(dt, np.integer) else 2


def result_dtype(operands):
    """arrayjit's (NumPy 2's) promotion: arrays by dtype, scalars weak."""
    arrays = [o.dtype for o in operands if not isinstance(o, Scalar)]
    scalars = [o for o in operands if isinstance(o, Scalar)]
    if not arrays:  # the first scalar sets the type, the rest are weak against it
        arrays = [np.dtype([np.bool_, np.int64, np.float64]["bif".index(scalars[0].kind)])]
    t = np.result_type(*arrays)
    for o in scalars:
        c = "bif".index(o.kind)
        if c > category(t):
            t = np.dtype([np.bool_, np.int64, np.float64][c])
    return np.dtype(t)


def as_t(o, t):
    if isinstance(o, Scalar):
        return np.array(o.value, dtype=t)
    return o.astype(t)


def is_float(dt):
    return category(dt) == 2


def same(e, g):
    """Elementwise: equal, NaN to NaN, signed zeros alike."""
    if is_float(e.dtype):
        return (np.isnan(e) & np.isnan(g)) | ((e == g) & (np.signbit(e) == np.signbit(g)))
    return e == g


def ulp_distance(e, g):
    it = np.int32 if e.dtype == np.float32 else np.int64
    lo = np.iinfo(it).min

    def ordered(x):
        i = x.view(it).astype(np.int64)
        return np.where(i < 0, np.int64(lo) - i, i)

    a, b = ordered(e), ordered(g)
    same_sign = (a >= 0) == (b >= 0)
    d = np.where(same_sign, np.abs(a - np.where(same_sign, b, a)).astype(np.float64),
                 np.abs(a).astype(np.float64) + np.abs(b).astype(np.float64))
    d = np.where(np.isnan(e) | np.isnan(g), np.inf, d)
    return np.where(np.isnan(e) & np.isnan(g), 0.0, d)


def count_changed(deliberate, key, numpy_value, value):
    n = int(np.count_nonzero(~same(np.asarray(numpy_value), np.asarray(value))))
    if n:
        deliberate[key] = deliberate.get(key, 0) + n


# ---- elementwise ---------------------------------------------------------------------

COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
           "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal}
ARITH = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "mod": np.remainder,
         "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
         "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
         "left_shift": np.left_shift, "right_shift": np.right_shift, "gcd": np.gcd, "lcm": np.lcm}


def max_min(op, A, B, deliberate):
    """IEEE 754-2019 maximum/minimum: NaN propagates, max(-0, +0) = +0, min = -0.
    NumPy's maximum returns its second operand on ties, so the sign of zero differs."""
    raw = np.asarray((np.maximum if op == "maximum" else np.minimum)(A, B))
    if not is_float(raw.dtype):
        return raw
    A, B = np.broadcast_arrays(A, B)
    zeros = (A == 0) & (B == 0)
    want_neg = (np.signbit(A) & np.signbit(B)) if op == "maximum" else (np.signbit(A) | np.signbit(B))
    fixed = np.where(zeros, np.where(want_neg, -0.0, 0.0).astype(raw.dtype), raw)
    count_changed(deliberate, "maximum-signed-zero", raw, fixed)
    return fixed


def int_pow(A, B, deliberate):
    """Integer pow, wrapping; a negative exponent gives 1 / a^|b| truncated (NumPy raises)."""
    A, B = np.broadcast_arrays(A, B)
    neg = B < 0
    r = np.power(A, np.where(neg, 0, B).astype(B.dtype))
    if neg.any():
        one = np.ones_like(A)
        odd = (B % 2) != 0
        r = np.where(neg, np.where(A == 1, one, np.where(A == -1, np.where(odd, -one, one), 0 * one)), r)
        deliberate["int-pow-negative-exponent"] = deliberate.get("int-pow-negative-exponent", 0) + int(neg.sum())
    return np.asarray(r).astype(A.dtype)  # 0-d operands would promote by value in NumPy 1.24


def binary(op, a, b, deliberate):
    t = result_dtype([a, b])
    A, B = as_t(a, t), as_t(b, t)
    if op in COMPARE:
        return Expect(COMPARE[op](A, B))
    if op == "isclose":  # in the promoted dtype; integers compared in f64 (no wrapping difference)
        if not is_float(t):
            A, B = A.astype(np.float64), B.astype(np.float64)
        return Expect(np.isclose(A, B))
    if op in ARITH:
        return Expect(ARITH[op](A, B))
    if op in ("maximum", "minimum"):
        return Expect(max_min(op, A, B, deliberate))
    if op == "divide":
        return Expect(np.true_divide(A, B) if is_float(t) else np.floor_divide(A, B))
    if op == "true_divide":
        if not is_float(t):
            A, B = A.astype(np.float64), B.astype(np.float64)
        return Expect(np.true_divide(A, B))
    if op == "floor_divide":
        if not is_float(t):
            return Expect(np.floor_divide(A, B))
        want = np.floor(np.true_divide(A, B))
        count_changed(deliberate, "float-floor-divide", np.floor_divide(A, B), want)
        return Expect(want)
    if op == "pow":
        if is_float(t):
            return Expect(np.power(A, B), ulps=ULPS)
        return Expect(int_pow(A, B, deliberate))
    if op in FLOAT_BINARY:
        if not is_float(t):
            A, B = A.astype(np.float64), B.astype(np.float64)
        fn, ulps = FLOAT_BINARY[op]
        if op == "copysign":  # the sign of a NaN an invalid operation made is the platform's
            return Expect(fn(A, B), order_free=np.isnan(B), free_id="nan-sign")
        if op in ("logaddexp", "logaddexp2"):  # max + log1p(...) cancels where the result is small
            return Expect(fn(A, B), ulps=ulps, tol=ulps * eps(A.dtype) * np.maximum(np.abs(A), np.abs(B)))
        return Expect(fn(A, B), ulps=ulps)
    if op == "fmod":  # the sign of the dividend; integers: x fmod 0 = 0
        return Expect(np.fmod(A, B))
    raise ValueError("unknown binary op " + op)


# ---- the special functions, one f64 at a time -------------------------------------------

B2K = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330]


def py_lgamma(x):
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):  # the poles; past 2.5e305
        return math.inf


def py_digamma(x):
    if math.isnan(x) or x == math.inf:
        return x
    r = 0.0
    if x <= 0:
        if math.isinf(x) or x.is_integer():
            return -math.inf if x == 0 else math.nan
        r = -math.pi / math.tan(math.pi * (x - round(x)))
        x = 1 - x
    while x < 20:
        r -= 1 / x
        x += 1
    z = 1 / x / x
    return r + math.log(x) - 1 / (2 * x) - sum(B2K[k - 1] * z ** k / (2 * k) for k in range(1, 9))


def py_trigamma(x):
    if math.isnan(x):
        return x
    if x == math.inf:
        return 0.0
    refl, sign = 0.0, 1.0
    if x <= 0:
        if math.isinf(x) or x.is_integer():
            return math.nan if x == -math.inf else math.inf
        refl, sign, x = (math.pi / math.sin(math.pi * (x - round(x)))) ** 2, -1.0, 1 - x
    if x * x == 0:
        return math.inf
    s = 0.0
    while x < 20:
        s += 1 / (x * x)
        x += 1
    z = 1 / x / x
    t = 1 / x + z / 2 + sum(B2K[k - 1] * z ** k / x for k in range(1, 9))
    return refl + sign * (s + t)


def py_erfinv(y):
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if y == 0:
        return y
    a = abs(y)
    if a <= 0.5:  # Newton on erf from the series' first term
        x = math.sqrt(math.pi) / 2 * a
        for _ in range(6):
            x -= (math.erf(x) - a) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    else:  # on erfc, from the normal quantile of the exact 1 - a
        q = 1 - a
        x = -statistics.NormalDist().inv_cdf(q / 2) / math.sqrt(2)
        for _ in range(3):
            x += (math.erfc(x) - q) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return math.copysign(x, y)


def py_ndtri(p):
    if math.isnan(p) or p < 0 or p > 1:
        return math.nan
    if p in (0.0, 1.0):
        return -math.inf if p == 0 else math.inf
    return statistics.NormalDist().inv_cdf(p)


def py_log_ndtr(z):
    if math.isnan(z):
        return z
    if z > -1:
        return math.log1p(-0.5 * math.erfc(z / math.sqrt(2)))
    u = -z / math.sqrt(2)
    if u < 25:
        return math.log(0.5 * math.erfc(u))
    w = 1 / (2 * u * u)  # erfc's asymptotic series where it underflows
    s = 1 - w * (1 - w * (3 - w * (15 - w * (105 - w * 945))))
    return -u * u - math.log(u * math.sqrt(math.pi)) + math.log(s) - math.log(2)


def py_i1(x):
    if math.isnan(x) or math.isinf(x):
        return x
    a = abs(x)
    if a > 700:
        return math.copysign(py_i_big(1, a), x)
    # The power series in exact rationals, rounded once.
    h, q = fractions.Fraction(a) / 2, fractions.Fraction(a) ** 2 / 4
    t = s = h
    k = 1
    while t > s / 2 ** 80:
        t = t * q / (k * (k + 1))
        s += t
        k += 1
    return math.copysign(float(s), x)


def py_i_big(nu, a):
    """i_nu(a) for a > 700 (np.i0 overflows from 709): the asymptotic series, e^a as e^(a/2) twice."""
    t, s = 1.0, 1.0
    for k in range(1, 30):
        t *= ((2 * k - 1) ** 2 - 4 * nu * nu) / (8 * a * k)
        s += t
    if a > 1400:
        return math.inf
    e = math.exp(a / 2)
    return e * (e * s / math.sqrt(2 * math.pi * a))


def py_i0(x):
    if math.isnan(x) or math.isinf(x):
        return abs(x)
    return py_i_big(0, abs(x)) if abs(x) > 700 else float(np.i0(x))


SPECIAL_FN = {"lgamma": py_lgamma, "digamma": py_digamma, "trigamma": py_trigamma, "erfinv": py_erfinv,
              "ndtri": py_ndtri, "log_ndtr": py_log_ndtr, "i0": py_i0,
              "i1": py_i1}


def unary(op, a, deliberate):
    A = a.astype(np.float64) if op in FLOAT_ONLY and not is_float(a.dtype) else a
    t = A.dtype.type
    if op == "negative":
        return Expect(np.negative(A))
    if op == "abs":
        return Expect(np.abs(A))
    if op == "sign":
        raw = np.sign(A)
        if not is_float(A.dtype):
            return Expect(raw)
        want = np.where(A == 0, A, raw)  # sign(+-0) is x itself
        count_changed(deliberate, "sign-of-zero", raw, want)
        return Expect(want)
    if op in ("floor", "ceil", "round", "trunc"):
        if is_float(A.dtype):
            return Expect({"floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc}[op](A))
        if op != "round":  # NumPy 1.24 gives f64 for floor/ceil of integers
            deliberate["int-floor-ceil-dtype"] = deliberate.get("int-floor-ceil-dtype", 0) + A.size
        return Expect(A)
    if op == "logical_not":
        return Expect(np.logical_not(A))
    if op == "sqrt":
        return Expect(np.sqrt(A))
    if op == "rsqrt":
        return Expect(t(1) / np.sqrt(A))
    if op == "sigmoid":
        return Expect(t(1) / (t(1) + np.exp(-A)), ulps=ULPS)
    if op in SPECIAL:  # in f64, rounded to the dtype; near their zeros an absolute error
        fn = np.vectorize(SPECIAL_FN[op], otypes=[np.float64])
        # Python's lgamma (Lanczos) is itself off by up to 1e-15: twice the ulps.
        return Expect(fn(A.astype(np.float64)).astype(A.dtype), ulps=2 * ULPS, tol=2 * ULPS * eps(A.dtype))
    if op in ("isnan", "isinf", "isfinite", "signbit"):
        fn = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit}[op]
        if op == "signbit" and is_float(A.dtype):  # reads the platform's sign of a made NaN, as copysign
            return Expect(fn(A), order_free=np.isnan(A), free_id="nan-sign")
        return Expect(fn(A))
    if op == "square":
        return Expect(np.square(A))
    if op == "nan_to_num":
        return Expect(np.nan_to_num(A))
    if op == "reciprocal":
        if is_float(A.dtype):
            return Expect(t(1) / A)
        want = np.where(np.abs(A) == 1, A, 0).astype(A.dtype)  # 1 / x truncated; x = 0 gives 0
        count_changed(deliberate, "int-reciprocal-of-zero", np.where(A == 0, np.iinfo(A.dtype).min, want), want)
        return Expect(want)
    if op == "relu":
        return Expect(np.where(A <= 0, A.dtype.type(0), A))
    if op == "silu":
        return Expect(A / (t(1) + np.exp(-A)), ulps=ULPS)
    if op == "softplus":
        return Expect(np.logaddexp(t(0), A), ulps=ULPS, tol=ULPS * eps(A.dtype))
    if op in ("gelu", "gelu_tanh"):
        if op == "gelu":
            erfc = np.vectorize(math.erfc, otypes=[np.float64])
            want = A.astype(np.float64) / 2 * erfc(-A.astype(np.float64) / math.sqrt(2))
        else:
            x = A.astype(np.float64)
            want = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        return Expect(want.astype(A.dtype), ulps=ULPS, tol=ULPS * eps(A.dtype))
    if op in ("erf", "erfc"):  # no scipy: math.erf(c) in f64, rounded to the dtype
        fn = np.vectorize(math.erf if op == "erf" else math.erfc, otypes=[np.float64])
        return Expect(fn(A.astype(np.float64)).astype(A.dtype), ulps=ULPS)
    fn = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sin": np.sin,
          "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "arcsin": np.arcsin, "arccos": np.arccos,
          "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "arcsinh": np.arcsinh, "arccosh": np.arccosh,
          "arctanh": np.arctanh, "exp2": np.exp2, "log2": np.log2, "log10": np.log10, "cbrt": np.cbrt}[op]
    return Expect(fn(A), ulps=ULPS)


def astype(a, to, deliberate):
    to = np.dtype(DTYPES[to])
    if not (is_float(a.dtype) and category(to) == 1):
        return Expect(a.astype(to))
    # Float to integer truncates and saturates, NaN -> 0 (NumPy: undefined, x86 gives INT_MIN).
    x = a.astype(np.float64)
    info = np.iinfo(to)
    hi, lo = x >= float(info.max) + 1.0, x < float(info.min)  # (2^bits, 2^(bits-1): the max + 1 rounds there)
    mid = ~(hi | lo | np.isnan(x))
    want = np.zeros(x.shape, dtype=to)
    want[mid] = np.trunc(x[mid]).astype(to)
    want[hi], want[lo] = info.max, info.min
    count_changed(deliberate, "float-to-int-saturation", a.astype(to), want)
    return Expect(want)


# ---- reductions --------------------------------------------------------------------

def eps(dt):
    return float(np.finfo(dt).eps) if is_float(dt) else 0.0


def reduced_count(shape, axis):
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    return int(np.prod([shape[i] for i in axis], dtype=np.int64))


def acc_dtype(dt):
    """NumPy's accumulator of integer sums and products (np.add.reduce's
    default): int64 for bool and the signed integers, uint64 for the
    unsigned ones; a float is its own."""
    dt = np.dtype(dt)
    if dt.kind == "u":
        return np.dtype(np.uint64)
    if dt.kind in "bi":
        return np.dtype(np.int64)
    return dt


def reduce(op, a, axis, keep, deliberate):
    n = reduced_count(a.shape, axis)
    mag = np.abs(a.astype(np.float64)) if a.size else a.astype(np.float64)
    if op in ("sum", "prod"):
        if not is_float(a.dtype):
            fn = np.sum if op == "sum" else np.prod
            return Expect(fn(a, axis=axis, dtype=acc_dtype(a.dtype), keepdims=keep))
        fn = np.sum if op == "sum" else np.prod
        tol = n * eps(a.dtype) * fn(mag, axis=axis, keepdims=keep)
        # Where some order of the partial results overflows (the largest partial
        # result: |x| summed, or the factors >= 1 multiplied, passes the dtype's
        # max), a reassociated order may give another inf/NaN/finite answer.
        bound = fn(mag if op == "sum" else np.maximum(mag, 1.0), axis=axis, keepdims=keep)
        free = bound > float(np.finfo(a.dtype).max)
        want = np.asarray(fn(a, axis=axis, keepdims=keep))
        return Expect(want, tol=np.where(free, np.inf, tol), order_free=free)
    if op == "mean":
        t = a.dtype if is_float(a.dtype) else np.dtype(np.float64)
        A = a.astype(t)
        tol = (n + 1) * eps(t) * np.mean(mag, axis=axis, keepdims=keep)
        return Expect(np.mean(A, axis=axis, keepdims=keep, dtype=t), tol=tol)
    if op in ("all", "any"):
        return Expect((np.all if op == "all" else np.any)(a, axis=axis, keepdims=keep))
    raw = (np.max if op == "max" else np.min)(a, axis=axis, keepdims=keep)
    if not is_float(a.dtype):
        return Expect(raw)
    # NaN propagates; among zeros, max prefers +0 and min -0 (NumPy: whichever came last).
    pos0 = np.any((a == 0) & ~np.signbit(a), axis=axis, keepdims=keep)
    neg0 = np.any((a == 0) & np.signbit(a), axis=axis, keepdims=keep)
    zero = (np.where(pos0, 0.0, -0.0) if op == "max" else np.where(neg0, -0.0, 0.0)).astype(a.dtype)
    want = np.where(raw == 0, zero, raw)
    count_changed(deliberate, "maximum-signed-zero", raw, want)
    return Expect(want)


def partition(op, a, kth, deliberate):
    """arrayjit's partition sorts the line (argpartition: argsort, stable): a
    valid partition, NumPy's at the kth place, in another order elsewhere
    (`partition-sorted`)."""
    want = np.sort(a, axis=-1, kind="stable")
    theirs = np.partition(a, kth, axis=-1)
    # NumPy's kth element is the sorted one (NaN last), whatever the rest.
    assert np.all(same(np.take(theirs, [kth], axis=-1), np.take(want, [kth], axis=-1))), "np.partition's kth"
    count_changed(deliberate, "partition-sorted", theirs, want)
    if op == "partition":
        return Expect(want)
    return Expect(np.argsort(a, axis=-1, kind="stable").astype(np.int64))


def running(op, a, axis, deliberate):
    """cummax / cummin (maximum.accumulate: NaN propagates; among zeros max
    prefers +0, min -0, as max/min) and logcumsumexp (logaddexp.accumulate,
    worked in f64: each step of ours rounds once, so the error grows with
    the position along the axis)."""
    if axis is None:
        a, axis = a.reshape(-1), 0
    if a.shape[axis] == 0:
        t = a.dtype if op != "logcumsumexp" or is_float(a.dtype) else np.dtype(np.float64)
        return Expect(a.astype(t))
    if op == "logcumsumexp":
        t = a.dtype if is_float(a.dtype) else np.dtype(np.float64)
        want = np.logaddexp.accumulate(a.astype(np.float64), axis=axis)
        shape = [1] * a.ndim
        shape[axis] = a.shape[axis]
        steps = np.arange(1, a.shape[axis] + 1).reshape(shape)
        mag = np.logaddexp.accumulate(np.abs(a.astype(np.float64)), axis=axis)
        with np.errstate(invalid="ignore"):
            tol = 2 * ULPS * eps(t) * steps * np.where(np.isfinite(mag), np.maximum(mag, 1.0), 1.0)
        return Expect(want.astype(t), ulps=ULPS, tol=tol)
    raw = (np.maximum if op == "cummax" else np.minimum).accumulate(a, axis=axis)
    if not is_float(a.dtype):
        return Expect(raw)
    pos0 = np.logical_or.accumulate((a == 0) & ~np.signbit(a), axis=axis)
    neg0 = np.logical_or.accumulate((a == 0) & np.signbit(a), axis=axis)
    zero = (np.where(pos0, 0.0, -0.0) if op == "cummax" else np.where(neg0, -0.0, 0.0)).astype(a.dtype)
    want = np.where(raw == 0, zero, raw)
    count_changed(deliberate, "maximum-signed-zero", raw, want)
    return Expect(want)


def searchlike(op, ops, attrs):
    """searchsorted, bincount (a static length), argwhere and masked_select
    (a static size, -1 / 0 after the found ones), einsum."""
    if op == "searchsorted":
        t = result_dtype(ops[:2])
        return Expect(np.searchsorted(ops[0].astype(t), ops[1].astype(t), side=attrs["side"]).astype(np.int64))
    if op == "bincount":
        n = int(attrs["length"])
        x = ops[0].astype(np.int64)
        x = x[(x >= 0) & (x < n)]
        return Expect(np.bincount(x, minlength=n)[:n].astype(np.int64))
    if op == "argwhere":
        size = int(attrs["size"])
        w = np.argwhere(ops[0]).astype(np.int64)[:size]
        return Expect(np.concatenate([w, np.full((size - len(w), ops[0].ndim), -1, np.int64)]))
    if op == "unique":
        size = int(attrs["size"])
        w = np.unique(ops[0])[:size]  # NumPy 1.24: NaNs as one (equal_nan)
        w = np.concatenate([w, np.zeros(size - len(w), w.dtype)]).astype(ops[0].dtype)
        return Expect(w, order_free=(w == 0), free_id="sign-of-zero")  # which zero NumPy's unstable sort keeps
    if op == "digitize":
        t = result_dtype(ops[:2])
        return Expect(np.digitize(ops[0].astype(t), ops[1].astype(t), right=attrs["right"] == "1").astype(np.int64))
    if op == "masked_select":
        size = int(attrs["size"])
        x, m = np.broadcast_arrays(ops[0], ops[1])
        w = x[m][:size]
        return Expect(np.concatenate([w, np.zeros(size - len(w), x.dtype)]).astype(x.dtype))
    spec = attrs["spec"].replace("_", "")
    t = result_dtype(ops)
    A = [o.astype(t) for o in ops]
    want = np.einsum(spec, *A)
    if not is_float(t):  # integers wrap in their dtype, bool is or-of-ands: exact
        return Expect(want)
    # Sums in another order: within n eps of the sum of magnitudes (matmul's rule).
    bound = np.einsum(spec, *[np.abs(a.astype(np.float64)) for a in A])
    n = max(1, int(np.prod([a.size for a in A])) // max(1, np.asarray(want).size))
    tol = n * eps(t) * bound
    free = bound > float(np.finfo(t).max)
    return Expect(want, tol=np.where(free, np.inf, tol), order_free=free)


def matmul(a, b):
    t = result_dtype([a, b])
    A, B = a.astype(t), b.astype(t)
    if not is_float(t):
        return Expect(np.matmul(A, B))
    k = a.shape[-1]
    bound = np.matmul(np.abs(A.astype(np.float64)), np.abs(B.astype(np.float64)))
    tol = k * eps(t) * bound
    # Where a product or a partial sum can overflow, the BLAS's order and its
    # fused multiply-adds decide between inf, -inf and NaN (an overflowing
    # product inside an FMA never becomes inf): the reduction freedom.
    free = bound > float(np.finfo(t).max)
    return Expect(np.matmul(A, B), tol=np.where(free, np.inf, tol), order_free=free)


def statistic(op, a, attrs):
    """arrayjit/statistics.hpp: NumPy's functions, floats within the error
    of their sums (n * eps of the sum of magnitudes), as the reductions."""
    keep = attrs.get("keep") == "1"
    if op in ("median", "quantile"):
        axis = None if attrs["axis"] == "none" else int(attrs["axis"])
        A = a if is_float(a.dtype) else a.astype(np.float64)
        if op == "median":
            want = np.median(A, axis=axis, keepdims=keep)
        else:
            want = np.quantile(A, float.fromhex(attrs["q"][2:]), axis=axis, keepdims=keep)
        want = np.asarray(want, dtype=A.dtype)
        # -0.0 and +0.0 tie: NumPy partitions, arrayjit sorts stably, so a zero result's sign may differ.
        # f32: arrayjit interpolates in f64 and rounds once; NumPy 1.24 in f32 unless the result is 0-d.
        # (NumPy's b - (b - a)(1 - t) in f32 errs by ulps of the line's values, not of the result.)
        exact = A.dtype == np.float64 or op == "median"
        tol = None if exact else 4 * eps(A.dtype) * float(np.max(np.abs(A[np.isfinite(A)]), initial=0))
        return Expect(want, tol=tol, order_free=(want == 0), free_id="quantile-signed-zero")
    if op == "diff":
        return Expect(np.diff(a, int(attrs["n"]), int(attrs["axis"])))
    axes = attrs["axes"]
    axis = None if axes == "all" else tuple(sorted(i % a.ndim for i in ints(axes)))
    n = reduced_count(a.shape, axis)
    if op == "count_nonzero":
        want = np.count_nonzero(a, axis=axis, keepdims=keep) if axis is not None else np.count_nonzero(a)
        want = np.asarray(want, dtype=np.int64)
        if keep and axis is None:
            want = want.reshape((1,) * a.ndim)
        return Expect(want)
    if op in ("var", "std"):
        A = a if is_float(a.dtype) else a.astype(np.float64)
        ddof = int(attrs["ddof"])
        want = (np.var if op == "var" else np.std)(A, axis=axis, ddof=ddof, keepdims=keep)
        mag = np.mean(np.square(A.astype(np.float64)), axis=axis, keepdims=keep) if n else 0.0
        tol = 8 * (n + 2) * eps(A.dtype) * np.abs(mag) * max(1.0, n / max(n - ddof, 1))
        if op == "std":
            tol = np.sqrt(tol)
        return Expect(np.asarray(want, dtype=A.dtype), ulps=ULPS, tol=tol)
    if not is_float(a.dtype):  # no NaN: the plain reductions
        fn = {"nansum": np.sum, "nanmean": np.mean, "nanmax": np.max, "nanmin": np.min}[op]
        t = None
        if op == "nansum":
            t = acc_dtype(a.dtype)
        elif op == "nanmean":
            t = np.float64
        want = fn(a, axis=axis, keepdims=keep, dtype=t) if t is not None else fn(a, axis=axis, keepdims=keep)
        if op == "nanmean":
            return Expect(want, tol=(n + 1) * eps(np.float64) * np.mean(np.abs(a.astype(np.float64)), axis=axis, keepdims=keep))
        return Expect(want)
    fn = {"nansum": np.nansum, "nanmean": np.nanmean, "nanmax": np.nanmax, "nanmin": np.nanmin}[op]
    want = np.asarray(fn(a, axis=axis, keepdims=keep), dtype=a.dtype)
    if op in ("nanmax", "nanmin"):  # -0.0 < +0.0 (IEEE 754-2019), as max/min
        return Expect(want, order_free=(want == 0), free_id="maximum-signed-zero")
    mag = np.nansum(np.abs(a.astype(np.float64)), axis=axis, keepdims=keep)
    if op == "nanmean":
        mag = mag / np.maximum(np.sum(~np.isnan(a), axis=axis, keepdims=keep), 1)
    return Expect(want, tol=(n + 1) * eps(a.dtype) * mag)


PRODUCTS = {"outer": lambda a, b: np.multiply.outer(a.ravel(), b.ravel()), "kron": np.kron,
            "tensordot": lambda a, b: np.tensordot(a, b, 1), "dot": np.dot, "inner": np.inner,
            "vdot": lambda a, b: np.dot(a.ravel(), b.ravel()), "cross": np.cross}


def product(op, a, b):
    """The products of shape_functions.hpp in the operands' promoted dtype:
    sums of products within k * eps of the sum of absolute products, as matmul."""
    t = result_dtype([a, b])
    A, B = a.astype(t), b.astype(t)
    fn = PRODUCTS[op]
    want = fn(A, B)
    if not is_float(t):
        return Expect(want)
    if op == "cross":  # a difference of two products
        mag = np.abs(np.multiply.outer(A.astype(np.float64), B.astype(np.float64))).max(initial=0)
        return Expect(want, ulps=ULPS, tol=2 * eps(t) * mag)
    bound = fn(np.abs(A.astype(np.float64)), np.abs(B.astype(np.float64)))
    tol = max(A.size, 1) * eps(t) * bound
    free = bound > float(np.finfo(t).max)
    return Expect(want, tol=np.where(free, np.inf, tol), order_free=free)


# ---- indexing ---------------------------------------------------------------------

def parse_slices(text):
    def bound(s):
        return None if s == "_" else int(s)
    return tuple(slice(bound(p[0]), bound(p[1]), int(p[2])) for p in (x.split(":") for x in text.split(",")))


def indexing(op, ops, attrs):
    """Indices here are always in range (NumPy raises beyond; arrayjit clamps
    gathers and drops scatters, tested in tests/test_indexing.cpp)."""
    a = ops[0]
    axis = None if attrs.get("axis", "none") == "none" else int(attrs["axis"])
    if op == "take":
        return Expect(np.take(a, ops[1], axis=axis))
    if op == "take_along_axis":
        return Expect(np.take_along_axis(a, ops[1].astype(np.int64), axis=axis))
    if op == "one_hot":
        c = int(attrs["classes"])
        return Expect((a[..., None] == np.arange(c)).astype(DTYPES[attrs["dtype"]]))
    if op == "pad":
        if attrs["widths"] == "none":
            return Expect(a.copy())
        widths = [tuple(int(x) for x in w.split(",")) for w in attrs["widths"].split(";")]
        if attrs["mode"] == "constant":
            return Expect(np.pad(a, widths, "constant", constant_values=scalar_of(attrs["value"]).value))
        return Expect(np.pad(a, widths, attrs["mode"]))
    if op == "roll":
        return Expect(np.roll(a, int(attrs["shift"]), axis=axis))
    b = a.copy()
    if op in ("scatter_add", "scatter"):  # np.add.at / setitem along the axis (the last duplicate wins)
        where = (slice(None),) * (axis % a.ndim) + (ops[1].astype(np.int64),)
        if op == "scatter_add":
            np.add.at(b, where, ops[2])
        else:
            b[where] = ops[2]
        return Expect(b)
    if op == "put_along_axis":
        np.put_along_axis(b, ops[1].astype(np.int64), ops[2], axis=axis)
        return Expect(b)
    sl = parse_slices(attrs["s"]) if attrs.get("s") else ()
    if op == "slice_update":
        b[sl] = ops[1]
    else:
        b[sl] += ops[1]
    return Expect(b)


# ---- programs ---------------------------------------------------------------------

def parse_values(dt, toks, shape):
    if dt == "bool":
        v = np.array([t == "1" for t in toks], dtype=np.bool_)
    elif dt in ("f32", "f64"):
        v = np.array([float.fromhex(t) for t in toks], dtype=np.float64).astype(DTYPES[dt])
    else:
        v = np.array([int(t) for t in toks], dtype=np.int64).astype(DTYPES[dt])
    return v.reshape(shape)


def ints(s):
    return [int(x) for x in s.split(",")] if s else []


def scalar_of(tok):
    kind, v = tok.split(":", 1)
    return Scalar(kind, float.fromhex(v) if kind == "f" else int(v))


def expect(op, args, attrs, env, deliberate):
    ops = [env[t] if t.startswith("v") else scalar_of(t) for t in args]
    dt = lambda: DTYPES[attrs["dtype"]]  # noqa: E731
    if op in COMPARE or op in ARITH or op in FLOAT_BINARY or op in ("maximum", "minimum", "divide", "true_divide", "isclose",
                                                                    "floor_divide", "pow", "fmod"):
        return binary(op, ops[0], ops[1], deliberate)
    if op == "where":
        t = result_dtype(ops[1:])
        return Expect(np.where(ops[0], as_t(ops[1], t), as_t(ops[2], t)))
    if op == "clip":  # maximum, then minimum, each with its own promotion
        m = binary("maximum", ops[0], ops[1], deliberate).value
        return binary("minimum", m, ops[2], deliberate)
    if op == "astype":
        return astype(ops[0], attrs["to"], deliberate)
    if op in ("sum", "prod", "mean", "max", "min", "all", "any"):
        axes = attrs["axes"]
        axis = None if axes == "all" else tuple(i % ops[0].ndim for i in ints(axes))
        return reduce(op, ops[0], axis, attrs["keep"] == "1", deliberate)
    if op in ("argmax", "argmin"):
        axis = None if attrs["axis"] == "none" else int(attrs["axis"])
        fn = np.argmax if op == "argmax" else np.argmin
        return Expect(fn(ops[0], axis=axis, keepdims=attrs["keep"] == "1").astype(np.int64))
    if op in ("cumsum", "cumprod"):  # in order along the axis, as NumPy: exact
        axis = None if attrs["axis"] == "none" else int(attrs["axis"])
        a = ops[0]
        t = acc_dtype(a.dtype)
        return Expect((np.cumsum if op == "cumsum" else np.cumprod)(a, axis=axis, dtype=t))
    if op in ("cummax", "cummin", "logcumsumexp"):
        return running(op, ops[0], None if attrs["axis"] == "none" else int(attrs["axis"]), deliberate)
    if op in ("searchsorted", "bincount", "argwhere", "masked_select", "einsum", "unique", "digitize"):
        return searchlike(op, ops, attrs)
    if op in ("partition", "argpartition"):
        return partition(op, ops[0], int(attrs["kth"]), deliberate)
    if op == "sort":
        return Expect(np.sort(ops[0], axis=int(attrs["axis"]), kind="stable"))
    if op == "argsort":
        return Expect(np.argsort(ops[0], axis=int(attrs["axis"]), kind="stable").astype(np.int64))
    if op == "reshape":
        return Expect(np.reshape(ops[0], ints(attrs["shape"])))
    if op == "transpose":
        p = attrs["perm"]
        return Expect(np.transpose(ops[0]) if p in ("rev", "none") else np.transpose(ops[0], ints(p)))
    if op == "broadcast_to":
        return Expect(np.broadcast_to(ops[0], ints(attrs["shape"])))
    if op == "expand_dims":
        return Expect(np.expand_dims(ops[0], int(attrs["axis"])))
    if op == "squeeze":
        a = attrs["axes"]
        return Expect(np.squeeze(ops[0], axis=None if a == "all" else tuple(ints(a))))
    if op == "slice":
        def bound(s):
            return None if s == "_" else int(s)
        sl = tuple(slice(bound(p[0]), bound(p[1]), int(p[2]))
                   for p in (x.split(":") for x in attrs["s"].split(",")))
        return Expect(ops[0][sl])
    if op in ("take", "take_along_axis", "scatter_add", "scatter", "put_along_axis", "slice_update", "slice_add",
              "pad", "roll", "one_hot"):
        return indexing(op, ops, attrs)
    if op == "concatenate":
        return Expect(np.concatenate(ops, axis=int(attrs["axis"])))
    if op == "stack":
        return Expect(np.stack(ops, axis=int(attrs["axis"])))
    if op == "matmul":
        return matmul(ops[0], ops[1])
    if op in ("zeros", "ones"):
        return Expect((np.zeros if op == "zeros" else np.ones)(ints(attrs["shape"]), dtype=dt()))
    if op == "full":
        return Expect(np.full(ints(attrs["shape"]), scalar_of(attrs["value"]).value, dtype=dt()))
    if op == "arange":
        # start + i * step, rounded once; NumPy steps by (start + step) - start.
        start, stop, step = (float.fromhex(attrs[k][2:]) for k in ("start", "stop", "step"))
        raw = np.arange(start, stop, step, dtype=dt())
        want = (start + np.arange(raw.size, dtype=np.float64) * step).astype(dt())
        count_changed(deliberate, "arange-step", raw, want)
        return Expect(want)
    if op == "arange_n":
        return Expect(np.arange(int(attrs["n"]), dtype=dt()))
    if op == "linspace":
        start, stop = (float.fromhex(attrs[k][2:]) for k in ("start", "stop"))
        return Expect(np.linspace(start, stop, int(attrs["num"]), dtype=dt()))
    if op == "eye":
        return Expect(np.eye(int(attrs["n"]), int(attrs["m"]), int(attrs["k"]), dtype=dt()))
    if op in ("var", "std", "nansum", "nanmean", "nanmax", "nanmin", "count_nonzero", "diff", "median", "quantile"):
        return statistic(op, ops[0], attrs)
    if op == "flip":
        return Expect(np.flip(ops[0]) if attrs["axes"] == "all" else np.flip(ops[0], int(attrs["axes"])))
    if op == "swapaxes":
        return Expect(np.swapaxes(ops[0], int(attrs["a"]), int(attrs["b"])))
    if op == "moveaxis":
        return Expect(np.moveaxis(ops[0], int(attrs["src"]), int(attrs["dst"])))
    if op == "tile":
        return Expect(np.tile(ops[0], ints(attrs["reps"])))
    if op == "repeat":
        axis = None if attrs["axis"] == "none" else int(attrs["axis"])
        return Expect(np.repeat(ops[0], int(attrs["n"]), axis=axis))
    if op in ("tril", "triu"):
        return Expect((np.tril if op == "tril" else np.triu)(ops[0], int(attrs["k"])))
    if op in ("diagonal", "trace"):
        d = np.diagonal(ops[0], int(attrs["off"]), int(attrs["a"]), int(attrs["b"]))
        if op == "diagonal":
            return Expect(d)
        t = acc_dtype(d.dtype)  # sum's accumulator
        tol = d.shape[-1] * eps(t) * np.sum(np.abs(d.astype(np.float64)), axis=-1)
        return Expect(np.sum(d.astype(t), axis=-1, dtype=t), tol=tol)
    if op == "diag":
        return Expect(np.diag(ops[0], int(attrs["k"])))
    if op in ("atleast_1d", "atleast_2d", "atleast_3d"):
        return Expect(getattr(np, op)(ops[0]))
    if op in ("outer", "kron", "tensordot", "dot", "inner", "vdot", "cross"):
        return product(op, ops[0], ops[1])
    if op == "array_split":
        return Expect(np.array_split(ops[0], int(attrs["sections"]), int(attrs["axis"]))[int(attrs["i"])])
    if op in FLOAT_ONLY or op in ("negative", "abs", "sign", "floor", "ceil", "round", "trunc", "logical_not",
                                  "isnan", "isinf", "isfinite", "signbit", "square", "nan_to_num", "reciprocal",
                                  "relu"):
        return unary(op, ops[0], deliberate)
    raise ValueError("unknown op " + op)


def check(e, got, dt, shape):
    """None if arrayjit's value `got` (dtype name dt, shape) agrees with Expect e."""
    want = e.value
    if NAMES.get(want.dtype) != dt:
        return "dtype %s, NumPy %s" % (dt, NAMES.get(want.dtype, want.dtype))
    if tuple(shape) != want.shape:
        return "shape %s, NumPy %s" % (list(shape), list(want.shape))
    ok = same(want, got)
    if e.ulps and not ok.all():
        ok |= ulp_distance(want, got) <= e.ulps
    if e.tol is not None and not ok.all():
        finite = np.isfinite(want) & np.isfinite(got)
        ok |= finite & (np.abs(want.astype(np.float64) - got.astype(np.float64)) <= np.broadcast_to(e.tol, want.shape))
    if e.order_free is not None and not ok.all():
        free = np.broadcast_to(e.order_free, want.shape) & ~ok
        if free.any():
            DELIBERATE[e.free_id] = DELIBERATE.get(e.free_id, 0) + int(free.sum())
            ok = ok | free
    if ok.all():
        return None
    i = np.flatnonzero(~ok.ravel())
    return "%d of %d elements differ, first at flat index %d: arrayjit %r, NumPy %r" % (
        len(i), ok.size, i[0], got.ravel()[i[0]].item(), want.ravel()[i[0]].item())


def documented_ids(path):
    try:
        text = open(path).read()
    except OSError:
        return set()
    section = text.split("## Differences from NumPy", 1)
    return set(re.findall(r"`([a-z0-9-]+)`", section[1])) if len(section) == 2 else set()


def main():
    programs_path, report_path = sys.argv[1], sys.argv[2]
    docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "semantics.md")
    counts = {"programs": 0, "ops": 0, "elements": 0}
    per_op, deliberate, fails = {}, DELIBERATE, []
    prog, env = None, {}
    with open(programs_path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("prog "):
                prog, env = line[5:], {}
                continue
            if line == "end":
                counts["programs"] += 1
                continue
            head, _, vals = line.partition(" =")
            toks = head.split(" ")
            name, dt, dims, op = toks[0], toks[1], ints(toks[2][1:-1]), toks[3]
            got = parse_values(dt, vals.split(), dims)
            env[name] = got
            if op == "input":
                continue
            args = [t for t in toks[4:] if "=" not in t]
            attrs = dict(t.split("=", 1) for t in toks[4:] if "=" in t)
            counts["ops"] += 1
            counts["elements"] += got.size
            per_op[op] = per_op.get(op, 0) + 1
            try:
                msg = check(expect(op, args, attrs, env, deliberate), got, dt, dims)
            except Exception as ex:  # a NumPy error where arrayjit gave a value
                msg = "NumPy raised %s: %s" % (type(ex).__name__, ex)
            if msg:
                fails.append("fail %s %s: %s\n  %s" % (prog, name, msg, head))
    listed = documented_ids(docs)
    for key in sorted(deliberate):
        if key not in listed:
            fails.append("fail deliberate difference `%s` is not listed under \"Differences from NumPy\" in %s"
                         % (key, docs))
    with open(report_path, "w") as out:
        for k, v in counts.items():
            out.write("%s %d\n" % (k, v))
        for k in sorted(per_op):
            out.write("op %s %d\n" % (k, per_op[k]))
        for k in sorted(deliberate):
            out.write("deliberate %s %d\n" % (k, deliberate[k]))
        for line in fails:
            out.write(line + "\n")


if __name__ == "__main__":
    main()
