"""DLPack with NumPy and PyTorch, both ways, zero-copy; NumPy conversion."""
import gc

import numpy as np
import pytest

import arrayjit as aj


def data_ptr_of(x):
    """The address of an arrayjit array's first element (a DLPack export's)."""
    from arrayjit._dlpack import _api, _Managed
    cap = x.__dlpack__()
    p = _api.PyCapsule_GetPointer(cap, b"dltensor")
    addr = _Managed.from_address(p).dl_tensor.data
    del cap  # unconsumed: its destructor gives the export back
    return addr


def test_numpy_takes_arrayjit_memory_without_a_copy(rng):
    x = aj.asarray(rng.standard_normal((3, 4))) * 2  # computed by arrayjit
    n = np.from_dlpack(x)
    assert n.ctypes.data == data_ptr_of(x)
    np.testing.assert_array_equal(n, np.asarray(x))
    del x
    gc.collect()
    assert n.sum() == n.sum()  # the export keeps the buffer


def test_arrayjit_takes_numpy_memory_without_a_copy(rng):
    base = rng.standard_normal((6, 5))
    view = base[1:5, ::2]
    x = aj.from_dlpack(view)
    assert data_ptr_of(x) == view.ctypes.data
    np.testing.assert_array_equal(x, view)
    np.testing.assert_allclose(aj.sum(x, axis=0), view.sum(0))


def test_versioned_capsules_are_read_only(rng):
    from arrayjit._dlpack import FLAG_READ_ONLY, _ManagedVersioned, _api
    x = aj.asarray(rng.standard_normal(4))
    cap = x.__dlpack__(max_version=(1, 1))
    p = _api.PyCapsule_GetPointer(cap, b"dltensor_versioned")
    m = _ManagedVersioned.from_address(p)
    assert m.major == 1 and m.flags & FLAG_READ_ONLY
    y = aj.from_dlpack(cap)  # a capsule is accepted as it is
    np.testing.assert_array_equal(y, x)
    with pytest.raises(BufferError, match="device"):
        x.__dlpack__(dl_device=(2, 0))


def test_unconsumed_capsules_give_their_export_back():
    import arrayjit as aj
    before = aj.stats()["live_bytes"]
    for _ in range(50):
        x = aj.ones(1 << 16) * 3.0
        cap = x.__dlpack__()
        del x, cap
    gc.collect()
    assert aj.stats()["live_bytes"] <= before + (1 << 20)


def test_torch_both_ways(rng):
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    x = aj.from_dlpack(t)
    assert data_ptr_of(x) == t.data_ptr()
    y = aj.exp(x) + 1
    u = torch.from_dlpack(y)
    assert u.data_ptr() == data_ptr_of(y)
    np.testing.assert_allclose(u.numpy(), np.exp(t.numpy()) + 1, rtol=1e-6)
    assert aj.from_dlpack(torch.tensor([1, 2], dtype=torch.int64)).dtype == aj.int64


def test_numpy_conversion_copies(rng):
    x = aj.asarray(rng.standard_normal(5).astype(np.float32))
    a = np.asarray(x)
    assert a.dtype == np.float32 and a.flags.writeable
    a[0] = 123.0  # a copy: arrayjit's array is unchanged
    assert float(x[0]) != 123.0
    assert np.array(x, dtype=np.float64).dtype == np.float64
    import pickle
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(x)), x)
