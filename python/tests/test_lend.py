"""Memory lent for writing: aj.lend over NumPy arrays and torch tensors, and
arrayjit.torch's SGD and Adam updating torch's weights and state in place."""
import copy
import warnings

import numpy as np
import pytest

import arrayjit as aj


def test_a_donated_lent_numpy_array_is_updated_in_place():
    rng = np.random.default_rng(3)
    w = rng.standard_normal(1000).astype(np.float32)
    want = w.copy()
    step = aj.compile(lambda w, g, lr: w - lr * g, donate_argnums=0)
    for t in range(4):
        g = rng.standard_normal(1000).astype(np.float32)
        lr = 0.1 * (t + 1)
        want = want - np.float32(lr) * g
        before = aj.stats()["system_allocs"]
        out = step(aj.lend(w), aj.asarray(g), lr)
        assert np.from_dlpack(out).ctypes.data == w.ctypes.data  # the result is w's memory, from the first call
        del out
        np.testing.assert_array_equal(w, want)
        if t >= 2:
            assert aj.stats()["system_allocs"] == before


def test_lend_reads_like_a_borrow_and_refuses_what_it_cannot_write():
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    a = aj.lend(x)
    assert a.dtype == aj.int16 and a.shape == (2, 3) and a.sum().item() == 15
    held = aj.exp(a)  # `a` is held: x is not written
    held.numpy()
    np.testing.assert_array_equal(x, np.arange(6).reshape(2, 3))
    del a, held
    with pytest.raises(ValueError, match="read-only"):
        r = np.zeros(3)
        r.flags.writeable = False
        aj.lend(r)
    with pytest.raises(ValueError, match="not C-contiguous"):
        aj.lend(np.zeros((3, 4))[:, ::2])
    with pytest.raises(TypeError):
        aj.lend([1.0, 2.0])


torch = pytest.importorskip("torch")
ajt = pytest.importorskip("arrayjit.torch")

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
]


@pytest.mark.parametrize("name,kwargs", CASES)
def test_optimizers_match_torch_and_write_in_place(name, kwargs):
    torch.manual_seed(0)
    ours = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    theirs = copy.deepcopy(ours)
    opt_ours = getattr(ajt, name)(ours.parameters(), **kwargs)
    opt_theirs = getattr(torch.optim, name)(theirs.parameters(), **kwargs)
    where = [p.data_ptr() for p in ours.parameters()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not written in place" copy
        for step in range(15):
            x, y = torch.randn(32, 8), torch.randn(32, 4)
            for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
                opt.zero_grad()
                ((model(x) - y) ** 2).mean().backward()
                before = aj.stats()["system_allocs"]
                opt.step()
                if opt is opt_ours and step >= 3:
                    assert aj.stats()["system_allocs"] == before  # no allocation once warm
            for a, b in zip(ours.parameters(), theirs.parameters()):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert [p.data_ptr() for p in ours.parameters()] == where  # the weights' own memory
    for a, b in zip(ours.parameters(), theirs.parameters()):
        for key, value in opt_theirs.state[b].items():
            if torch.is_tensor(value) and value.ndim > 0:
                torch.testing.assert_close(opt_ours.state[a][key], value, rtol=1e-5, atol=1e-6)
