"""Neural-network ops (arrayjit/nn.hpp, arrayjit/conv.hpp): activations,
softmax, one-hot, convolution and pooling."""
import numbers

from ._capi import lib, set_caller
from ._core import _axes_arg, _code, _i64s, _index, float32, new, operand
from ._ops import gelu as _gelu, gelu_tanh, relu, sigmoid, silu, softplus, tanh  # noqa: F401 (re-exported)


def gelu(x, approximate=False):
    """Exact GELU; approximate=True: the tanh approximation."""
    return gelu_tanh(x) if approximate else _gelu(x)


def softmax(x, axis=-1):
    set_caller()
    axes, n = _axes_arg(axis)
    return new(lib.aj_softmax, operand(x), axes, n)


def log_softmax(x, axis=-1):
    set_caller()
    axes, n = _axes_arg(axis)
    return new(lib.aj_log_softmax, operand(x), axes, n)


def logsumexp(x, axis=None, keepdims=False):
    set_caller()
    axes, n = _axes_arg(axis)
    return new(lib.aj_logsumexp, operand(x), axes, n, 1 if keepdims else 0)


def one_hot(labels, num_classes, dtype=float32):
    set_caller()
    return new(lib.aj_one_hot, operand(labels), _index(num_classes), _code(dtype))


def _list(v):
    """(int64 array, n) for an optional list: None -> (NULL, 0); an int -> one value."""
    if v is None:
        return None, 0
    if isinstance(v, numbers.Integral):
        v = (v,)
    return _i64s(tuple(v))


def conv_general_dilated(lhs, rhs, window_strides=None, padding="VALID", lhs_dilation=None, rhs_dilation=None,
                         feature_group_count=1, dimension_numbers=None):
    """JAX's lax.conv_general_dilated. padding: "SAME", "VALID" or (low, high)
    pairs per spatial axis; dimension_numbers: (lhs, rhs, out) layout
    strings ("NCHW", "OIHW", "NCHW"), None for those."""
    set_caller()
    s, ns = _list(window_strides)
    if isinstance(padding, str):
        mode = {"SAME": 1, "VALID": 2}.get(padding.upper())
        if mode is None:
            raise ValueError("conv: padding must be 'SAME', 'VALID' or pairs, got %r" % (padding,))
        p, npairs = None, 0
    else:
        mode = 0
        pairs = [tuple(q) for q in padding]
        p, _ = _i64s([v for q in pairs for v in q])
        npairs = len(pairs)
    ld, nld = _list(lhs_dilation)
    rd, nrd = _list(rhs_dilation)
    lay = dimension_numbers or (None, None, None)
    enc = [x.encode() if x else None for x in lay]
    return new(lib.aj_conv_general, operand(lhs), operand(rhs), s, ns, mode, p, npairs, ld, nld, rd, nrd,
               _index(feature_group_count), enc[0], enc[1], enc[2])


def conv(x, w, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's conv1d/2d/3d (by x's rank): x [N, C, ...], w [O, C / groups, k...];
    padding: an int or one per spatial axis (symmetric), or "same" / "valid"."""
    nsp = operand(x).ndim - 2
    if isinstance(padding, str):
        pad = padding.upper()
    else:
        pv = (padding,) * nsp if isinstance(padding, numbers.Integral) else tuple(padding)
        pad = [(v, v) for v in pv]
    st = (stride,) * nsp if isinstance(stride, numbers.Integral) else tuple(stride)
    dl = (dilation,) * nsp if isinstance(dilation, numbers.Integral) else tuple(dilation)
    return conv_general_dilated(x, w, st, pad, None, dl, groups)


def conv_transpose(x, w, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """PyTorch's conv_transpose1d/2d/3d: w [C, O / groups, k...]."""
    set_caller()
    s, ns = _list(stride)
    p, np_ = _list(padding)
    op, nop = _list(output_padding)
    d, nd = _list(dilation)
    return new(lib.aj_conv_transpose, operand(x), operand(w), s, ns, p, np_, op, nop, _index(groups), d, nd)


def max_pool(x, window, strides=None, padding=0, ceil_mode=False, dilation=1):
    """Max over windows of the last len(window) axes (PyTorch's max_pool*d)."""
    set_caller()
    w, nw = _list(window)
    s, ns = _list(strides if strides is not None else window)
    p, np_ = _list(padding)
    d, nd = _list(dilation)
    return new(lib.aj_max_pool, operand(x), w, nw, s, ns, p, np_, 1 if ceil_mode else 0, d, nd)


def avg_pool(x, window, strides=None, padding=0, ceil_mode=False, count_include_pad=True):
    set_caller()
    w, nw = _list(window)
    s, ns = _list(strides if strides is not None else window)
    p, np_ = _list(padding)
    return new(lib.aj_avg_pool, operand(x), w, nw, s, ns, p, np_, 1 if ceil_mode else 0,
               1 if count_include_pad else 0)


def reduce_window(x, op, window, strides=None, padding=None):
    """JAX's reduce_window over every axis; op "sum", "prod", "max" or "min";
    padding (low, high) pairs."""
    set_caller()
    w, nw = _list(window)
    s, ns = _list(strides)
    if padding is None:
        p, npairs = None, 0
    else:
        pairs = [tuple(q) for q in padding]
        p, _ = _i64s([v for q in pairs for v in q])
        npairs = len(pairs)
    return new(lib.aj_reduce_window, operand(x), op.encode(), w, nw, s, ns, p, npairs)


def interpolate(x, size, mode="nearest", align_corners=False):
    """PyTorch's interpolate to `size` (the spatial extents)."""
    set_caller()
    s, n = _list(size)
    return new(lib.aj_interpolate, operand(x), s, n, mode.encode(), 1 if align_corners else 0)
