"""numpy.linalg (arrayjit/linalg.hpp): over the last two axes, batched over
the leading ones. A singular or not positive definite matrix raises
UserError when the result is evaluated, as NumPy's LinAlgError."""
import ctypes as C
import numbers

from ._capi import lib, set_caller
from ._core import _axes_arg, new, new_many, operand
from ._ops import cross, diagonal, einsum, matmul, outer, tensordot, trace, vdot  # noqa: F401 (array API names)

def cholesky(a, upper=False):
    set_caller()
    return new(lib.aj_linalg_cholesky, operand(a), 1 if upper else 0)


def solve(a, b):
    set_caller()
    return new(lib.aj_linalg_solve, operand(a), operand(b))


def inv(a):
    set_caller()
    return new(lib.aj_linalg_inv, operand(a))


def solve_triangular(a, b, lower=True, transpose_a=False, unit_diagonal=False):
    set_caller()
    return new(lib.aj_linalg_triangular_solve, operand(a), operand(b), 1 if lower else 0,
               1 if transpose_a else 0, 1 if unit_diagonal else 0)


def lu_factor(a):
    """(lu, pivots, permutation)."""
    set_caller()
    return tuple(new_many(lib.aj_linalg_lu_factor, 3, operand(a), count_after=True))


def lu(a):
    """(p, l, u) with a = p @ l @ u (SciPy's order)."""
    set_caller()
    return tuple(new_many(lib.aj_linalg_lu, 3, operand(a), count_after=True))


def qr(a, mode="reduced"):
    set_caller()
    modes = {"reduced": 0, "complete": 1, "r": 2}
    if mode not in modes:
        raise ValueError("qr: mode must be 'reduced', 'complete' or 'r', got %r" % (mode,))
    n = 1 if mode == "r" else 2
    out = new_many(lib.aj_linalg_qr, n, operand(a), modes[mode], count_after=True)
    return out[0] if mode == "r" else tuple(out)


def svd(a, full_matrices=True, compute_uv=True):
    set_caller()
    if not compute_uv:
        return svdvals(a)
    return tuple(new_many(lib.aj_linalg_svd, 3, operand(a), 1 if full_matrices else 0, count_after=True))


def svdvals(a):
    set_caller()
    return new(lib.aj_linalg_svdvals, operand(a))


def eigh(a, UPLO="L"):
    set_caller()
    return tuple(new_many(lib.aj_linalg_eigh, 2, operand(a), 1 if UPLO == "U" else 0, count_after=True))


def eigvalsh(a, UPLO="L"):
    set_caller()
    return new(lib.aj_linalg_eigvalsh, operand(a), 1 if UPLO == "U" else 0)


def det(a):
    set_caller()
    return new(lib.aj_linalg_det, operand(a))


def slogdet(a):
    """(sign, logabsdet)."""
    set_caller()
    return tuple(new_many(lib.aj_linalg_slogdet, 2, operand(a), count_after=True))


def lstsq(a, b, rcond=None):
    """(x, residuals, rank, s), as NumPy's."""
    set_caller()
    rc = None if rcond is None else C.byref(C.c_double(rcond))
    return tuple(new_many(lib.aj_linalg_lstsq, 4, operand(a), operand(b), rc, count_after=True))


def pinv(a, rcond=1e-15):
    set_caller()
    return new(lib.aj_linalg_pinv, operand(a), float(rcond))


def _ord(ord):
    """(aj_norm_ord, p) for NumPy's ord."""
    if ord is None:
        return 0, 0.0
    if ord == "fro":
        return 2, 0.0
    if ord == "nuc":
        return 3, 0.0
    if isinstance(ord, numbers.Real):
        return 1, float(ord)
    raise ValueError("norm: ord must be None, a number, inf, 'fro' or 'nuc', got %r" % (ord,))


def norm(x, ord=None, axis=None, keepdims=False):
    set_caller()
    o, p = _ord(ord)
    axes, n = _axes_arg(axis)
    return new(lib.aj_linalg_norm, operand(x), o, p, axes, n, 1 if keepdims else 0)


def vector_norm(x, ord=2, axis=None, keepdims=False):
    set_caller()
    axes, n = _axes_arg(axis)
    return new(lib.aj_linalg_vector_norm, operand(x), float(ord), axes, n, 1 if keepdims else 0)


def matrix_norm(x, ord="fro", keepdims=False):
    set_caller()
    o, p = _ord(ord)
    return new(lib.aj_linalg_matrix_norm, operand(x), o, p, 1 if keepdims else 0)


def matrix_power(a, n):
    set_caller()
    return new(lib.aj_linalg_matrix_power, operand(a), int(n))


def matrix_rank(a, tol=None):
    set_caller()
    t = None if tol is None else C.byref(C.c_double(tol))
    return new(lib.aj_linalg_matrix_rank, operand(a), t)


def _matrix_transpose(x):
    from ._ops import swapaxes
    return swapaxes(x, -1, -2)


matrix_transpose = _matrix_transpose
