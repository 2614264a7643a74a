"""arrayjit from Python: lazy NumPy-style arrays, fused and compiled by
arrayjit's graph optimizer and JIT (libarrayjit.so, through its C API).

    import arrayjit as aj
    x = aj.linspace(0, 1, 5, dtype=aj.float32)
    y = aj.sin(x) * 2 + 1          # lazy: one fused kernel when read
    print(y)                       # [1.        1.4948  ...]   (as NumPy prints)
    step = aj.compile(train_step)  # traced once, replayed after
    g = aj.grad(loss)(params, batch)

Names follow NumPy (and the array API where NumPy has none); arrays are
immutable (x.at[i].set(v) updates functionally). Errors are exceptions
naming your file and line: arrayjit.UserError (a ValueError) for bad
arguments, RuntimeFailure, InternalError, HandleError.
"""
from ._capi import (ArrayJitError, HandleError, InternalError, RuntimeFailure, UserError,  # noqa: F401
                    LIBRARY_PATH)
from ._core import (Array, Device, DType, asarray, array, bfloat16, bool_, dtype, float16, float32,  # noqa: F401
                    float64, from_numpy, int8, int16, int32, int64, uint8, uint16, uint32, uint64)
from ._ops import *  # noqa: F401,F403
from ._ops import __all__ as _ops_all
from ._dlpack import from_dlpack, lend  # noqa: F401
from ._facilities import *  # noqa: F401,F403
from ._transforms import (checkpoint, compile, custom_jvp, custom_vjp, grad, jit, jvp, remat,  # noqa: F401
                          value_and_grad, vjp)
from . import _methods  # noqa: F401 (binds the Array methods)
from . import distributed, linalg, nn, random  # noqa: F401
from .nn import log_softmax, logsumexp, one_hot, softmax  # noqa: F401

__version__ = version()  # noqa: F405
bool = bool_  # noqa: A001 (the array API's name)

newaxis = None
pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")
