"""Every op of the C API under its NumPy (or array API) name.

The elementwise ops, reductions and products are made from the C API's own
lists (aj_op_names), so a new op there is a new function here with no line
written; the rest are one small wrapper each.
"""
import builtins
import ctypes as C
import numbers

from ._capi import H, OP_LISTS, check, lib, set_caller
from ._core import (Array, _axes_arg, _axis_ptr, _code, _i32s, _i64s, _index, _shape_arg, bool_,
                    dtype as _dtype, float64, int64, new, new_many, operand)

__all__ = []


def _export(fn, name=None):
    name = name or fn.__name__
    fn.__name__ = name
    fn.__qualname__ = name
    globals()[name] = fn
    __all__.append(name)
    return fn


UNARY, BINARY, TERNARY, REDUCE, PRODUCT = (OP_LISTS[i] for i in range(5))


def _make_unary(name):
    f = getattr(lib, "aj_" + name)

    def op(x):
        set_caller()
        return new(f, operand(x))
    op.__doc__ = "arrayjit's %s, elementwise (NumPy's np.%s)." % (name, name)
    return op


def _make_binary(name):
    f = getattr(lib, "aj_" + name)

    def op(a, b):
        set_caller()
        return new(f, operand(a), operand(b))
    op.__doc__ = "arrayjit's %s, elementwise with broadcasting (NumPy's np.%s)." % (name, name)
    return op


def _make_ternary(name):
    f = getattr(lib, "aj_" + name)

    def op(a, b, c):
        set_caller()
        return new(f, operand(a), operand(b), operand(c))
    op.__doc__ = "arrayjit's %s (NumPy's np.%s)." % (name, name)
    return op


def _make_reduce(name):
    f = getattr(lib, "aj_" + name)

    def op(x, axis=None, keepdims=False):
        set_caller()
        axes, n = _axes_arg(axis)
        return new(f, operand(x), axes, n, 1 if keepdims else 0)
    op.__doc__ = "arrayjit's %s over axis (None: all), as NumPy's np.%s." % (name, name)
    return op


for _n in UNARY:
    _export(_make_unary(_n), _n)
for _n in BINARY:
    _export(_make_binary(_n), _n)
for _n in TERNARY:
    _export(_make_ternary(_n), _n)
for _n in REDUCE:
    _export(_make_reduce(_n), _n)
for _n in PRODUCT:
    _export(_make_binary(_n), _n)

# NumPy's and the array API's other names for the same ops. NumPy's divide is
# true division (the C API's divide floors integers, as C++'s operator/).
_ALIASES = {
    "divide": "true_divide", "power": "pow", "absolute": "abs", "remainder": "mod", "amax": "max",
    "amin": "min", "asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2",
    "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh", "bitwise_not": "bitwise_invert",
    "invert": "bitwise_invert", "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
}
for _alias, _target in _ALIASES.items():
    globals()[_alias] = globals()[_target]
    if _alias not in __all__:
        __all__.append(_alias)


def _arrays(xs):
    xs = [operand(x) for x in xs]
    return xs, (H * builtins.max(1, len(xs)))(*[x._h for x in xs]), len(xs)


# ---- creation ------------------------------------------------------------------------------


def _default_float(d):
    return float64 if d is None else _dtype(d)


@_export
def zeros(shape, dtype=None):
    set_caller()
    s, n = _shape_arg(shape)
    return new(lib.aj_zeros, s, n, _default_float(dtype).code)


@_export
def ones(shape, dtype=None):
    set_caller()
    s, n = _shape_arg(shape)
    return new(lib.aj_ones, s, n, _default_float(dtype).code)


@_export
def empty(shape, dtype=None):
    """zeros: arrayjit has no uninitialized memory to give out."""
    return zeros(shape, dtype)


@_export
def full(shape, fill_value, dtype=None):
    set_caller()
    if dtype is None:
        dtype = (bool_ if isinstance(fill_value, builtins.bool) else
                 int64 if isinstance(fill_value, numbers.Integral) else float64)
        if isinstance(fill_value, Array):
            dtype = fill_value.dtype
    if isinstance(fill_value, Array):
        return broadcast_to(fill_value.astype(dtype), shape)
    s, n = _shape_arg(shape)
    return new(lib.aj_full, s, n, builtins.float(fill_value), _dtype(dtype).code)


def _like_dtype(dtype):
    return None if dtype is None else C.byref(C.c_int32(_code(dtype)))


@_export
def zeros_like(a, dtype=None):
    set_caller()
    return new(lib.aj_zeros_like, operand(a), _like_dtype(dtype))


@_export
def ones_like(a, dtype=None):
    set_caller()
    return new(lib.aj_ones_like, operand(a), _like_dtype(dtype))


@_export
def empty_like(a, dtype=None):
    return zeros_like(a, dtype)


@_export
def full_like(a, fill_value, dtype=None):
    set_caller()
    return new(lib.aj_full_like, operand(a), builtins.float(fill_value), _like_dtype(dtype))


@_export
def arange(start, stop=None, step=None, dtype=None):
    set_caller()
    ints = builtins.all(isinstance(v, numbers.Integral) for v in (start, stop, step) if v is not None)
    d = _dtype(dtype) if dtype is not None else (int64 if ints else float64)
    if stop is None and step is None and ints:
        return new(lib.aj_arange, _index(start), d.code)
    if stop is None:
        start, stop = 0, start
    return new(lib.aj_arange_range, builtins.float(start), builtins.float(stop),
               builtins.float(1 if step is None else step), d.code)


@_export
def linspace(start, stop, num=50, dtype=None):
    set_caller()
    return new(lib.aj_linspace, builtins.float(start), builtins.float(stop), _index(num), _default_float(dtype).code)


@_export
def logspace(start, stop, num=50, base=10.0, dtype=None):
    set_caller()
    return new(lib.aj_logspace, builtins.float(start), builtins.float(stop), _index(num), builtins.float(base),
               _default_float(dtype).code)


@_export
def eye(N, M=None, k=0, dtype=None):
    set_caller()
    return new(lib.aj_eye, _index(N), _index(N if M is None else M), _index(k), _default_float(dtype).code)


@_export
def identity(n, dtype=None):
    return eye(n, dtype=dtype)


# ---- conversion, shape ---------------------------------------------------------------------


@_export
def astype(x, dtype, copy=True):
    set_caller()
    return new(lib.aj_astype, operand(x), _code(dtype))


@_export
def reshape(x, shape, *more):
    set_caller()
    if more:
        shape = (shape,) + more
    s, n = _shape_arg(shape)
    return new(lib.aj_reshape, operand(x), s, n)


@_export
def ravel(x):
    return reshape(x, (-1,))


@_export
def transpose(x, axes=None):
    set_caller()
    if axes is None:
        return new(lib.aj_transpose, operand(x), None, 0)
    p, n = _i32s(axes)
    return new(lib.aj_transpose, operand(x), p, n)


permute_dims = transpose
__all__.append("permute_dims")


@_export
def matrix_transpose(x):
    return swapaxes(x, -1, -2)


@_export
def broadcast_to(x, shape):
    set_caller()
    s, n = _shape_arg(shape)
    return new(lib.aj_broadcast_to, operand(x), s, n)


@_export
def expand_dims(x, axis):
    set_caller()
    if isinstance(axis, (tuple, list)):
        out = operand(x)
        for a in sorted(_index(a) % (out.ndim + len(axis)) for a in axis):
            out = new(lib.aj_expand_dims, out._h, a)
        return out
    return new(lib.aj_expand_dims, operand(x), _index(axis))


@_export
def squeeze(x, axis=None):
    set_caller()
    axes, n = _axes_arg(axis)
    return new(lib.aj_squeeze, operand(x), axes, n)


@_export
def concatenate(arrays, axis=0):
    set_caller()
    xs, hs, n = _arrays(arrays)
    if axis is None:
        xs, hs, n = _arrays([ravel(x) for x in xs])
        axis = 0
    return new(lib.aj_concatenate, hs, n, _index(axis))


concat = concatenate
__all__.append("concat")


@_export
def stack(arrays, axis=0):
    set_caller()
    xs, hs, n = _arrays(arrays)
    return new(lib.aj_stack, hs, n, _index(axis))


@_export
def vstack(arrays):
    return concatenate([atleast_2d(a) for a in arrays], 0)


@_export
def hstack(arrays):
    xs = [atleast_1d(a) for a in arrays]
    return concatenate(xs, 0 if xs and xs[0].ndim == 1 else 1)


@_export
def flip(x, axis=None):
    set_caller()
    axes, n = _axes_arg(axis)
    return new(lib.aj_flip, operand(x), axes, n)


@_export
def swapaxes(x, axis1, axis2):
    set_caller()
    return new(lib.aj_swapaxes, operand(x), _index(axis1), _index(axis2))


@_export
def moveaxis(x, source, destination):
    set_caller()
    if isinstance(source, numbers.Integral):
        source, destination = (source,), (destination,)
    s, n = _i32s(source)
    d, m = _i32s(destination)
    if n != m:
        raise ValueError("moveaxis: %d sources and %d destinations" % (n, m))
    return new(lib.aj_moveaxis, operand(x), s, d, n)


@_export
def tile(x, reps):
    set_caller()
    r, n = _shape_arg(reps)
    return new(lib.aj_tile, operand(x), r, n)


@_export
def repeat(x, repeats, axis=None):
    set_caller()
    if isinstance(repeats, numbers.Integral):
        repeats = (repeats,)
    r, n = _i64s(repeats)
    return new(lib.aj_repeat, operand(x), r, n, _axis_ptr(axis))


@_export
def split(x, indices_or_sections, axis=0):
    set_caller()
    x = operand(x)
    if isinstance(indices_or_sections, numbers.Integral):
        k = _index(indices_or_sections)
        extent = x.shape[axis]
        if k <= 0 or extent % k:
            raise ValueError("split: an axis of extent %d does not divide into %d equal pieces (array_split does)"
                             % (extent, k))
        return array_split(x, k, axis)
    idx, n = _i64s(indices_or_sections)
    return new_many(lib.aj_split, n + 1, x._h, idx, n, _index(axis))


@_export
def array_split(x, sections, axis=0):
    set_caller()
    k = _index(sections)
    return new_many(lib.aj_array_split, k, operand(x), k, _index(axis))


@_export
def unstack(x, axis=0):
    set_caller()
    x = operand(x)
    n = x.shape[axis]
    return tuple(new_many(lib.aj_unstack, n, x._h, _index(axis), count_after=True))


@_export
def broadcast_arrays(*arrays):
    set_caller()
    xs, hs, n = _arrays(arrays)
    return new_many(lib.aj_broadcast_arrays, n, hs, n)


@_export
def meshgrid(*xs, indexing="xy"):
    set_caller()
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: indexing must be 'xy' or 'ij', got %r" % (indexing,))
    arrs, hs, n = _arrays(xs)
    return new_many(lib.aj_meshgrid, n, hs, n, 1 if indexing == "ij" else 0)


def _k_op(cname):
    f = getattr(lib, "aj_" + cname)

    def op(x, k=0):
        set_caller()
        return new(f, operand(x), _index(k))
    return op


tril = _export(_k_op("tril"), "tril")
triu = _export(_k_op("triu"), "triu")
diag = _export(_k_op("diag"), "diag")


@_export
def diagonal(x, offset=0, axis1=0, axis2=1):
    set_caller()
    return new(lib.aj_diagonal, operand(x), _index(offset), _index(axis1), _index(axis2))


@_export
def trace(x, offset=0, axis1=0, axis2=1):
    set_caller()
    return new(lib.aj_trace, operand(x), _index(offset), _index(axis1), _index(axis2))


def _atleast(cname):
    f = getattr(lib, "aj_" + cname)

    def op(*xs):
        set_caller()
        out = [new(f, operand(x)) for x in xs]
        return out[0] if len(out) == 1 else out
    return op


atleast_1d = _export(_atleast("atleast_1d"), "atleast_1d")
atleast_2d = _export(_atleast("atleast_2d"), "atleast_2d")
atleast_3d = _export(_atleast("atleast_3d"), "atleast_3d")


@_export
def slice(x, starts, stops, steps=None):  # noqa: A001 (the C API's name)
    """Python slicing of the leading axes: x[starts[0]:stops[0]:steps[0], ...]
    (None for a bound not given)."""
    set_caller()
    NONE = -(1 << 63)
    st, n = _i64s([NONE if v is None else v for v in starts])
    sp, m = _i64s([NONE if v is None else v for v in stops])
    sd = None
    if steps is not None:
        sd, _ = _i64s([1 if v is None else v for v in steps])
    if n != m:
        raise ValueError("slice: %d starts and %d stops" % (n, m))
    return new(lib.aj_slice, operand(x), st, sp, sd, n)


@_export
def slice_axis(x, axis, start=None, stop=None, step=1):
    set_caller()
    NONE = -(1 << 63)
    return new(lib.aj_slice_axis, operand(x), _index(axis), NONE if start is None else _index(start),
               NONE if stop is None else _index(stop), _index(step))


# ---- products, contractions ------------------------------------------------------------------


@_export
def matmul(a, b):
    set_caller()
    return new(lib.aj_matmul, operand(a), operand(b))


@_export
def tensordot(a, b, axes=2):
    set_caller()
    a, b = operand(a), operand(b)
    if isinstance(axes, numbers.Integral):
        k = _index(axes)
        a_axes = list(range(a.ndim - k, a.ndim))
        b_axes = list(range(k))
    else:
        a_axes, b_axes = axes
        if isinstance(a_axes, numbers.Integral):
            a_axes, b_axes = [a_axes], [b_axes]
    pa, n = _i32s(a_axes)
    pb, m = _i32s(b_axes)
    if n != m:
        raise ValueError("tensordot: %d axes of a and %d of b" % (n, m))
    return new(lib.aj_tensordot, a._h, b._h, pa, pb, n)


@_export
def cross(a, b, axis=-1):
    set_caller()
    return new(lib.aj_cross, operand(a), operand(b), _index(axis))


@_export
def einsum(subscripts, *operands):
    set_caller()
    xs, hs, n = _arrays(operands)
    return new(lib.aj_einsum, subscripts.encode(), hs, n)


@_export
def einsum_path(subscripts, *operands):
    """(the contraction order as np.einsum_path's list, the report text)."""
    set_caller()
    xs = [operand(x) for x in operands]
    shapes = [_i64s(x.shape)[0] for x in xs]
    ptrs = (C.c_void_p * builtins.max(1, len(xs)))(*[C.cast(s, C.c_void_p) for s in shapes])
    ndims = (C.c_int32 * builtins.max(1, len(xs)))(*[x.ndim for x in xs])
    steps = (C.c_int32 * builtins.max(1, 2 * builtins.max(0, len(xs) - 1)))()
    n = C.c_size_t()
    check(lib.aj_einsum_path(subscripts.encode(), ptrs, ndims, len(xs), steps, None, 0, C.byref(n)))
    buf = C.create_string_buffer(n.value + 1)
    check(lib.aj_einsum_path(subscripts.encode(), ptrs, ndims, len(xs), steps, buf, n.value + 1, None))
    path = ["einsum_path"] + [(steps[2 * i], steps[2 * i + 1]) for i in range(builtins.max(0, len(xs) - 1))]
    return path, buf.value.decode()


# ---- elementwise with arguments -----------------------------------------------------------------


@_export
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    set_caller()
    pi = None if posinf is None else C.byref(C.c_double(posinf))
    ni = None if neginf is None else C.byref(C.c_double(neginf))
    return new(lib.aj_nan_to_num, operand(x), builtins.float(nan), pi, ni)


@_export
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    set_caller()
    return new(lib.aj_isclose, operand(a), operand(b), rtol, atol, 1 if equal_nan else 0)


@_export
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A Python bool, as NumPy's (evaluates; use isclose(...).all() to stay lazy)."""
    set_caller()
    return builtins.bool(new(lib.aj_allclose, operand(a), operand(b), rtol, atol, 1 if equal_nan else 0).item())


@_export
def array_equal(a, b, equal_nan=False):
    set_caller()
    return builtins.bool(new(lib.aj_array_equal, operand(a), operand(b), 1 if equal_nan else 0).item())


@_export
def clip(x, a_min=None, a_max=None):
    set_caller()
    x = operand(x)
    if a_min is None and a_max is None:
        raise ValueError("clip: give a_min, a_max or both")
    if a_min is None:
        return minimum(x, a_max)
    if a_max is None:
        return maximum(x, a_min)
    return new(lib.aj_clip, x._h, operand(a_min), operand(a_max))


# ---- statistics, reductions with arguments -------------------------------------------------------


@_export
def var(x, axis=None, ddof=0, keepdims=False):
    set_caller()
    axes, n = _axes_arg(axis)
    return new(lib.aj_var, operand(x), axes, n, builtins.float(ddof), 1 if keepdims else 0)


@_export
def std(x, axis=None, ddof=0, keepdims=False):
    set_caller()
    axes, n = _axes_arg(axis)
    return new(lib.aj_std, operand(x), axes, n, builtins.float(ddof), 1 if keepdims else 0)


@_export
def diff(x, n=1, axis=-1):
    set_caller()
    return new(lib.aj_diff, operand(x), _index(n), _index(axis))


@_export
def quantile(x, q, axis=None, keepdims=False):
    set_caller()
    return new(lib.aj_quantile, operand(x), builtins.float(q), _axis_ptr(axis), 1 if keepdims else 0)


@_export
def percentile(x, q, axis=None, keepdims=False):
    set_caller()
    return new(lib.aj_percentile, operand(x), builtins.float(q), _axis_ptr(axis), 1 if keepdims else 0)


@_export
def median(x, axis=None, keepdims=False):
    set_caller()
    return new(lib.aj_median, operand(x), _axis_ptr(axis), 1 if keepdims else 0)


@_export
def argmax(x, axis=None, keepdims=False):
    set_caller()
    return new(lib.aj_argmax, operand(x), _axis_ptr(axis), 1 if keepdims else 0)


@_export
def argmin(x, axis=None, keepdims=False):
    set_caller()
    return new(lib.aj_argmin, operand(x), _axis_ptr(axis), 1 if keepdims else 0)


def _scan(cname):
    f = getattr(lib, "aj_" + cname)

    def op(x, axis=None):
        set_caller()
        return new(f, operand(x), _axis_ptr(axis))
    return op


for _n in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"):
    _export(_scan(_n), _n)


@_export
def cumulative_sum(x, axis=None, dtype=None, include_initial=False):
    set_caller()
    return new(lib.aj_cumulative_sum, operand(x), _axis_ptr(axis), _like_dtype(dtype), 1 if include_initial else 0)


# ---- sorting, searching ----------------------------------------------------------------------------


@_export
def sort(x, axis=-1):
    set_caller()
    x = operand(x)
    if axis is None:
        x, axis = ravel(x), 0
    return new(lib.aj_sort, x._h, _index(axis))


@_export
def argsort(x, axis=-1):
    set_caller()
    x = operand(x)
    if axis is None:
        x, axis = ravel(x), 0
    return new(lib.aj_argsort, x._h, _index(axis))


@_export
def partition(x, kth, axis=-1):
    set_caller()
    k, n = _i64s([kth] if isinstance(kth, numbers.Integral) else kth)
    return new(lib.aj_partition, operand(x), k, n, _index(axis))


@_export
def argpartition(x, kth, axis=-1):
    set_caller()
    k, n = _i64s([kth] if isinstance(kth, numbers.Integral) else kth)
    return new(lib.aj_argpartition, operand(x), k, n, _index(axis))


@_export
def top_k(x, k, axis=-1):
    """(values, indices) of the k largest along axis, largest first (jax.lax.top_k)."""
    set_caller()
    v, i = H(), H()
    x = operand(x)
    check(lib.aj_topk(x._h, _index(k), _index(axis), C.byref(v), C.byref(i)))
    return Array._own(v.value), Array._own(i.value)


topk = top_k
__all__.append("topk")


@_export
def searchsorted(a, v, side="left"):
    set_caller()
    if side not in ("left", "right"):
        raise ValueError("searchsorted: side must be 'left' or 'right', got %r" % (side,))
    return new(lib.aj_searchsorted, operand(a), operand(v), 1 if side == "right" else 0)


@_export
def digitize(x, bins, right=False):
    set_caller()
    return new(lib.aj_digitize, operand(x), operand(bins), 1 if right else 0)


@_export
def bincount(x, weights=None, minlength=0, length=None):
    set_caller()
    w = operand(weights) if weights is not None else 0
    ln = None if length is None else C.byref(C.c_int64(_index(length)))
    return new(lib.aj_bincount, operand(x), w, _index(minlength), ln)


def _size_ptr(size):
    return None if size is None else C.byref(C.c_int64(_index(size)))


@_export
def argwhere(x, size=None, fill_value=0):
    set_caller()
    return new(lib.aj_argwhere, operand(x), _size_ptr(size), _index(fill_value))


@_export
def unique(x, size=None, fill_value=0):
    set_caller()
    return new(lib.aj_unique, operand(x), _size_ptr(size), builtins.float(fill_value))


@_export
def masked_select(x, mask, size=None, fill_value=0):
    set_caller()
    return new(lib.aj_masked_select, operand(x), operand(mask), _size_ptr(size), builtins.float(fill_value))


@_export
def nonzero(x, size=None, fill_value=0):
    set_caller()
    x = operand(x)
    n = builtins.max(1, x.ndim)
    return tuple(new_many(lib.aj_nonzero, n, x._h, _size_ptr(size), _index(fill_value), count_after=True))


@_export
def where(condition, x=None, y=None):
    set_caller()
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither")
    return new(lib.aj_where, operand(condition), operand(x), operand(y))


# ---- gathers, scatters, updates ---------------------------------------------------------------------


@_export
def take(a, indices, axis=None):
    set_caller()
    return new(lib.aj_take, operand(a), operand(indices), _axis_ptr(axis))


@_export
def take_along_axis(a, indices, axis):
    set_caller()
    return new(lib.aj_take_along_axis, operand(a), operand(indices), _index(axis))


@_export
def scatter_add(a, indices, updates, axis=0):
    set_caller()
    return new(lib.aj_scatter_add, operand(a), operand(indices), operand(updates), _index(axis))


@_export
def scatter(a, indices, updates, axis=0):
    set_caller()
    return new(lib.aj_scatter, operand(a), operand(indices), operand(updates), _index(axis))


@_export
def scatter_add_along_axis(a, indices, updates, axis):
    set_caller()
    return new(lib.aj_scatter_add_along_axis, operand(a), operand(indices), operand(updates), _index(axis))


@_export
def put_along_axis(a, indices, values, axis):
    """a with values put at indices along axis (functional: a is unchanged)."""
    set_caller()
    return new(lib.aj_put_along_axis, operand(a), operand(indices), operand(values), _index(axis))


def _slice_lists(starts, stops, steps):
    NONE = -(1 << 63)
    st, n = _i64s([NONE if v is None else v for v in starts])
    sp, m = _i64s([NONE if v is None else v for v in stops])
    sd, k = _i64s([1 if v is None else v for v in (steps or [None] * n)])
    if not n == m == k:
        raise ValueError("slice lists of different lengths: %d, %d, %d" % (n, m, k))
    return st, sp, sd, n


@_export
def slice_update(a, starts, stops, steps, values):
    set_caller()
    st, sp, sd, n = _slice_lists(starts, stops, steps)
    return new(lib.aj_slice_update, operand(a), st, sp, sd, n, operand(values))


@_export
def slice_add(a, starts, stops, steps, values):
    set_caller()
    st, sp, sd, n = _slice_lists(starts, stops, steps)
    return new(lib.aj_slice_add, operand(a), st, sp, sd, n, operand(values))


@_export
def pad(x, pad_width, mode="constant", constant_values=0):
    set_caller()
    modes = {"constant": 0, "edge": 1, "reflect": 2}
    if mode not in modes:
        raise ValueError("pad: mode must be one of %s, got %r" % (", ".join(modes), mode))
    if isinstance(pad_width, numbers.Integral):
        pairs = [(pad_width, pad_width)]
    else:
        pw = list(pad_width)
        if pw and isinstance(pw[0], numbers.Integral):
            pairs = [tuple(pw)] if len(pw) == 2 else [(pw[0], pw[0])]
        else:
            pairs = [tuple(p) for p in pw]
    flat = [v for p in pairs for v in p]
    w, n = _i64s(flat)
    return new(lib.aj_pad, operand(x), w, len(pairs), modes[mode], builtins.float(constant_values))


@_export
def roll(x, shift, axis=None):
    set_caller()
    if axis is None:
        s, n = _i64s([shift] if isinstance(shift, numbers.Integral) else shift)
        return new(lib.aj_roll, operand(x), s, None, n)
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    if isinstance(shift, numbers.Integral):
        shift = (shift,) * len(axis)
    s, n = _i64s(shift)
    a, m = _i32s(axis)
    if n != m:
        raise ValueError("roll: %d shifts and %d axes" % (n, m))
    return new(lib.aj_roll, operand(x), s, a, n)


@_export
def stop_gradient(x):
    set_caller()
    return new(lib.aj_stop_gradient, operand(x))


@_export
def sum_to_shape(x, shape):
    set_caller()
    s, n = _shape_arg(shape)
    return new(lib.aj_sum_to_shape, operand(x), s, n)


@_export
def to_device(x, device):
    """x on "cpu", "cuda", "cuda:1" (the same array when it is there)."""
    set_caller()
    text = repr(device) if not isinstance(device, str) else device
    kind, _, idx = text.partition(":")
    codes = {"cpu": 1, "cuda": 2, "cuda_host": 3}
    if kind not in codes:
        raise ValueError("to_device: unknown device %r (cpu, cuda, cuda:N)" % (device,))
    return new(lib.aj_to_device, operand(x), codes[kind], builtins.int(idx or 0))


device_put = to_device
__all__.append("device_put")
