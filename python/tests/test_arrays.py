"""Arrays, dtypes, operators and ops against NumPy on random inputs."""
import math

import numpy as np
import pytest

import arrayjit as aj


def test_dtypes_compare_with_every_spelling():
    assert aj.float32 == "float32" == aj.dtype("f32") == aj.dtype(np.float32) == aj.dtype(np.dtype("float32"))
    assert aj.int64 == aj.dtype(int) and aj.float64 == aj.dtype(float) and aj.bool_ == aj.dtype(bool)
    assert aj.bool is aj.bool_ and repr(aj.bool_) == "arrayjit.bool_"
    assert aj.float16.itemsize == 2 and aj.bfloat16.itemsize == 2
    with pytest.raises(TypeError, match="no dtype"):
        aj.dtype("complex64")


def test_creation_matches_numpy():
    np.testing.assert_array_equal(aj.zeros((2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(aj.ones(4, aj.int32), np.ones(4, np.int32))
    np.testing.assert_array_equal(aj.full((2, 2), 7), np.full((2, 2), 7))
    assert aj.full((2,), 7).dtype == aj.int64 and aj.full((2,), 7.5).dtype == aj.float64
    np.testing.assert_array_equal(aj.arange(5), np.arange(5))
    np.testing.assert_allclose(aj.arange(1, 2, 0.25), np.arange(1, 2, 0.25))
    np.testing.assert_allclose(aj.linspace(-1, 3, 7), np.linspace(-1, 3, 7))
    np.testing.assert_array_equal(aj.eye(3, 4, 1), np.eye(3, 4, 1))
    np.testing.assert_allclose(aj.logspace(0, 2, 5), np.logspace(0, 2, 5))
    x = aj.asarray(np.arange(6.0).reshape(2, 3))
    assert aj.zeros_like(x).shape == (2, 3) and aj.ones_like(x, dtype=aj.int32).dtype == aj.int32
    np.testing.assert_array_equal(aj.full_like(x, 2.5), np.full((2, 3), 2.5))


def test_asarray_copies_numpy_and_lists(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x = aj.asarray(a)
    a[0, 0] = 100  # a copy: arrayjit's array does not change
    assert x.dtype == aj.float32 and x.shape == (3, 4) and x.ndim == 2 and x.size == 12 and len(x) == 3
    assert float(x[0, 0]) != 100
    np.testing.assert_array_equal(aj.asarray([[1, 2], [3, 4]]), [[1, 2], [3, 4]])
    assert aj.asarray([1.5, 2]).dtype == aj.float64
    assert aj.asarray(np.arange(3, dtype=np.uint8)).dtype == aj.uint8
    assert aj.asarray(3.0, dtype="float32").dtype == aj.float32


BINARY = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
          ("maximum", np.maximum), ("minimum", np.minimum), ("arctan2", np.arctan2), ("hypot", np.hypot),
          ("logaddexp", np.logaddexp), ("copysign", np.copysign), ("fmod", np.fmod), ("mod", np.mod)]
UNARY = [("exp", np.exp), ("log1p", np.log1p), ("sin", np.sin), ("tanh", np.tanh), ("abs", np.abs),
         ("floor", np.floor), ("sqrt", None), ("negative", np.negative), ("square", np.square),
         ("expm1", np.expm1), ("arcsinh", np.arcsinh), ("cbrt", np.cbrt), ("sign", np.sign)]


@pytest.mark.parametrize("name,ref", BINARY)
def test_binary_ops_broadcast_like_numpy(rng, name, ref):
    a = rng.standard_normal((3, 1, 4))
    b = rng.standard_normal((5, 1)) + 2.0
    got = getattr(aj, name)(aj.asarray(a), aj.asarray(b))
    assert got.shape == (3, 5, 4)
    np.testing.assert_allclose(np.asarray(got), ref(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,ref", UNARY)
def test_unary_ops_like_numpy(rng, name, ref):
    a = rng.standard_normal(50)
    if name == "sqrt":
        a, ref = np.abs(a), np.sqrt
    if name == "log1p":
        a = np.abs(a)
    np.testing.assert_allclose(getattr(aj, name)(aj.asarray(a)), ref(a), rtol=1e-12, atol=1e-14)


def test_every_listed_elementwise_op_is_a_function():
    from arrayjit import _capi
    for names in _capi.OP_LISTS.values():
        for n in names:
            assert callable(getattr(aj, n)), n


def test_operators_and_weak_scalars(rng):
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((4, 3)).astype(np.float32)
    x, y = aj.asarray(a), aj.asarray(b)
    for got, want in [(x + y, a + b), (x - 2, a - 2), (3 * x, 3 * a), (x / y, a / b), (2 / x, 2 / a),
                      (x ** 2, a ** 2), (-x, -a), (abs(x), np.abs(a)), (x @ y.T, a @ b.T),
                      (x // 0.5, a // 0.5), (x % 0.7, a % np.float32(0.7))]:
        assert got.dtype == aj.float32, got.dtype  # a Python number takes the array's dtype
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(x < y, a < b)
    np.testing.assert_array_equal((x < y) & (x > 0), (a < b) & (a > 0))
    np.testing.assert_array_equal((x < y) | ~(x > 0), (a < b) | ~(a > 0))
    np.testing.assert_array_equal((x < y) ^ (x > 0), (a < b) ^ (a > 0))
    i = aj.arange(10)
    assert (i + 1).dtype == aj.int64 and (i * 0.5).dtype == aj.float64
    np.testing.assert_array_equal(i // 3, np.arange(10) // 3)
    assert (aj.arange(10, dtype=aj.int32) / 4).dtype.is_floating  # true division, as NumPy's


def test_bit_operations_match_numpy(rng):
    for dt in (np.int32, np.int64):
        a = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, 100, dtype=dt)
        b = rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, 100, dtype=dt)
        s = rng.integers(-2, np.iinfo(dt).bits + 2, 100).astype(dt)  # counts past the width too
        x, y, c = aj.asarray(a), aj.asarray(b), aj.asarray(s)
        np.testing.assert_array_equal(x & y, a & b)
        np.testing.assert_array_equal(x | y, a | b)
        np.testing.assert_array_equal(x ^ y, a ^ b)
        np.testing.assert_array_equal(~x, ~a)
        np.testing.assert_array_equal(x << c, np.left_shift(a, s))
        np.testing.assert_array_equal(x >> c, np.right_shift(a, s))
        np.testing.assert_array_equal(aj.bitwise_and(x, 0xf0), a & 0xf0)
        np.testing.assert_array_equal(aj.invert(x), np.invert(a))
    p, q = aj.asarray([True, False]), aj.asarray([True, True])
    np.testing.assert_array_equal(p ^ q, [False, True])
    with pytest.raises(aj.UserError, match="integer"):
        aj.ones(3) & 1


def test_numpy_arrays_on_either_side(rng):
    a = rng.standard_normal(5)
    x = aj.asarray(a)
    r1, r2 = x + a, a + x  # NumPy defers to arrayjit (__array_priority__)
    assert isinstance(r1, aj.Array) and isinstance(r2, aj.Array)
    np.testing.assert_allclose(r2, 2 * a)


def test_reductions_match_numpy(rng):
    a = rng.standard_normal((3, 4, 5))
    x = aj.asarray(a)
    for name in ("sum", "prod", "mean", "max", "min"):
        for axis in (None, 0, (0, 2), -1):
            got = getattr(aj, name)(x, axis=axis, keepdims=axis == 0)
            want = getattr(np, name)(a, axis=axis, keepdims=axis == 0)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_allclose(x.std(axis=1, ddof=1), a.std(axis=1, ddof=1))
    np.testing.assert_allclose(x.var(), a.var())
    np.testing.assert_array_equal(x.argmax(axis=2), a.argmax(axis=2))
    np.testing.assert_array_equal(aj.argmin(x), a.argmin())
    np.testing.assert_allclose(aj.cumsum(x, axis=1), np.cumsum(a, axis=1))
    np.testing.assert_allclose(aj.median(x, axis=0), np.median(a, axis=0))
    np.testing.assert_allclose(aj.quantile(x, 0.3, axis=2), np.quantile(a, 0.3, axis=2))
    assert bool((x > -10).all()) and not bool((x > 10).any())


def test_shape_ops_match_numpy(rng):
    a = rng.standard_normal((2, 3, 4))
    x = aj.asarray(a)
    np.testing.assert_array_equal(x.reshape(4, 6), a.reshape(4, 6))
    np.testing.assert_array_equal(x.reshape((-1, 2)), a.reshape(-1, 2))
    np.testing.assert_array_equal(x.transpose(2, 0, 1), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.T, a.T)
    np.testing.assert_array_equal(aj.swapaxes(x, 0, 2), np.swapaxes(a, 0, 2))
    np.testing.assert_array_equal(aj.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    np.testing.assert_array_equal(aj.expand_dims(x, (0, 2)), np.expand_dims(a, (0, 2)))
    np.testing.assert_array_equal(aj.squeeze(aj.asarray(a[:, :1])), np.squeeze(a[:, :1]))
    np.testing.assert_array_equal(aj.concatenate([x, x], axis=1), np.concatenate([a, a], axis=1))
    np.testing.assert_array_equal(aj.stack([x, x], axis=-1), np.stack([a, a], axis=-1))
    np.testing.assert_array_equal(aj.flip(x, 1), np.flip(a, 1))
    np.testing.assert_array_equal(aj.tile(x, (1, 2, 1)), np.tile(a, (1, 2, 1)))
    np.testing.assert_array_equal(aj.repeat(x, 2, axis=2), np.repeat(a, 2, axis=2))
    for got, want in zip(aj.split(x, [1, 3], axis=2), np.split(a, [1, 3], axis=2)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(aj.array_split(x, 3, axis=2), np.array_split(a, 3, axis=2)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(aj.tril(x[0], -1), np.tril(a[0], -1))
    np.testing.assert_allclose(aj.trace(x[0]), np.trace(a[0]))
    np.testing.assert_array_equal(aj.pad(x, ((0, 0), (1, 2), (0, 1))), np.pad(a, ((0, 0), (1, 2), (0, 1))))
    np.testing.assert_array_equal(aj.pad(x, 1, mode="edge"), np.pad(a, 1, mode="edge"))
    np.testing.assert_array_equal(aj.roll(x, 2, axis=2), np.roll(a, 2, axis=2))
    np.testing.assert_array_equal(aj.roll(x, -3), np.roll(a, -3))
    g1, g2 = aj.meshgrid(aj.arange(3), aj.arange(2))
    w1, w2 = np.meshgrid(np.arange(3), np.arange(2))
    np.testing.assert_array_equal(g1, w1)
    np.testing.assert_array_equal(g2, w2)
    assert [u.shape for u in aj.unstack(x, 1)] == [(2, 4)] * 3


def test_products_and_einsum(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_allclose(aj.matmul(a, b), a @ b)
    np.testing.assert_allclose(aj.dot(aj.asarray(a), b), a @ b)
    np.testing.assert_allclose(aj.einsum("ij,jk->ki", aj.asarray(a), aj.asarray(b)), np.einsum("ij,jk->ki", a, b))
    np.testing.assert_allclose(aj.tensordot(aj.asarray(a), aj.asarray(b), axes=1), np.tensordot(a, b, 1))
    np.testing.assert_allclose(aj.outer(a[0], b[0]), np.outer(a[0], b[0]))
    np.testing.assert_allclose(aj.kron(a[:2, :2], b[:2, :2]), np.kron(a[:2, :2], b[:2, :2]))
    path, text = aj.einsum_path("ij,jk,kl->il", aj.asarray(a), aj.asarray(b), aj.ones((5, 2)))
    assert path[0] == "einsum_path" and len(path) == 3 and "optimized multiply-adds" in text


def test_sort_search_where(rng):
    a = rng.standard_normal((4, 6))
    x = aj.asarray(a)
    np.testing.assert_array_equal(aj.sort(x), np.sort(a))
    np.testing.assert_array_equal(aj.argsort(x, axis=0), np.argsort(a, axis=0, kind="stable"))
    v, i = aj.top_k(x, 2)
    np.testing.assert_array_equal(v, -np.sort(-a)[:, :2])
    s = np.sort(a.ravel())
    np.testing.assert_array_equal(aj.searchsorted(s, a[0]), np.searchsorted(s, a[0]))
    np.testing.assert_array_equal(aj.where(x > 0, x, 0.0), np.where(a > 0, a, 0.0))
    (r, c) = aj.nonzero(x > 0)
    wr, wc = np.nonzero(a > 0)
    np.testing.assert_array_equal(r, wr)
    np.testing.assert_array_equal(c, wc)
    np.testing.assert_array_equal(aj.unique(aj.asarray([3, 1, 3, 2])), [1, 2, 3])
    np.testing.assert_array_equal(aj.bincount(aj.asarray([0, 2, 2, 5])), np.bincount([0, 2, 2, 5]))
    np.testing.assert_array_equal(aj.clip(x, -0.5, 0.5), np.clip(a, -0.5, 0.5))
    assert aj.allclose(x, a) and not aj.allclose(x, a + 1) and aj.array_equal(x, a)


def test_gathers_and_scatters(rng):
    a = rng.standard_normal((5, 3))
    x = aj.asarray(a)
    idx = np.array([4, 0, 0, 2])
    np.testing.assert_array_equal(aj.take(x, idx, axis=0), a[idx])
    ti = rng.integers(0, 3, (5, 2))
    np.testing.assert_array_equal(aj.take_along_axis(x, ti, 1), np.take_along_axis(a, ti, 1))
    want = np.zeros((5, 3))
    np.add.at(want, idx, np.ones((4, 3)))
    np.testing.assert_array_equal(aj.scatter_add(aj.zeros((5, 3)), idx, aj.ones((4, 3))), want)
    np.testing.assert_array_equal(aj.one_hot(aj.asarray([0, 2]), 3), np.eye(3, dtype=np.float32)[[0, 2]])


def test_item_bool_int_float_and_iteration():
    x = aj.asarray([[1.5, 2.0]])
    assert x[0, 1].item() == 2.0 and float(x[0, 0]) == 1.5 and int(x[0, 1]) == 2
    assert bool(aj.asarray(True)) and aj.asarray(3).item() == 3
    assert [float(v) for v in aj.asarray([1.0, 2.0])] == [1.0, 2.0]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    assert x.tolist() == [[1.5, 2.0]]
    assert math.isclose(float(aj.sum(aj.asarray([0.1] * 10))), 1.0)
    assert "{:.2f}".format(aj.asarray(3.14159)) == "3.14"


def test_arrays_are_immutable():
    x = aj.zeros(3)
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1
    with pytest.raises(TypeError):
        hash(x)


def test_astype_and_halves(rng):
    a = rng.standard_normal(8)
    h = aj.asarray(a).astype(aj.float16)
    assert h.dtype == aj.float16
    np.testing.assert_array_equal(np.asarray(h), a.astype(np.float16))
    b = aj.asarray(a).astype("bfloat16")
    assert b.dtype == aj.bfloat16 and np.asarray(b).dtype == np.float32  # NumPy has no bfloat16
    np.testing.assert_allclose(np.asarray(b), a, rtol=1e-2)
