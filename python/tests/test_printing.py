"""str and repr equal NumPy's, for random arrays of every NumPy dtype."""
import numpy as np

import arrayjit as aj


def cases(rng):
    yield rng.standard_normal((3, 4))
    yield rng.standard_normal((2, 3)).astype(np.float32) * 1e5
    yield rng.standard_normal(7).astype(np.float16)
    yield rng.integers(-1000, 1000, (4, 3))
    yield rng.integers(-5, 5, (2, 2, 3)).astype(np.int32)
    yield rng.standard_normal(5) > 0
    yield np.array(2.5)
    yield np.array(True)
    yield np.array(7, dtype=np.int32)
    yield np.zeros((0, 3), np.float32)
    yield np.zeros(0)
    yield np.zeros((2, 0), np.int64)
    yield rng.standard_normal(2000)
    yield rng.standard_normal((40, 40)) * 1e-6
    yield np.array([np.nan, np.inf, -np.inf, 1.5])
    yield np.arange(30.0).reshape(5, 6) / 7


def test_str_and_repr_equal_numpy(rng):
    for a in cases(rng):
        x = aj.asarray(a)
        assert str(x) == str(a), (str(x), str(a))
        assert repr(x) == repr(a), (repr(x), repr(a))


def test_printoptions_as_numpy(rng):
    a = rng.standard_normal((3, 3))
    x = aj.asarray(a)
    with aj.printoptions(precision=3, suppress=True), np.printoptions(precision=3, suppress=True):
        assert str(x) == str(a) and repr(x) == repr(a)
    assert aj.get_printoptions()["precision"] == 8
    with aj.printoptions(threshold=5, edgeitems=1), np.printoptions(threshold=5, edgeitems=1):
        assert str(x) == str(a)
    with aj.printoptions(linewidth=30), np.printoptions(linewidth=30):
        assert repr(x) == repr(a)
