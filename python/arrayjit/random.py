"""Counter-based random numbers (arrayjit/random.hpp): the values depend only
on the seed and the number of random arrays made since it was set. `size` is
the result's shape (NumPy's name); dtype defaults to float64, as NumPy's.

With key= (a rank-0 integer array, JAX's style) uniform, normal, bernoulli
and bits draw from that key instead of the seed: inside a compiled function
whose argument is the key, every call draws new numbers without tracing
again (the seed's draws are fixed when the function is traced). fold_in
derives independent keys from one."""

from ._capi import lib, set_caller
from ._core import _index, _shape_arg, dtype as _dtype, float64, int64, new, new_many, operand


def _shape(size):
    return _shape_arg(() if size is None else size)


def _float(dtype):
    return (float64 if dtype is None else _dtype(dtype)).code


def seed(s):
    lib.aj_random_seed(int(s) & ((1 << 64) - 1))


def key(seed):
    """A key: a rank-0 int64 array holding seed."""
    set_caller()
    return new(lib.aj_random_key, int(seed))


def split(key, num=2):
    """num keys independent of each other and of key (fold_in of 0 .. num-1)."""
    set_caller()
    return new_many(lib.aj_random_split, int(num), operand(key), int(num))


def fold_in(key, data):
    """An independent key for each data (an int), from key."""
    set_caller()
    return new(lib.aj_random_fold_in, operand(key), int(data))


def bits(key, size=None):
    """64 random bits per element (int64) from key."""
    set_caller()
    return new(lib.aj_random_bits, operand(key), *_shape(size))


def uniform(low=0.0, high=1.0, size=None, dtype=None, key=None):
    set_caller()
    if key is not None:
        return new(lib.aj_random_key_uniform, operand(key), *_shape(size), float(low), float(high), _float(dtype))
    return new(lib.aj_random_uniform, *_shape(size), float(low), float(high), _float(dtype))


def random(size=None, dtype=None, key=None):
    return uniform(0.0, 1.0, size, dtype, key)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, key=None):
    set_caller()
    if key is not None:
        return new(lib.aj_random_key_normal, operand(key), *_shape(size), float(loc), float(scale), _float(dtype))
    return new(lib.aj_random_normal, *_shape(size), float(loc), float(scale), _float(dtype))


def standard_normal(size=None, dtype=None, key=None):
    return normal(0.0, 1.0, size, dtype, key)


def randint(low, high=None, size=None, dtype=None):
    """Integers in [low, high) (NumPy's: randint(high) is [0, high))."""
    set_caller()
    if high is None:
        low, high = 0, low
    return new(lib.aj_random_randint, *_shape(size), _index(low), _index(high),
               (int64 if dtype is None else _dtype(dtype)).code)


integers = randint


def permutation(n):
    """A permutation of 0..n-1; of an array: it shuffled along axis 0."""
    set_caller()
    if hasattr(n, "shape") or isinstance(n, (list, tuple)):
        return shuffle(n, 0)
    return new(lib.aj_random_permutation, _index(n))


def bernoulli(p=0.5, size=None, key=None):
    set_caller()
    if key is not None:
        return new(lib.aj_random_key_bernoulli, operand(key), *_shape(size), float(p))
    return new(lib.aj_random_bernoulli, *_shape(size), float(p))


def exponential(scale=1.0, size=None, dtype=None):
    set_caller()
    return new(lib.aj_random_exponential, *_shape(size), float(scale), _float(dtype))


def gumbel(loc=0.0, scale=1.0, size=None, dtype=None):
    set_caller()
    return new(lib.aj_random_gumbel, *_shape(size), float(loc), float(scale), _float(dtype))


def truncated_normal(lower, upper, size=None, dtype=None):
    set_caller()
    return new(lib.aj_random_truncated_normal, *_shape(size), float(lower), float(upper), _float(dtype))


def gamma(shape, scale=1.0, size=None, dtype=None):
    set_caller()
    return new(lib.aj_random_gamma, *_shape(size), float(shape), float(scale), _float(dtype))


def beta(a, b, size=None, dtype=None):
    set_caller()
    return new(lib.aj_random_beta, *_shape(size), float(a), float(b), _float(dtype))


def poisson(lam=1.0, size=None):
    set_caller()
    return new(lib.aj_random_poisson, *_shape(size), float(lam))


def categorical(logits, axis=-1):
    """Indices drawn along axis with probabilities softmax(logits)."""
    set_caller()
    return new(lib.aj_random_categorical, operand(logits), _index(axis))


def multinomial(n, pvals):
    set_caller()
    return new(lib.aj_random_multinomial, _index(n), operand(pvals))


def choice(a, size=None, replace=True, p=None):
    """Indices of 0..a-1 (a an int), or elements of the 1-d array a."""
    set_caller()
    arr = None
    if not isinstance(a, int):
        arr = operand(a)
        n = arr.shape[0]
    else:
        n = a
    count = 1 if size is None else _index(size)
    idx = new(lib.aj_random_choice, _index(n), count, 1 if replace else 0, operand(p) if p is not None else 0)
    if size is None:
        idx = idx[0]
    if arr is not None:
        from ._ops import take
        return take(arr, idx, 0)
    return idx


def shuffle(x, axis=0):
    """x shuffled along axis (a new array: arrayjit arrays are immutable)."""
    set_caller()
    return new(lib.aj_random_shuffle, operand(x), _index(axis))

