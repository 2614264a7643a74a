"""Array's NumPy methods (x.sum(axis=0), x.reshape(2, 3), x.T, ...): the
functions of _ops bound as methods."""
from . import _ops as ops
from ._core import Array


def _bind(name, fn=None):
    f = fn or getattr(ops, name)

    def method(self, *args, **kwargs):
        return f(self, *args, **kwargs)
    method.__name__ = name
    method.__qualname__ = "Array." + name
    method.__doc__ = f.__doc__
    setattr(Array, name, method)


for _name in ("sum", "prod", "mean", "max", "min", "all", "any", "std", "var", "argmax", "argmin", "cumsum",
              "cumprod", "transpose", "astype", "squeeze", "swapaxes", "clip", "round", "take", "repeat",
              "diagonal", "trace", "nonzero", "ravel", "flip", "argsort", "sort"):
    _bind(_name)


def _reshape(self, *shape, **kwargs):
    if len(shape) == 1:
        shape = shape[0]
    return ops.reshape(self, shape, **kwargs)


def _transpose(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return ops.transpose(self, axes or None)


Array.reshape = _reshape
Array.transpose = _transpose
Array.flatten = lambda self: ops.ravel(self)
Array.dot = lambda self, other: ops.dot(self, other)
Array.copy = lambda self: self  # immutable: a copy is the same values
Array.to_device = lambda self, device, stream=None: ops.to_device(self, device)
Array.T = property(lambda self: ops.transpose(self))
Array.mT = property(lambda self: ops.swapaxes(self, -1, -2))


def _namespace(self, api_version=None):
    import arrayjit
    return arrayjit


Array.__array_namespace__ = _namespace
