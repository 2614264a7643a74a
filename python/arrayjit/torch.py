"""arrayjit as PyTorch's executor: a compiler for AOTAutograd's aten graphs.

    from functorch.compile import aot_module          # torch 1.13 (Debian 12)
    import arrayjit.torch as ajt
    model = aot_module(model, fw_compiler=ajt.compiler, bw_compiler=ajt.compiler)
    # or: model = ajt.compile(model)                   (the same, with our partitioner's default)
    # torch >= 2.0: torch.compile(model, backend=ajt.backend)

Each forward and backward graph becomes one traced arrayjit function
(arrayjit.compile): the first call records its aten ops as arrayjit ops, later
calls replay the plan (no tracing, no planning, no Python per op). Tensors
cross by DLPack both ways without copies. A graph with an op this module does
not translate (`unsupported_ops(gm)`; the list it covers is `SUPPORTED`) runs
on torch itself, with one warning naming the op, never an error.
"""
import ctypes as _C
import math
import operator
import warnings

import torch

import arrayjit as aj
from arrayjit import _dlpack as _dl
from arrayjit._capi import H as _H, check as _check, lib as _lib, set_caller as _set_caller
from arrayjit._transforms import flatten as _flatten, unflatten as _unflatten

__all__ = ["compiler", "compile", "backend", "SUPPORTED", "unsupported_ops", "to_arrayjit", "to_torch", "SGD", "Adam"]

# ---- tensors across ------------------------------------------------------------------------

_DTYPES = {torch.float32: aj.float32, torch.float64: aj.float64, torch.float16: aj.float16,
           torch.bfloat16: aj.bfloat16, torch.int32: aj.int32, torch.int64: aj.int64, torch.bool: aj.bool_,
           torch.uint8: aj.uint8, torch.int8: aj.int8, torch.int16: aj.int16}
_TORCH_DTYPES = {v.name: k for k, v in _DTYPES.items()}


def _aj_dtype(d):
    if d is None:
        return None
    try:
        return _DTYPES[d]
    except KeyError:
        raise NotImplementedError("dtype %s" % d) from None


# The conversions every graph call makes, without the generic paths' checks:
# torch's legacy DLPack capsules straight into the C API and back.

_capsule_pointer = _dl._api.PyCapsule_GetPointer
_capsule_rename = _dl._api.PyCapsule_SetName
_capsule_new = _dl._api.PyCapsule_New
_capsule_valid = _dl._api.PyCapsule_IsValid
_torch_to_dlpack = torch.utils.dlpack.to_dlpack
# torch's C function itself: torch.utils.dlpack.from_dlpack is a Python
# wrapper around it that first looks for __dlpack__ (about 1 us a tensor).
_torch_from_capsule = getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack


def _import_handle(t):
    """A torch tensor of a DLPack dtype as a new arrayjit handle (the
    caller's to release) borrowing its memory."""
    if t.requires_grad:
        t = t.detach()
    cap = _torch_to_dlpack(t)
    out = _H()
    _check(_lib.aj_from_dlpack(_capsule_pointer(cap, b"dltensor"), _C.byref(out)))
    _capsule_rename(cap, b"used_dltensor")  # arrayjit owns the tensor now
    return out.value


def to_arrayjit(t):
    """A torch tensor as an arrayjit array sharing its memory (bool: a copy;
    DLPack before torch 2 has no bool)."""
    if t.dtype == torch.bool:
        return to_arrayjit(t.to(torch.int32)).astype(aj.bool_)
    if t.dtype not in _DTYPES:
        raise NotImplementedError("tensors of %s" % t.dtype)
    return aj.Array._own(_import_handle(t))


def to_torch(a, is_bool=None):
    """An arrayjit array as a torch tensor sharing its memory (bool: a copy)."""
    if is_bool if is_bool is not None else a.dtype == aj.bool_:
        return to_torch(a.astype(aj.int32), False).bool()
    p = _C.c_void_p()
    _check(_lib.aj_to_dlpack(a._h, None, _C.byref(p)))
    # A capsule without a destructor (the generic one is a Python callback
    # run as each capsule goes): torch consumes it at once, renaming it and
    # calling the tensor's deleter itself when the tensor goes; if torch
    # raises first, the tensor is deleted here.
    cap = _capsule_new(p, b"dltensor", None)
    try:
        t = _torch_from_capsule(cap)
    except BaseException:
        if _capsule_valid(cap, b"dltensor"):
            m = _dl._Managed.from_address(p.value)
            if m.deleter:
                m.deleter(p.value)
        raise
    t._arrayjit = (a, t._version)
    return t


# ---- aten -> arrayjit ------------------------------------------------------------------------

_OPS = {}


def _op(*names):
    def reg(fn):
        for n in names:
            _OPS[n] = fn
        return fn
    return reg


def _ndim(x):
    return x.ndim if isinstance(x, aj.Array) else 0


def _axis(d, nd):
    return d + nd if d < 0 else d


def _dims(dims, nd):
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return None
    if isinstance(dims, int):
        dims = [dims]
    return tuple(_axis(d, max(nd, 1)) for d in dims)


# elementwise, one operand
for _name, _fn in [("abs", aj.abs), ("neg", aj.negative), ("exp", aj.exp), ("exp2", aj.exp2), ("log", aj.log),
                   ("log2", aj.log2), ("log10", aj.log10), ("log1p", aj.log1p), ("expm1", aj.expm1),
                   ("sqrt", aj.sqrt), ("rsqrt", aj.rsqrt), ("sin", aj.sin), ("cos", aj.cos), ("tan", aj.tan),
                   ("asin", aj.arcsin), ("acos", aj.arccos), ("atan", aj.arctan), ("sinh", aj.sinh),
                   ("cosh", aj.cosh), ("tanh", aj.tanh), ("asinh", aj.arcsinh), ("acosh", aj.arccosh),
                   ("atanh", aj.arctanh), ("sigmoid", aj.sigmoid), ("erf", aj.erf), ("erfc", aj.erfc),
                   ("erfinv", aj.erfinv), ("floor", aj.floor), ("ceil", aj.ceil), ("round", aj.round),
                   ("trunc", aj.trunc), ("sign", aj.sign), ("reciprocal", aj.reciprocal), ("relu", aj.relu),
                   ("silu", aj.silu), ("isnan", aj.isnan), ("isinf", aj.isinf), ("lgamma", aj.lgamma),
                   ("digamma", aj.digamma), ("logical_not", aj.logical_not), ("bitwise_not", aj.bitwise_invert)]:
    _OPS["aten.%s.default" % _name] = (lambda f: lambda x: f(x))(_fn)


@_op("aten.isfinite.default")
def _isfinite(x):
    return aj.isfinite(x)


@_op("aten.gelu.default")
def _gelu(x, approximate="none"):
    return aj.gelu_tanh(x) if approximate == "tanh" else aj.gelu(x)


@_op("aten.gelu_backward.default")
def _gelu_backward(g, x, approximate="none"):
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        inner = k * (x + 0.044715 * x * x * x)
        t = aj.tanh(inner)
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)
        return g * d
    cdf = 0.5 * (1 + aj.erf(x * (1 / math.sqrt(2))))
    pdf = aj.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))
    return g * (cdf + x * pdf)


@_op("aten.threshold_backward.default")
def _threshold_backward(g, x, threshold):
    return aj.where(x <= threshold, aj.zeros_like(g), g)


@_op("aten.sigmoid_backward.default")
def _sigmoid_backward(g, y):
    return g * y * (1 - y)


@_op("aten.tanh_backward.default")
def _tanh_backward(g, y):
    return g * (1 - y * y)


@_op("aten.silu_backward.default")
def _silu_backward(g, x):
    s = aj.sigmoid(x)
    return g * s * (1 + x * (1 - s))


@_op("aten.add.Tensor", "aten.add.Scalar")
def _add(a, b, alpha=1):
    return a + (b if alpha == 1 else b * alpha)


@_op("aten.sub.Tensor", "aten.sub.Scalar")
def _sub(a, b, alpha=1):
    return a - (b if alpha == 1 else b * alpha)


@_op("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(a, b, alpha=1):
    return b - (a if alpha == 1 else a * alpha)


@_op("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(a, b):
    return a * b


@_op("aten.div.Tensor", "aten.div.Scalar")
def _div(a, b):
    return aj.true_divide(a, b)


@_op("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div_mode(a, b, rounding_mode=None):
    if rounding_mode is None:
        return aj.true_divide(a, b)
    if rounding_mode == "floor":
        return aj.floor_divide(a, b)
    t = aj.trunc(aj.true_divide(a, b))
    # Integers divide to a float: truncated, they are integers of a's dtype again.
    return t if a.dtype.is_floating else t.astype(a.dtype)


@_op("aten.pow.Tensor_Tensor", "aten.pow.Tensor_Scalar", "aten.pow.Scalar")
def _pow(a, b):
    return aj.pow(a, b)


for _name, _fn in [("maximum", aj.maximum), ("minimum", aj.minimum), ("atan2", aj.arctan2),
                   ("remainder", aj.mod), ("fmod", aj.fmod), ("logical_and", aj.logical_and),
                   ("logical_or", aj.logical_or), ("logical_xor", aj.logical_xor), ("hypot", aj.hypot)]:
    _OPS["aten.%s.default" % _name] = (lambda f: lambda a, b: f(a, b))(_fn)
    _OPS["aten.%s.Tensor" % _name] = _OPS["aten.%s.default" % _name]
    _OPS["aten.%s.Scalar" % _name] = _OPS["aten.%s.default" % _name]

for _name, _fn in [("eq", aj.equal), ("ne", aj.not_equal), ("lt", aj.less), ("le", aj.less_equal),
                   ("gt", aj.greater), ("ge", aj.greater_equal)]:
    _OPS["aten.%s.Tensor" % _name] = (lambda f: lambda a, b: f(a, b))(_fn)
    _OPS["aten.%s.Scalar" % _name] = _OPS["aten.%s.Tensor" % _name]


for _name, _fn in [("bitwise_and", aj.bitwise_and), ("bitwise_or", aj.bitwise_or), ("bitwise_xor", aj.bitwise_xor),
                   ("bitwise_left_shift", aj.left_shift), ("bitwise_right_shift", aj.right_shift)]:
    _OPS["aten.%s.Tensor" % _name] = (lambda f: lambda a, b: f(a, b))(_fn)
    _OPS["aten.%s.Scalar" % _name] = _OPS["aten.%s.Tensor" % _name]
_OPS["aten.gcd.default"] = lambda a, b: aj.gcd(a, b)
_OPS["aten.lcm.default"] = lambda a, b: aj.lcm(a, b)


@_op("aten.where.self")
def _where(c, a, b):
    return aj.where(c, a, b)


@_op("aten.clamp.default", "aten.clamp.Tensor")
def _clamp(x, min=None, max=None):
    if min is not None:
        x = aj.maximum(x, min)
    if max is not None:
        x = aj.minimum(x, max)
    return x


@_op("aten.clamp_min.default", "aten.clamp_min.Tensor")
def _clamp_min(x, m):
    return aj.maximum(x, m)


@_op("aten.clamp_max.default", "aten.clamp_max.Tensor")
def _clamp_max(x, m):
    return aj.minimum(x, m)


@_op("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(x, mask, value):
    if isinstance(value, aj.Array):
        value = value.astype(x.dtype)
    return aj.where(mask, value, x)


# reductions
def _reduce(f):
    def op(x, dim=None, keepdim=False, dtype=None):
        if dtype is not None:
            x = x.astype(_aj_dtype(dtype))
        return f(x, axis=_dims(dim, x.ndim), keepdims=keepdim)
    return op


_OPS["aten.sum.dim_IntList"] = _reduce(aj.sum)
_OPS["aten.mean.dim"] = _reduce(aj.mean)
_OPS["aten.amax.default"] = _reduce(aj.max)
_OPS["aten.amin.default"] = _reduce(aj.min)
_OPS["aten.prod.dim_int"] = _reduce(aj.prod)
_OPS["aten.any.dim"] = _reduce(aj.any)
_OPS["aten.all.dim"] = _reduce(aj.all)


@_op("aten.sum.default")
def _sum_all(x, dtype=None):
    return aj.sum(x if dtype is None else x.astype(_aj_dtype(dtype)))


@_op("aten.mean.default")
def _mean_all(x, dtype=None):
    return aj.mean(x if dtype is None else x.astype(_aj_dtype(dtype)))


@_op("aten.max.default")
def _max_all(x):
    return aj.max(x)


@_op("aten.min.default")
def _min_all(x):
    return aj.min(x)


@_op("aten.any.default")
def _any_all(x):
    return aj.any(x)


@_op("aten.all.default")
def _all_all(x):
    return aj.all(x)


@_op("aten.max.dim")
def _max_dim(x, dim, keepdim=False):
    return aj.max(x, axis=dim, keepdims=keepdim), aj.argmax(x, axis=dim, keepdims=keepdim)


@_op("aten.min.dim")
def _min_dim(x, dim, keepdim=False):
    return aj.min(x, axis=dim, keepdims=keepdim), aj.argmin(x, axis=dim, keepdims=keepdim)


@_op("aten.argmax.default")
def _argmax(x, dim=None, keepdim=False):
    return aj.argmax(x, axis=dim, keepdims=keepdim)


@_op("aten.argmin.default")
def _argmin(x, dim=None, keepdim=False):
    return aj.argmin(x, axis=dim, keepdims=keepdim)


@_op("aten.var.correction")
def _var(x, dim=None, correction=None, keepdim=False):
    return aj.var(x, axis=_dims(dim, x.ndim), ddof=1 if correction is None else correction, keepdims=keepdim)


@_op("aten.var.dim")
def _var_dim(x, dim=None, unbiased=True, keepdim=False):
    return aj.var(x, axis=_dims(dim, x.ndim), ddof=1 if unbiased else 0, keepdims=keepdim)


@_op("aten.std.correction")
def _std(x, dim=None, correction=None, keepdim=False):
    return aj.std(x, axis=_dims(dim, x.ndim), ddof=1 if correction is None else correction, keepdims=keepdim)


@_op("aten.cumsum.default")
def _cumsum(x, dim, dtype=None):
    return aj.cumsum(x if dtype is None else x.astype(_aj_dtype(dtype)), axis=dim)


@_op("aten.logsumexp.default")
def _logsumexp(x, dim, keepdim=False):
    return aj.nn.logsumexp(x, axis=_dims(dim, x.ndim), keepdims=keepdim)


# views and copies
@_op("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten._reshape_alias.default")
def _view(x, shape, stride=None):
    return aj.reshape(x, tuple(shape))


@_op("aten.expand.default")
def _expand(x, shape, implicit=False):
    shape = list(shape)
    lead = len(shape) - x.ndim
    for i in range(x.ndim):
        if shape[lead + i] == -1:
            shape[lead + i] = x.shape[i]
    return aj.broadcast_to(x, tuple(shape))


@_op("aten.permute.default")
def _permute(x, dims):
    return aj.transpose(x, [_axis(d, x.ndim) for d in dims])


@_op("aten.t.default")
def _t(x):
    return x if x.ndim < 2 else aj.transpose(x)


@_op("aten.transpose.int")
def _transpose(x, d0, d1):
    return aj.swapaxes(x, d0, d1)


@_op("aten.unsqueeze.default")
def _unsqueeze(x, d):
    return aj.expand_dims(x, d if d >= 0 else d + x.ndim + 1)


@_op("aten.squeeze.dim")
def _squeeze_dim(x, d):
    d = _axis(d, max(x.ndim, 1))
    return aj.squeeze(x, d) if x.ndim and x.shape[d] == 1 else x


@_op("aten.squeeze.dims")
def _squeeze_dims(x, dims):
    keep = [d for d in (_axis(d, x.ndim) for d in dims) if x.shape[d] == 1]
    return aj.squeeze(x, keep) if keep else x


@_op("aten.squeeze.default")
def _squeeze(x):
    return aj.squeeze(x)


@_op("aten.select.int")
def _select(x, dim, index):
    return x[(slice(None),) * _axis(dim, x.ndim) + (index,)]


@_op("aten.slice.Tensor")
def _slice(x, dim=0, start=None, end=None, step=1):
    dim = _axis(dim, x.ndim)
    extent = x.shape[dim]
    start, stop, step = slice(start, None if end is None or end >= (1 << 62) else end, step).indices(extent)
    if (start, stop, step) == (0, extent, 1):
        return x
    return aj.slice_axis(x, dim, start, stop, step)


@_op("aten.cat.default")
def _cat(tensors, dim=0):
    tensors = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    return aj.concatenate(tensors, axis=dim)


@_op("aten.stack.default")
def _stack(tensors, dim=0):
    return aj.stack(tensors, axis=dim)


@_op("aten.split.Tensor")
def _split(x, size, dim=0):
    extent = x.shape[dim]
    return aj.split(x, list(range(size, extent, size)), axis=dim)


@_op("aten.split_with_sizes.default")
def _split_sizes(x, sizes, dim=0):
    cuts, at = [], 0
    for s in sizes[:-1]:
        at += s
        cuts.append(at)
    return aj.split(x, cuts, axis=dim)


@_op("aten.clone.default", "aten.alias.default", "aten.detach.default", "aten.lift_fresh_copy.default",
     "aten.contiguous.default")
def _same(x, memory_format=None):
    return x


@_op("aten._to_copy.default")
def _to_copy(x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    if device is not None and torch.device(device).type != "cpu":
        raise NotImplementedError("_to_copy to %s" % device)
    return x if dtype is None else x.astype(_aj_dtype(dtype))


@_op("aten.flip.default")
def _flip(x, dims):
    return aj.flip(x, tuple(dims))


@_op("aten.roll.default")
def _roll(x, shifts, dims=()):
    return aj.roll(x, list(shifts), axis=list(dims) if dims else None)


@_op("aten.constant_pad_nd.default")
def _pad(x, pad, value=0):
    pairs = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if any(p < 0 for q in pairs for p in q):
        raise NotImplementedError("constant_pad_nd with negative padding")
    return aj.pad(x, pairs, constant_values=value)


@_op("aten.tril.default")
def _tril(x, diagonal=0):
    return aj.tril(x, diagonal)


@_op("aten.triu.default")
def _triu(x, diagonal=0):
    return aj.triu(x, diagonal)


# products
@_op("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(a, b):
    return a @ b


@_op("aten.addmm.default")
def _addmm(bias, a, b, beta=1, alpha=1):
    p = a @ b
    if alpha != 1:
        p = p * alpha
    return p + (bias if beta == 1 else bias * beta)


@_op("aten.baddbmm.default")
def _baddbmm(bias, a, b, beta=1, alpha=1):
    return _addmm(bias, a, b, beta, alpha)


@_op("aten.dot.default")
def _dot(a, b):
    return aj.dot(a, b)


# gathers and scatters
@_op("aten.embedding.default")
def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return aj.take(weight, indices, axis=0)


@_op("aten.embedding_dense_backward.default")
def _embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    if scale_grad_by_freq:
        raise NotImplementedError("embedding with scale_grad_by_freq")
    d = grad.shape[-1]
    idx = aj.reshape(indices, (-1,))
    g = aj.reshape(grad, (-1, d))
    if padding_idx >= 0:
        g = aj.where((idx == padding_idx)[:, None], aj.zeros_like(g), g)
    return aj.scatter_add(aj.zeros((num_weights, d), grad.dtype), idx, g, 0)


@_op("aten.index_select.default")
def _index_select(x, dim, index):
    return aj.take(x, index, axis=dim)


def _key(indices):
    """aten.index's list (None for a whole axis) as a NumPy key."""
    return tuple(slice(None) if i is None else i for i in indices)


@_op("aten.index.Tensor")
def _index(x, indices):
    return x[_key(indices)]


def _fit(t, index, keep=None):
    """t cut to index's extents on every axis but `keep` (torch's gather and
    scatter read only those; index may be smaller than the tensors)."""
    cut = tuple(slice(None) if d == keep else slice(0, n) for d, n in enumerate(index.shape))
    return t if all(t.shape[d] == n for d, n in enumerate(index.shape) if d != keep) else t[cut]


@_op("aten.gather.default")
def _gather(x, dim, index, sparse_grad=False):
    dim = _axis(dim, x.ndim)
    return aj.take_along_axis(_fit(x, index, dim), index, dim)


@_op("aten.scatter_add.default")
def _scatter_add(x, dim, index, src):
    return aj.scatter_add_along_axis(x, index, _fit(src, index), _axis(dim, x.ndim))


@_op("aten.scatter.src", "aten.scatter.value")
def _scatter(x, dim, index, src):
    if not isinstance(src, aj.Array):
        src = aj.full(index.shape, src, x.dtype)
    return aj.put_along_axis(x, index, _fit(src, index), _axis(dim, x.ndim))


@_op("aten.index_add.default")
def _index_add(x, dim, index, source, alpha=1):
    return aj.scatter_add(x, index, source if alpha == 1 else source * alpha, _axis(dim, x.ndim))


@_op("aten.index_put.default")
def _index_put(x, indices, values, accumulate=False):
    indices = list(indices)
    masks = [i for i in indices if i is not None and i.dtype == aj.bool_]
    if masks:
        if len(indices) != 1:
            raise NotImplementedError("index_put with a mask beside other indices")
        m = indices[0]
        v = values.astype(x.dtype)
        if m.ndim < x.ndim:
            m = aj.reshape(m, m.shape + (1,) * (x.ndim - m.ndim))
        return aj.where(m, x + v, x) if accumulate else aj.where(m, v, x)
    k = len(indices)
    if any(i is None for i in indices):
        raise NotImplementedError("index_put with None among its indices")
    idx = aj.broadcast_arrays(*indices)
    lead = x.shape[:k]
    rest = x.shape[k:]
    flat = None
    for j in range(k):
        i = aj.where(idx[j] < 0, idx[j] + lead[j], idx[j])
        flat = i if flat is None else flat * lead[j] + i
    flat = aj.reshape(flat, (-1,))
    n = 1
    for e in lead:
        n *= e
    x2 = aj.reshape(x, (n,) + rest)
    v = aj.broadcast_to(values.astype(x.dtype) if isinstance(values, aj.Array) else values,
                        idx[0].shape + rest)
    v = aj.reshape(v, (-1,) + rest)
    out = (aj.scatter_add if accumulate else aj.scatter)(x2, flat, v, 0)
    return aj.reshape(out, x.shape)


@_op("aten.select_backward.default")
def _select_backward(g, input_sizes, dim, index):
    dim = _axis(dim, len(input_sizes))
    index = index % input_sizes[dim]
    starts = [0] * len(input_sizes)
    stops = list(input_sizes)
    starts[dim], stops[dim] = index, index + 1
    z = aj.zeros(tuple(input_sizes), g.dtype)
    return aj.slice_update(z, starts, stops, None, aj.expand_dims(g, dim))


@_op("aten.slice_backward.default")
def _slice_backward(g, input_sizes, dim, start, end, step):
    dim = _axis(dim, len(input_sizes))
    s, e, st = slice(start, None if end >= (1 << 62) else end, step).indices(input_sizes[dim])
    starts = [0] * len(input_sizes)
    stops = list(input_sizes)
    steps = [1] * len(input_sizes)
    starts[dim], stops[dim], steps[dim] = s, e, st
    return aj.slice_update(aj.zeros(tuple(input_sizes), g.dtype), starts, stops, steps, g)


# losses, softmax, normalization
@_op("aten._softmax.default")
def _softmax(x, dim, half_to_float=False):
    return aj.softmax(x, axis=dim)


@_op("aten._log_softmax.default")
def _log_softmax(x, dim, half_to_float=False):
    return aj.log_softmax(x, axis=dim)


@_op("aten._softmax_backward_data.default")
def _softmax_backward(g, y, dim, input_dtype):
    return y * (g - aj.sum(g * y, axis=dim, keepdims=True))


@_op("aten._log_softmax_backward_data.default")
def _log_softmax_backward(g, y, dim, input_dtype):
    return g - aj.exp(y) * aj.sum(g, axis=dim, keepdims=True)


def _nll_parts(x, target, weight, ignore_index):
    """(picked log-probabilities, per-row weights) of nll_loss over x [N, C] or [C]."""
    if x.ndim == 1:
        x, target = x[None, :], aj.reshape(target, (1,))
    valid = target != ignore_index
    safe = aj.where(valid, target, aj.zeros_like(target))
    picked = aj.take_along_axis(x, safe[:, None], 1)[:, 0]
    w = valid.astype(x.dtype)
    if weight is not None:
        w = w * aj.take(weight, safe, axis=0)
    return picked, w, safe


@_op("aten.nll_loss_forward.default")
def _nll_loss_forward(x, target, weight, reduction, ignore_index):
    picked, w, _ = _nll_parts(x, target, weight, ignore_index)
    total = aj.sum(w)
    if reduction == 0:
        out = -picked * w
        return (out if x.ndim > 1 else out[0]), total
    s = -aj.sum(picked * w)
    return (s / total if reduction == 1 else s), total


@_op("aten.nll_loss_backward.default")
def _nll_loss_backward(g, x, target, weight, reduction, ignore_index, total_weight):
    one_d = x.ndim == 1
    xs = x[None, :] if one_d else x
    _, w, safe = _nll_parts(x, target, weight, ignore_index)
    if reduction == 0:
        scale = -(aj.reshape(g, (-1,)) * w)
    elif reduction == 1:
        scale = -(w * g / total_weight)
    else:
        scale = -(w * g)
    out = aj.one_hot(safe, xs.shape[1], xs.dtype) * scale[:, None]
    return out[0] if one_d else out


@_op("aten.native_layer_norm.default")
def _layer_norm(x, normalized_shape, weight, bias, eps):
    k = len(normalized_shape)
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = aj.mean(x, axis=axes, keepdims=True)
    xc = x - mean
    var = aj.mean(xc * xc, axis=axes, keepdims=True)
    rstd = aj.rsqrt(var + eps)
    y = xc * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y, mean, rstd


@_op("aten.native_layer_norm_backward.default")
def _layer_norm_backward(g, x, normalized_shape, mean, rstd, weight, bias, output_mask):
    k = len(normalized_shape)
    axes = tuple(range(x.ndim - k, x.ndim))
    batch = tuple(range(x.ndim - k))
    xhat = (x - mean) * rstd
    gw = g * weight if weight is not None else g
    dx = dw = db = None
    if output_mask[0]:
        dx = rstd * (gw - aj.mean(gw, axis=axes, keepdims=True) - xhat * aj.mean(gw * xhat, axis=axes, keepdims=True))
    if output_mask[1] and weight is not None:
        dw = aj.sum(g * xhat, axis=batch) if batch else g * xhat
    if output_mask[2] and bias is not None:
        db = aj.sum(g, axis=batch) if batch else g
    return dx, dw, db


# fills
def _fill_dtype(dtype, default):
    return default if dtype is None else _aj_dtype(dtype)


@_op("aten.zeros.default")
def _zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.zeros(tuple(size), _fill_dtype(dtype, aj.float32))


@_op("aten.ones.default")
def _ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.ones(tuple(size), _fill_dtype(dtype, aj.float32))


@_op("aten.full.default")
def _full(size, value, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.full(tuple(size), value, _fill_dtype(dtype, aj.float32 if isinstance(value, float) else
                                                    aj.bool_ if isinstance(value, bool) else aj.int64))


@_op("aten.scalar_tensor.default")
def _scalar_tensor(value, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.full((), value, _fill_dtype(dtype, aj.float32))


@_op("aten.new_zeros.default")
def _new_zeros(x, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.zeros(tuple(size), _fill_dtype(dtype, x.dtype))


@_op("aten.new_ones.default")
def _new_ones(x, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.ones(tuple(size), _fill_dtype(dtype, x.dtype))


@_op("aten.new_full.default")
def _new_full(x, size, value, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.full(tuple(size), value, _fill_dtype(dtype, x.dtype))


@_op("aten.new_empty.default")
def _new_empty(x, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.zeros(tuple(size), _fill_dtype(dtype, x.dtype))


@_op("aten.zeros_like.default", "aten.empty_like.default")
def _zeros_like(x, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aj.zeros_like(x, _aj_dtype(dtype))


@_op("aten.ones_like.default")
def _ones_like(x, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aj.ones_like(x, _aj_dtype(dtype))


@_op("aten.full_like.default")
def _full_like(x, value, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aj.full_like(x, value, _aj_dtype(dtype))


@_op("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(*args, dtype=None, layout=None, device=None, pin_memory=None):
    nums = list(args)
    ints = all(isinstance(v, int) for v in nums)
    d = _fill_dtype(dtype, aj.int64 if ints else aj.float32)
    if len(nums) == 1:
        return aj.arange(nums[0], dtype=d)
    return aj.arange(*nums, dtype=d)


# sorting
@_op("aten.sort.default")
def _sort(x, dim=-1, descending=False):
    idx = aj.argsort(-x if descending else x, axis=dim)  # stable: ties keep their order
    return aj.take_along_axis(x, idx, _axis(dim, x.ndim)), idx


@_op("aten.topk.default")
def _topk(x, k, dim=-1, largest=True, sorted=True):
    if not largest:
        v, i = aj.top_k(-x, k, dim)
        return -v, i
    return aj.top_k(x, k, dim)


# random numbers: from the key the graph's caller passes (see _Compiled), one
# fold_in of it per random node, so a replay draws new numbers every call.
_RANDOM = set()


def _random(*names):
    def reg(fn):
        for n in names:
            _OPS[n] = fn
            _RANDOM.add(n)
        return fn
    return reg


@_random("aten.native_dropout.default")
def _native_dropout(key, x, p, train):
    if not train or p == 0:
        return x, aj.ones_like(x, aj.bool_)
    if p >= 1:
        return aj.zeros_like(x), aj.zeros_like(x, aj.bool_)
    keep = aj.random.bernoulli(1 - p, x.shape, key=key)
    return aj.where(keep, x * (1 / (1 - p)), aj.zeros_like(x)), keep


@_op("aten.native_dropout_backward.default")
def _native_dropout_backward(g, mask, scale):
    return aj.where(mask, g * scale, aj.zeros_like(g))


def _float_dtype(dtype, like=None):
    if dtype is not None:
        return _aj_dtype(dtype)
    return like.dtype if like is not None else aj.float32


@_random("aten.rand.default")
def _rand(key, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.random.uniform(0.0, 1.0, tuple(size), _float_dtype(dtype), key=key)


@_random("aten.randn.default")
def _randn(key, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aj.random.normal(0.0, 1.0, tuple(size), _float_dtype(dtype), key=key)


@_random("aten.rand_like.default")
def _rand_like(key, x, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aj.random.uniform(0.0, 1.0, x.shape, _float_dtype(dtype, x), key=key)


@_random("aten.randn_like.default")
def _randn_like(key, x, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aj.random.normal(0.0, 1.0, x.shape, _float_dtype(dtype, x), key=key)


@_random("aten.bernoulli.p")
def _bernoulli_p(key, x, p=0.5, generator=None):
    return aj.random.bernoulli(p, x.shape, key=key).astype(x.dtype)


@_random("aten.bernoulli_.float")
def _bernoulli_inplace(key, x, p=0.5, generator=None):
    """x filled with draws (torch 1.13's dropout: bernoulli_ of an empty_like);
    the interpreter rebinds x to the result, as the mutation would."""
    return aj.random.bernoulli(p, x.shape, key=key).astype(x.dtype)


@_random("aten.bernoulli.default")
def _bernoulli(key, x, generator=None):
    return (aj.random.uniform(0.0, 1.0, x.shape, aj.float64, key=key) < x).astype(x.dtype)


_OPS[str(operator.getitem)] = operator.getitem
SUPPORTED = tuple(sorted(k for k in _OPS if k.startswith("aten.")))  # the coverage list (docs/python.md)


def _target_name(target):
    return str(target)


def unsupported_ops(gm):
    """The aten ops of gm this module does not translate (sorted)."""
    out = set()
    for n in gm.graph.nodes:
        if n.op == "call_function" and _target_name(n.target) not in _OPS:
            out.add(_target_name(n.target))
    return sorted(out)


# ---- running a graph -------------------------------------------------------------------------


def _interpret(gm, inputs, key=None):
    """gm's graph with arrayjit arrays (inside a trace: ops are recorded);
    `key`: the random ops' key (an input of the traced function)."""
    env = {}
    it = iter(inputs)
    n_random = 0

    def load(a):
        if isinstance(a, torch.fx.Node):
            return env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(load(x) for x in a)
        if isinstance(a, dict):
            return {k: load(v) for k, v in a.items()}
        if isinstance(a, torch.dtype):
            return a
        if isinstance(a, torch.Tensor):
            return to_arrayjit(a)
        return a

    out = None
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            env[n] = next(it)
        elif n.op == "get_attr":
            v = gm
            for part in n.target.split("."):
                v = getattr(v, part)
            env[n] = to_arrayjit(v) if isinstance(v, torch.Tensor) else v
        elif n.op == "call_function":
            name = _target_name(n.target)
            fn = _OPS[name]
            if name in _RANDOM:
                n_random += 1
                env[n] = fn(aj.random.fold_in(key, n_random), *load(n.args), **load(n.kwargs))
            else:
                env[n] = fn(*load(n.args), **load(n.kwargs))
            if name.startswith("aten.") and name.split(".")[1].endswith("_") and n.args and \
                    isinstance(n.args[0], torch.fx.Node):
                env[n.args[0]] = env[n]  # an in-place op: later readers of its operand see the result
        elif n.op == "output":
            out = load(n.args[0])
        else:
            raise NotImplementedError("FX node kind %s" % n.op)
    return out


def _own_export(t):
    """The arrayjit array a tensor is the export of, while torch has not
    written it and the array was not donated since; else None."""
    own = t.__dict__.get("_arrayjit")
    if own is not None and own[1] == t._version and own[0]._h:
        return own[0]
    return None


class _Compiled:
    """One aten graph run through arrayjit (boxed: takes a list and clears it).

    Inputs that are arrayjit's own exports (a forward graph's saved
    activations coming back to the backward) are donated: once torch's
    references are gone (the boxed list is cleared before the call), their
    buffers are the backward's to reuse in place.

    After the first call, a call whose inputs are all tensors replays the
    kept function through the C API directly (`_replay`): each input is an
    own export (its array), a parameter imported at an earlier call (the
    import is kept per input position while the same tensor comes with the
    same memory: torch's optimizer writes it in place, and arrayjit reads it
    where it lies at each call), or a new import (released after the call)."""

    _boxed_call = True

    def __init__(self, gm, name):
        self.gm = gm
        self.name = name
        self.fallback = None
        self.fn = None  # made at the first call, which knows the donated inputs
        # A graph with random ops takes one more input, a key drawn from
        # torch's generator at every call (torch.manual_seed reproduces a run).
        self.random = any(n.op == "call_function" and _target_name(n.target) in _RANDOM for n in gm.graph.nodes)
        self.calls = 0
        self.entry = None  # the C function of the replays, once a call of tensors only has run
        self.kept = None  # per input position: (tensor, data_ptr, shape, strides, its array) of a parameter

    def _fall_back(self, why):
        warnings.warn("arrayjit.torch: %s runs on torch: %s" % (self.name, why), stacklevel=3)
        self.fallback = self.gm

    def _make(self, own):
        gm = self.gm
        donate = tuple(i for i, o in enumerate(own) if o)
        if self.random:
            return aj.compile(lambda *xs: _interpret(gm, xs[:-1], xs[-1]), name=self.name, donate_argnums=donate)
        return aj.compile(lambda *xs: _interpret(gm, xs), name=self.name, donate_argnums=donate)

    def __call__(self, args):
        if self.entry is not None:
            return self._replay(args)
        if self.fallback is not None:
            out = self.fallback(*args)
            args.clear()
            return out
        inputs, own = [], []
        args_were_tensors = all(isinstance(a, torch.Tensor) for a in args)
        try:
            for a in args:
                if isinstance(a, torch.Tensor):
                    mine = _own_export(a)
                    own.append(mine is not None)
                    inputs.append(mine if mine is not None else to_arrayjit(a))
                else:
                    own.append(False)
                    inputs.append(a)
        except NotImplementedError as e:
            self._fall_back(str(e))
            return self(args)
        if self.fn is None:
            self.fn = self._make(own)
        if self.random:
            inputs.append(to_arrayjit(torch.randint(-(1 << 62), 1 << 62, (), dtype=torch.int64)))
        first = list(args) if not self.calls else None  # kept for a fallback on the first call
        args.clear()  # torch's references go (arrayjit's imports keep what they borrow)
        try:
            outs = self.fn(*inputs)
        except Exception as e:  # noqa: B902 (a translation that fails falls back, never crashes)
            if self.calls:
                raise  # it ran before: this is not a translation gap
            self._fall_back("%s: %s" % (type(e).__name__, e))
            return self(first)
        if not self.calls:
            self.bools = [isinstance(o, aj.Array) and o.dtype == aj.bool_ for o in outs] \
                if isinstance(outs, (list, tuple)) else None
            self._prepare_replays(args_were_tensors, inputs, outs)
        self.calls += 1
        del inputs, first
        if isinstance(outs, (list, tuple)):
            return [to_torch(o, b) if isinstance(o, aj.Array) else o for o, b in zip(outs, self.bools)]
        return to_torch(outs)

    def _prepare_replays(self, args_were_tensors, inputs, outs):
        """After the first call: the C function that replays it, when every
        input was a tensor and the results are a list or tuple of arrays
        and constants (AOTAutograd's graphs)."""
        e = self.fn._entries.get(len(inputs)) if args_were_tensors else None
        if e is None or not isinstance(outs, (list, tuple)):
            return
        leaves, tree = _flatten(outs)
        if len(leaves) != e.n_out or not all(isinstance(o, aj.Array) for o in leaves):
            return
        self.out_tree = tree
        self.leaf_bools = [o.dtype == aj.bool_ for o in leaves]
        self.kept = [None] * e.n_in
        self.entry = e

    def _replay(self, args):
        """A later call: the inputs' handles straight into the kept C
        function, the results straight out (see the class's note)."""
        e = self.entry
        n = len(args)
        if n + self.random != e.n_in or not all(isinstance(a, torch.Tensor) for a in args):
            self.entry = None  # not the form of the first call: the general path (it checks, and raises)
            return self(args)
        _set_caller()  # errors name the Python caller's line, as arrayjit.compile's calls do
        hs = e.ins_type()
        kept = self.kept
        owners = [None] * e.n_in  # the Array whose handle is hs[i], or None for a handle made here
        fresh = []  # (position, handle) of the imports made for this call alone
        try:
            for i, a in enumerate(args):
                arr = _own_export(a)
                if arr is None:
                    k = kept[i]
                    if k is not None and k[0] is a and k[1] == a.data_ptr() and k[2] == a.shape \
                            and k[3] == a.stride():
                        arr = k[4]
                    elif a.dtype is torch.bool or a.dtype not in _DTYPES:
                        try:
                            arr = to_arrayjit(a)  # a copy (bool)
                        except NotImplementedError:  # as in the general path: this graph runs on torch now
                            self.entry = None
                            self._fall_back("tensors of %s" % a.dtype)
                            return self(args)  # (this call's imports are released below)
                    elif isinstance(a, torch.nn.Parameter):
                        arr = aj.Array._own(_import_handle(a))
                        kept[i] = (a, a.data_ptr(), a.shape, a.stride(), arr)
                    else:
                        h = _import_handle(a)
                        fresh.append((i, h))
                        hs[i] = h
                        continue
                owners[i] = arr
                hs[i] = arr._h
            if self.random:
                h = _import_handle(torch.randint(-(1 << 62), 1 << 62, (), dtype=torch.int64))
                fresh.append((n, h))
                hs[n] = h
            args.clear()  # torch's references go (arrayjit's imports keep what they borrow)
            outs = e.outs_type()
            donate = e.donate
            if donate is None:
                _check(_lib.aj_function_call(e.fn, hs, outs))
            else:
                status = _lib.aj_function_call_donate(e.fn, hs, donate, outs)
                # The donated handles are consumed, whatever the status.
                for i in range(e.n_in):
                    if donate[i]:
                        if owners[i] is not None:
                            owners[i]._h = 0
                            if kept[i] is not None and kept[i][4] is owners[i]:
                                kept[i] = None
                        else:
                            fresh = [(j, h) for j, h in fresh if j != i]
                _check(status)
        finally:
            for _, h in fresh:
                _lib.aj_array_release(h)
        self.calls += 1
        bools = self.leaf_bools
        tensors = [to_torch(aj.Array._own(h), bools[i]) for i, h in enumerate(outs)]
        out = _unflatten(self.out_tree, tensors)
        return list(out) if isinstance(out, tuple) else out


_count = [0]


def compiler(gm, example_inputs):
    """AOTAutograd's fw_compiler / bw_compiler: gm (an aten graph) as an
    arrayjit function, or gm itself (with one warning) when it holds an op
    this module does not translate."""
    _count[0] += 1
    name = "aot_graph_%d" % _count[0]
    missing = unsupported_ops(gm)
    if missing:
        warnings.warn("arrayjit.torch: %s runs on torch: no arrayjit translation of %s"
                      % (name, ", ".join(missing)), stacklevel=2)
        return _boxed(gm)
    return _Compiled(gm, name)


def _boxed(gm):
    def run(args):
        out = gm(*args)
        args.clear()
        return out
    run._boxed_call = True
    return run


def compile(model_or_fn, **kwargs):
    """model_or_fn under AOTAutograd with arrayjit compiling its forward and
    backward graphs (functorch.compile.aot_module / aot_function)."""
    from functorch.compile import aot_function, aot_module
    kw = dict(fw_compiler=compiler, bw_compiler=compiler)
    kw.update(kwargs)
    if isinstance(model_or_fn, torch.nn.Module):
        return aot_module(model_or_fn, **kw)
    return aot_function(model_or_fn, **kw)


def backend(gm, example_inputs):
    """torch.compile(model, backend=arrayjit.torch.backend) (torch >= 2.0):
    Dynamo's graph through AOTAutograd, its aten graphs through compiler."""
    from torch._dynamo.backends.common import aot_autograd
    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler)(gm, example_inputs)


# ---- optimizers: the update through arrayjit, in the weights' own memory -------------------

class _Optimizer(torch.optim.Optimizer):
    """A torch optimizer whose step is one arrayjit compiled call per parameter
    group: every weight and state tensor is lent to arrayjit (aj.lend) and
    donated, so one fused kernel per tensor reads the weight, its gradient and
    state and writes the new values into the same memory torch owns (no
    copy, no allocation after the first step). Scalars that change per step
    (the learning rate, bias corrections) are arguments: the call replays."""

    _n_state = 0

    def __init__(self, params, defaults):
        super().__init__(params, defaults)
        self._fns = {}
        self._warned = False

    def _update(self, group):  # (p, g, *state, *scalars) -> (p, *state) for one tensor
        raise NotImplementedError

    def _scalars(self, group, step):
        raise NotImplementedError

    def _compiled(self, group, n):
        key = (id(group), n) + tuple(v for k, v in sorted(group.items()) if k not in ("params", "lr") and
                                     isinstance(v, (int, float, bool, tuple)))
        fn = self._fns.get(key)
        if fn is None:
            update = self._update(group)
            k = self._n_state

            def step(ps, gs, states, scalars):
                outs = [update(ps[i], gs[i], *states[i * k:(i + 1) * k], *scalars) for i in range(n)]
                return [o[0] for o in outs], [s for o in outs for s in o[1:]]
            fn = self._fns[key] = aj.compile(step, donate_argnums=(0, 2), name=type(self).__name__ + ".step")
        return fn

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            states = []
            for p in params:
                if p.device.type != "cpu" or not p.is_contiguous() or p.grad.is_sparse:
                    raise NotImplementedError("arrayjit.torch optimizers take contiguous CPU tensors with dense "
                                              "gradients")
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    for name in self._state_names:
                        st[name] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                st["step"] += 1
                states.extend(st[name] for name in self._state_names)
            step = self.state[params[0]]["step"]
            fn = self._compiled(group, len(params))
            new_params, new_states = fn([aj.lend(p) for p in params], [to_arrayjit(p.grad) for p in params],
                                        [aj.lend(s) for s in states], list(self._scalars(group, step)))
            # Written in place, as the lent tensors' layout lets every output take its input over; where
            # arrayjit did not (it does not happen for these updates: a check, not a path), copy.
            for t, a in zip(params + states, new_params + new_states):
                out = to_torch(a, False)
                if out.data_ptr() != t.data_ptr():
                    if not self._warned:
                        self._warned = True
                        warnings.warn("arrayjit.torch.%s: an update was not written in place; copying"
                                      % type(self).__name__, stacklevel=2)
                    t.copy_(out)
        return loss


class SGD(_Optimizer):
    """torch.optim.SGD's update (momentum, dampening, nesterov, weight_decay,
    maximize) computed by arrayjit in the tensors' memory."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 maximize=False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        self._state_names = ("momentum_buffer",) if momentum != 0 else ()
        self._n_state = len(self._state_names)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _scalars(self, group, step):
        # The first step copies the gradient into the buffer (torch's rule): 1 - dampening after it.
        # Every scalar reaches the kernels as it is (one computed in the step would trace each call).
        return [group["lr"], 1.0 if step == 1 else 1.0 - group["dampening"], 0.0 if step == 1 else group["momentum"]]

    def _update(self, group):
        mom, wd, nesterov, sign = group["momentum"], group["weight_decay"], group["nesterov"], \
            (-1.0 if group["maximize"] else 1.0)

        def update(p, g, *rest):
            *buf, lr, keep_g, mom_buf = rest
            g = g * sign
            if wd != 0:
                g = g + wd * p
            if not buf:
                return (p - lr * g,)
            b = buf[0] * mom_buf + keep_g * g
            d = g + mom * b if nesterov else b
            return p - lr * d, b
        return update


class Adam(_Optimizer):
    """torch.optim.Adam's update (betas, eps, weight_decay, amsgrad, maximize)
    computed by arrayjit in the tensors' memory."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 maximize=False):
        self._state_names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
        self._n_state = len(self._state_names)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _scalars(self, group, step):
        b1, b2 = group["betas"]
        return [group["lr"] / (1 - b1 ** step), math.sqrt(1 - b2 ** step)]

    def _update(self, group):
        (b1, b2), eps, wd = group["betas"], group["eps"], group["weight_decay"]
        amsgrad, sign = group["amsgrad"], -1.0 if group["maximize"] else 1.0

        def update(p, g, m, v, *rest):
            *vmax, step_size, bc2 = rest
            g = g * sign
            if wd != 0:
                g = g + wd * p
            m = m * b1 + g * (1 - b1)
            v = v * b2 + g * g * (1 - b2)
            if amsgrad:
                vmax = aj.maximum(vmax[0], v)
                denom = aj.sqrt(vmax) / bc2 + eps
                return p - step_size * (m / denom), m, v, vmax
            return p - step_size * (m / (aj.sqrt(v) / bc2 + eps)), m, v
        return update
