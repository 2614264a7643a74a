"""x[key] and x.at[key] against NumPy, random keys."""
import numpy as np
import pytest

import arrayjit as aj


def random_basic_key(rng, shape):
    key = []
    for extent in shape:
        r = rng.integers(0, 4)
        if r == 0:
            key.append(int(rng.integers(-extent, extent)))
        elif r == 1:
            lo, hi = sorted(rng.integers(-extent - 2, extent + 3, 2))
            step = int(rng.choice([1, 2, 3, -1, -2]))
            key.append(slice(int(lo), int(hi), step) if step > 0 else slice(int(hi), int(lo), step))
        elif r == 2:
            key.append(slice(None))
        else:
            key.append(slice(None, None, -1))
    if rng.integers(0, 3) == 0:
        key.insert(int(rng.integers(0, len(key) + 1)), None)
    if rng.integers(0, 3) == 0 and len(key) > 1:  # an ellipsis for a run of whole axes
        i = int(rng.integers(0, len(key)))
        key = key[:i] + [Ellipsis] + [k for k in key[i:] if k is not None and k != slice(None)][:0] + key[i + 1:]
    return tuple(key)


def test_basic_indexing_matches_numpy(rng):
    for trial in range(200):
        shape = tuple(int(s) for s in rng.integers(1, 6, rng.integers(1, 4)))
        a = rng.standard_normal(shape)
        key = random_basic_key(rng, shape)
        want = a[key]
        got = aj.asarray(a)[key]
        assert got.shape == want.shape, (shape, key)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str((shape, key)))


def test_integer_array_and_mask_indexing(rng):
    a = rng.standard_normal((5, 4, 3))
    x = aj.asarray(a)
    idx = np.array([[0, 4], [-1, 2]])
    np.testing.assert_array_equal(x[idx], a[idx])
    np.testing.assert_array_equal(x[:, [3, 0]], a[:, [3, 0]])
    np.testing.assert_array_equal(x[1, :, aj.asarray([2, 0])], a[1, :, [2, 0]])
    np.testing.assert_array_equal(x[[0, 4, 1], [1, 2, 3]], a[[0, 4, 1], [1, 2, 3]])
    np.testing.assert_array_equal(x[:, [0, -1], [2, 1]], a[:, [0, -1], [2, 1]])
    np.testing.assert_array_equal(x[[1, 2], :, 0], a[[1, 2], :, 0])  # apart: the index axes go first
    np.testing.assert_array_equal(x[0, [1, 2]], a[0, [1, 2]])  # adjacent: in place
    np.testing.assert_array_equal(x[1:4, [[0], [3]], ::-1], a[1:4, [[0], [3]], ::-1])
    m = a > 0
    np.testing.assert_array_equal(x[x > 0], a[m])
    np.testing.assert_array_equal(x[:, m[0, :, 0]], a[:, m[0, :, 0]])
    np.testing.assert_array_equal(x[m[:, :, 0]], a[m[:, :, 0]])


def test_index_errors_are_numpy_s():
    x = aj.zeros((3, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="integer or boolean"):
        x[aj.asarray([0.5])]
    with pytest.raises(IndexError, match="valid indices"):
        x["a"]


def test_at_set_and_add_match_numpy(rng):
    a = rng.standard_normal((4, 5))
    x = aj.asarray(a)
    for key, v in [((1,), 7.0), ((slice(1, 3), slice(None, None, 2)), rng.standard_normal((2, 3))),
                   ((-1, slice(None)), rng.standard_normal(5)), ((slice(None), 2), 1.5),
                   ((slice(None, None, -1), 0), rng.standard_normal(4))]:
        want = a.copy()
        want[key] = v
        np.testing.assert_array_equal(x.at[key].set(v), want)
        want = a.copy()
        want[key] += v
        np.testing.assert_allclose(x.at[key].add(v), want)
    idx = np.array([3, 0, 3])
    want = a.copy()
    np.add.at(want, idx, 1.0)
    np.testing.assert_allclose(x.at[idx].add(1.0), want)
    want = a.copy()
    want[[2, 0]] = -1
    np.testing.assert_array_equal(x.at[aj.asarray([2, 0])].set(-1.0), want)
    m = a > 0.3
    want = a.copy()
    want[m] = 0
    np.testing.assert_array_equal(x.at[x > 0.3].set(0.0), want)
    np.testing.assert_array_equal(x, a)  # x itself never changes
    np.testing.assert_array_equal(x.at[1:3].get(), a[1:3])
