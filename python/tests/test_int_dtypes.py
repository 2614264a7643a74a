"""The integer dtypes of every width (uint8 ... uint64, int8, int16) against
NumPy: promotion of every pair, arithmetic, bit operations, gcd/lcm,
reductions, printing, DLPack both ways and Python scalars."""
import numpy as np
import pytest

import arrayjit as aj

NEW = ["uint8", "int8", "int16", "uint16", "uint32", "uint64"]
ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "float32", "float64"]


def rand(dt, n, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dt)
    v = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
    v[:6] = [info.min, info.max, 0, 1, info.max // 2 + 1, info.min + 1]
    m = min(n, 20)
    v[6:m] = np.arange(-7, 7)[:m - 6].astype(dt)  # small ones (and wrapped negatives)
    return v


def test_every_pair_promotes_as_numpy():
    for a in ALL:
        for b in ALL:
            got = aj.maximum(aj.zeros(2, dtype=a), aj.zeros(2, dtype=b)).dtype  # (+ refuses bools)
            assert got == np.promote_types(a, b), (a, b, got)


@pytest.mark.parametrize("name", NEW)
def test_arithmetic_and_bits_as_numpy(name):
    dt = np.dtype(name)
    x, y = rand(dt, 301, 1), rand(dt, 301, 2)
    s = (rand(dt, 301, 3) % (8 * dt.itemsize + 4)).astype(dt)  # shift counts, the width and past it
    ax, ay, as_ = aj.asarray(x), aj.asarray(y), aj.asarray(s)
    assert ax.dtype == name and ax.dtype == dt
    with np.errstate(all="ignore"):
        cases = {
            "add": (ax + ay, x + y), "sub": (ax - ay, x - y), "mul": (ax * ay, x * y),
            "floordiv": (ax // ay, x // y), "mod": (ax % ay, x % y),
            "max": (aj.maximum(ax, ay), np.maximum(x, y)), "neg": (-ax, -x), "abs": (abs(ax), np.abs(x)),
            "and": (ax & ay, x & y), "or": (ax | ay, x | y), "xor": (ax ^ ay, x ^ y), "invert": (~ax, ~x),
            "lshift": (ax << as_, x << s), "rshift": (ax >> as_, x >> s),
            "gcd": (aj.gcd(ax, ay), np.gcd(x, y)), "lcm": (aj.lcm(ax, ay), np.lcm(x, y)),
            "lt": (ax < ay, x < y), "eq": (ax == ay, x == y),
            "sum": (ax.sum(), x.sum()), "cumsum": (aj.cumsum(ax), np.cumsum(x)),
            "prod": (ax[:5].prod(), x[:5].prod()), "max_all": (ax.max(), x.max()), "argmin": (ax.argmin(), x.argmin()),
            "to_f64": (ax.astype(aj.float64), x.astype(np.float64)),
            "to_f32": (ax.astype("float32"), x.astype(np.float32)),
            "to_i8": (ax.astype(aj.int8), x.astype(np.int8)),
            "matmul": (ax[:12].reshape(3, 4) @ ay[:12].reshape(4, 3), x[:12].reshape(3, 4) @ y[:12].reshape(4, 3)),
            "mixed": (ax + aj.asarray(y.astype(np.int16)), x + y.astype(np.int16)),
            "scalar": (ax + 3, x + dt.type(3)),
        }
    for what, (got, want) in cases.items():
        g = got.numpy()
        assert g.dtype == np.asarray(want).dtype, (what, g.dtype, np.asarray(want).dtype)
        np.testing.assert_array_equal(g, want, err_msg=what)


@pytest.mark.parametrize("name", NEW)
def test_printing_dlpack_and_items_as_numpy(name):
    dt = np.dtype(name)
    x = rand(dt, 9, 4)
    a = aj.asarray(x)
    assert repr(a) == repr(x)
    assert str(a) == str(x)
    assert repr(aj.asarray(x[:0])) == repr(x[:0])
    assert repr(aj.asarray(x[3:4].reshape(()))) == repr(x[3:4].reshape(()))
    back = np.from_dlpack(a)
    assert back.dtype == dt
    np.testing.assert_array_equal(back, x)
    b = aj.from_dlpack(x)
    assert b.dtype == dt
    np.testing.assert_array_equal(b.numpy(), x)
    assert a[1].item() == int(x[1]) and type(a[1].item()) is int
    assert a.tolist() == x.tolist()


def test_python_ints_as_weak_scalars():
    x = np.array([1, 2, 2**63], dtype=np.uint64)
    a = aj.asarray(x)
    np.testing.assert_array_equal((a + (2**64 - 1)).numpy(), x + np.uint64(2**64 - 1))  # wraps
    assert (a + (2**64 - 1)).dtype == aj.uint64
    assert aj.asarray(np.array([200], dtype=np.uint8)).__add__(100).tolist() == [44]
    with pytest.raises(aj.UserError, match="does not fit the dtype u8"):
        aj.asarray(np.array([200], dtype=np.uint8)) + 300
    with pytest.raises(OverflowError):
        a + 2**64
    with pytest.raises(aj.UserError, match="promote to f64"):
        aj.bitwise_and(aj.zeros(2, dtype=aj.int64), aj.zeros(2, dtype=aj.uint64))


def test_dtype_names():
    assert aj.dtype("u2") is aj.uint16 and aj.dtype("<i4") is aj.int32 and aj.dtype("B") is aj.uint8
    assert aj.dtype(np.int16) is aj.int16 and aj.dtype("u64") is aj.uint64 and aj.uint8 == np.uint8
    with pytest.raises(TypeError, match="no dtype 'c8'"):
        aj.dtype("c8")


def test_indices_of_every_integer_dtype():
    x = np.arange(24.0).reshape(4, 6)
    a = aj.asarray(x)
    for name in ["uint8", "int8", "int16", "uint16", "uint32", "uint64"]:
        i, j = np.array([3, 0, 3], dtype=name), np.array([5, 1, 0], dtype=name)
        np.testing.assert_array_equal(a[aj.asarray(i)].numpy(), x[i])
        np.testing.assert_array_equal(a[aj.asarray(i), aj.asarray(j)].numpy(), x[i, j])
        np.testing.assert_array_equal(a[:, aj.asarray(j)].numpy(), x[:, j])
        np.testing.assert_array_equal(aj.bincount(aj.asarray(i)).numpy(), np.bincount(i.astype(np.int64)))  # (NumPy refuses u64 there)
        want = x.copy()
        np.add.at(want, i, 1.0)
        np.testing.assert_array_equal(a.at[aj.asarray(i)].add(1.0).numpy(), want)
