"""x[key] and x.at[key].set(v) / .add(v), NumPy's rules.

Basic indices (integers, slices with Python's clamping, None, ...) are views;
integer arrays gather (take); boolean masks select (the count of True values
is read from the mask first, so inside a traced function a mask needs a
static count: use where() or masked_select(size=...) there).
"""
import builtins
import numbers

from ._core import Array, asarray, bool_, operand
from . import _ops as ops


def _is_array_like(k):
    return isinstance(k, (Array, list)) or (type(k).__module__ == "numpy" and hasattr(k, "ndim")
                                            and type(k).__name__ == "ndarray")


def _normalize(x, key):
    """The key as a list of items, Ellipsis expanded to full slices."""
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if _is_array_like(k):
            k = asarray(k)
        elif isinstance(k, (builtins.bool,)) or type(k).__name__ == "bool_":
            raise IndexError("a Python bool is not an index here (use a boolean array)")
        elif not (k is None or k is Ellipsis or isinstance(k, (builtins.slice, numbers.Integral, Array))):
            raise IndexError("only integers, slices (:), ellipsis (...), None and integer or boolean arrays "
                             "are valid indices, got %r" % (k,))
        items.append(k)
    consumed = builtins.sum(k.ndim if isinstance(k, Array) and k.dtype is bool_ else
                            0 if k is None or k is Ellipsis else 1 for k in items)
    ellipses = [i for i, k in enumerate(items) if k is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    nd = x.ndim
    if consumed > nd:
        raise IndexError("too many indices for array: array is %d-dimensional, but %d were indexed"
                         % (nd, consumed))
    fill = [builtins.slice(None)] * (nd - consumed)
    if ellipses:
        i = ellipses[0]
        items = items[:i] + fill + items[i + 1:]
    else:
        items = items + fill
    return items


def _bounds(k, extent):
    start, stop, step = k.indices(extent)
    if step < 0 and stop < 0:
        stop = None  # down to and including element 0
    return start, stop, step


def getitem(x, key):
    items = _normalize(x, key)
    arrays = [i for i, k in enumerate(items) if isinstance(k, Array) and k.dtype is not bool_]
    ints = [i for i, k in enumerate(items) if isinstance(k, numbers.Integral)]
    if len(arrays) > 1 or (arrays and ints):
        return _advanced(x, items)
    ax = 0
    for k in items:
        if k is None:
            x = ops.expand_dims(x, ax)
            ax += 1
        elif isinstance(k, builtins.slice):
            if k != builtins.slice(None):
                start, stop, step = _bounds(k, x.shape[ax])
                x = ops.slice_axis(x, ax, start, stop, step)
            ax += 1
        elif isinstance(k, numbers.Integral):
            i = _in_bounds(k.__index__(), x.shape[ax], ax)
            x = ops.squeeze(ops.slice_axis(x, ax, i, i + 1, 1), ax)
        elif k.dtype is bool_:
            x = _mask(x, ax, k)
            ax += 1
        else:
            if k.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer or boolean type, got " + k.dtype.name)
            x = ops.take(x, k, axis=ax)
            ax += k.ndim
    return x


def _in_bounds(i, extent, ax):
    if not -extent <= i < extent:
        raise IndexError("index %d is out of bounds for axis %d with size %d" % (i, ax, extent))
    return i % extent


def _advanced(x, items):
    """NumPy's advanced indexing with several integer arrays (integers among
    them count as 0-d arrays): the index arrays broadcast together; their
    axes are replaced by the broadcast shape, in place when they are
    adjacent, else in front."""
    if any(k is None or (isinstance(k, Array) and k.dtype is bool_) for k in items):
        raise IndexError("None or a boolean mask beside several integer-array indices is not supported; "
                         "index in two steps")
    adv = [i for i, k in enumerate(items) if not isinstance(k, builtins.slice)]
    for i in adv:
        k = items[i]
        if isinstance(k, Array) and k.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer or boolean type, got " + k.dtype.name)
    # Slices first: every axis stays.
    for ax, k in enumerate(items):
        if isinstance(k, builtins.slice) and k != builtins.slice(None):
            start, stop, step = _bounds(k, x.shape[ax])
            x = ops.slice_axis(x, ax, start, stop, step)
    shape = x.shape
    idx = ops.broadcast_arrays(*[asarray(items[i]) if not isinstance(items[i], Array) else items[i] for i in adv])
    flat = None
    for j, i in enumerate(adv):
        extent = shape[i]
        k = items[i]
        if isinstance(k, numbers.Integral):
            _in_bounds(k.__index__(), extent, i)
        k = ops.where(idx[j] < 0, idx[j] + extent, idx[j])
        flat = k if flat is None else flat * extent + k
    adjacent = adv == list(range(adv[0], adv[-1] + 1))
    at = adv[0] if adjacent else 0
    rest = [i for i in range(len(shape)) if i not in adv]
    order = rest[:at] + adv + rest[at:]
    if order != list(range(len(shape))):
        x = ops.transpose(x, order)
    merged = 1
    for i in adv:
        merged *= shape[i]
    kept = [shape[i] for i in rest]
    x = ops.reshape(x, tuple(kept[:at]) + (merged,) + tuple(kept[at:]))
    return ops.take(x, flat, axis=at)


def _mask(x, ax, mask):
    shape = x.shape
    if mask.shape != shape[ax:ax + mask.ndim]:
        raise IndexError("boolean index of shape %s does not match the indexed axes %s"
                         % (mask.shape, shape[ax:ax + mask.ndim]))
    if ax == 0 and mask.ndim == x.ndim:
        return ops.masked_select(x, mask)
    flat = ops.reshape(x, shape[:ax] + (-1,) + shape[ax + mask.ndim:])
    (idx,) = ops.nonzero(ops.ravel(mask))
    return ops.take(flat, idx, axis=ax)


class At:
    """x.at[key]: functional updates, as JAX's (x is unchanged)."""

    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, key):
        return _AtIndex(self._x, key)


class _AtIndex:
    __slots__ = ("_x", "_key")

    def __init__(self, x, key):
        self._x, self._key = x, key

    def get(self):
        return self._x[self._key]

    def set(self, values):
        return self._update(values, add=False)

    def add(self, values):
        return self._update(values, add=True)

    def _update(self, values, add):
        x = self._x
        items = _normalize(x, self._key)
        if any(k is None for k in items):
            raise IndexError("x.at[...]: None is not allowed in an update's index")
        masks = [k for k in items if isinstance(k, Array) and k.dtype is bool_]
        arrays = [i for i, k in enumerate(items) if isinstance(k, Array) and k.dtype is not bool_]
        if masks:
            if len(items) != 1 or masks[0].shape != x.shape:
                raise IndexError("x.at[mask]: the mask must have x's shape %s" % (x.shape,))
            v = operand(values)
            return ops.where(masks[0], x + v, x) if add else ops.where(masks[0], v, x)
        if arrays:
            if len(arrays) > 1 or any(not (isinstance(k, builtins.slice) and k == builtins.slice(None))
                                      for i, k in enumerate(items) if i != arrays[0]):
                raise IndexError("x.at[...] with an integer array: one array index, the other axes whole (:)")
            ax = arrays[0]
            idx = items[ax]
            v = ops.broadcast_to(operand(values).astype(x.dtype), x.shape[:ax] + idx.shape + x.shape[ax + 1:])
            return (ops.scatter_add if add else ops.scatter)(x, idx, v, ax)
        starts, stops, steps, keep = [], [], [], []
        for ax, k in enumerate(items):
            extent = x.shape[ax]
            if isinstance(k, builtins.slice):
                s, e, st = _bounds(k, extent)
                starts.append(s)
                stops.append(e)
                steps.append(st)
                keep.append(True)
            else:
                i = k.__index__()
                if not -extent <= i < extent:
                    raise IndexError("index %d is out of bounds for axis %d with size %d" % (i, ax, extent))
                i %= extent
                starts.append(i)
                stops.append(i + 1)
                steps.append(1)
                keep.append(False)
        region = x[self._key]  # the shape the values broadcast to, as NumPy's
        v = ops.broadcast_to(operand(values), region.shape)
        full = tuple(d for d in ops.slice(x, starts, stops, steps).shape)
        v = ops.reshape(v, full)
        return (ops.slice_add if add else ops.slice_update)(x, starts, stops, steps, v)
