"""explain, stats, files, host callbacks, linalg, random, nn through Python."""

import numpy as np
import pytest

import arrayjit as aj


def test_explain_names_the_python_line_and_fuses(rng):
    x = aj.asarray(rng.standard_normal(100).astype(np.float32))
    y = aj.tanh(x) * 2 + 1
    text = aj.explain(y)
    assert "plan: 1 steps, 1 kernels" in text and "tanh" in text
    assert "test_facilities.py" in text  # the held input x is named by the line that made it
    assert "%" in aj.dump(y)
    assert "digraph" in aj.to_dot(y) and "define" in aj.kernel_ir(y)
    assert "__global__" in aj.cuda_kernel_source(y)


def test_stats_count_plans_and_allocations(rng):
    x = aj.asarray(rng.standard_normal(1000))
    aj.reset_stats()
    for _ in range(3):
        (x * 2 + 1).eval()
    s = aj.stats()
    assert s["evals"] == 3 and s["kernels_launched"] == 3 and s["plans_built"] == 1 and s["plan_cache_hits"] == 2


def test_switches_round_trip():
    n = aj.num_threads()
    aj.set_num_threads(1)
    assert aj.num_threads() == 1
    aj.set_num_threads(n)
    with pytest.raises(aj.UserError, match="negative|thread"):
        aj.set_num_threads(-1)
    aj.set_jit_enabled(False)
    try:
        np.testing.assert_allclose(aj.exp(aj.asarray([0.0, 1.0])), np.exp([0.0, 1.0]))
    finally:
        aj.set_jit_enabled(True)
    tiers = aj.jit_tiers()
    aj.set_jit_tiers("quick")
    try:
        assert aj.jit_tiers() == "quick"
        np.testing.assert_allclose(aj.sin(aj.asarray([0.5, 1.0])), np.sin([0.5, 1.0]), rtol=1e-15)
        with pytest.raises(ValueError, match="auto"):
            aj.set_jit_tiers("fast")
    finally:
        aj.set_jit_tiers(tiers)
    # A small kernel's 128th launch queues its full compile on the
    # background thread; finish_tier_ups waits for it.
    cache = aj.cache_dir()
    aj.set_cache_dir("")
    aj.clear_kernel_memory_cache()
    aj.set_jit_tiers("auto")
    try:
        x = aj.asarray(np.linspace(-1.0, 1.0, 1000))
        want = np.sinh(np.linspace(-1.0, 1.0, 1000) * 0.3) + np.linspace(-1.0, 1.0, 1000)
        before = aj.stats()["kernels_tiered_up"]
        for _ in range(128):
            np.testing.assert_allclose(aj.sinh(x * 0.3) + x, want, rtol=1e-14)
        aj.finish_tier_ups()
        assert aj.stats()["kernels_tiered_up"] == before + 1
        np.testing.assert_allclose(aj.sinh(x * 0.3) + x, want, rtol=1e-14)
    finally:
        aj.set_jit_tiers(tiers)
        aj.set_cache_dir(cache)
    limit = aj.memory_limit()
    aj.set_memory_limit(1 << 20)
    assert aj.memory_limit() == 1 << 20
    aj.set_memory_limit(limit)
    aj.trim_memory()
    assert aj.version() and aj.llvm_version().startswith("19") and "CPU" in aj.host_info()
    assert aj.cuda_available() in (True, False) and isinstance(aj.cuda_unavailable_reason(), str)


def test_files_round_trip(tmp_path, rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    p = tmp_path / "a.npy"
    aj.save(p, aj.asarray(a))
    np.testing.assert_array_equal(np.load(p), a)  # NumPy reads ours
    np.save(tmp_path / "b.npy", a * 2)
    np.testing.assert_array_equal(aj.load(tmp_path / "b.npy"), a * 2)  # we read NumPy's
    aj.savez(tmp_path / "c.npz", a, w=aj.asarray(a[0]))
    z = np.load(tmp_path / "c.npz")
    np.testing.assert_array_equal(z["arr_0"], a)
    back = aj.load(tmp_path / "c.npz")
    assert sorted(back) == ["arr_0", "w"]
    aj.save_safetensors(tmp_path / "d.safetensors", {"x": aj.asarray(a)}, {"step": 3})
    assert aj.safetensors_metadata(tmp_path / "d.safetensors") == {"step": "3"}
    np.testing.assert_array_equal(aj.load(tmp_path / "d.safetensors")["x"], a)
    with pytest.raises(aj.UserError, match="nothing_here"):
        aj.load(tmp_path / "nothing_here.npy")


def test_host_callback_runs_python_on_values(rng):
    a = rng.standard_normal(6)
    seen = []

    def cb(x, out):
        seen.append(x.copy())
        out[...] = np.sort(x) * 10

    x = aj.asarray(a)
    (r,) = aj.host_callback(cb, [(6,)], aj.float64, x + 1)
    assert not seen  # lazy
    np.testing.assert_allclose(r, np.sort(a + 1) * 10)
    np.testing.assert_allclose(seen[0], a + 1)
    f = aj.compile(lambda x: aj.host_callback(cb, [(6,)], aj.float64, x * 2)[0] + 1)
    for _ in range(3):
        np.testing.assert_allclose(f(x), np.sort(a * 2) * 10 + 1)
    assert len(seen) == 4  # once per evaluation, replays too

    def bad(x, out):
        raise KeyError("from the callback")

    (r,) = aj.host_callback(bad, [(6,)], aj.float64, x)
    with pytest.raises(KeyError, match="from the callback"):
        r.eval()


def test_linalg_matches_numpy(rng):
    a = rng.standard_normal((4, 4))
    spd = a @ a.T + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    np.testing.assert_allclose(aj.linalg.solve(spd, b), np.linalg.solve(spd, b), rtol=1e-10)
    np.testing.assert_allclose(aj.linalg.inv(spd), np.linalg.inv(spd), rtol=1e-10)
    np.testing.assert_allclose(aj.linalg.cholesky(spd), np.linalg.cholesky(spd), rtol=1e-10)
    np.testing.assert_allclose(aj.linalg.det(a), np.linalg.det(a), rtol=1e-10)
    np.testing.assert_allclose(aj.linalg.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    w, v = aj.linalg.eigh(spd)
    np.testing.assert_allclose(w, np.linalg.eigh(spd)[0], rtol=1e-10)
    q, r = aj.linalg.qr(a)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)
    sign, logdet = aj.linalg.slogdet(a)
    np.testing.assert_allclose(float(sign) * np.exp(float(logdet)), np.linalg.det(a), rtol=1e-10)
    np.testing.assert_allclose(aj.linalg.norm(a), np.linalg.norm(a))
    np.testing.assert_allclose(aj.linalg.norm(a, ord=1, axis=(0, 1)), np.linalg.norm(a, ord=1))
    np.testing.assert_allclose(aj.linalg.lstsq(a, b)[0], np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-9)
    with pytest.raises(aj.UserError):
        aj.linalg.inv(np.zeros((3, 3))).eval()  # singular: NumPy's LinAlgError


def test_random_is_seeded_and_distributed():
    aj.random.seed(7)
    a = np.asarray(aj.random.normal(size=(20000,)))
    aj.random.seed(7)
    b = np.asarray(aj.random.normal(size=(20000,)))
    np.testing.assert_array_equal(a, b)
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05
    u = np.asarray(aj.random.uniform(2, 3, size=1000, dtype=aj.float32))
    assert u.dtype == np.float32 and u.min() >= 2 and u.max() < 3
    r = np.asarray(aj.random.randint(0, 5, size=1000))
    assert set(r) == {0, 1, 2, 3, 4}
    assert sorted(np.asarray(aj.random.permutation(10))) == list(range(10))
    c = np.asarray(aj.random.choice(5, size=3, replace=False))
    assert len(set(c)) == 3


def test_nn_ops(rng):
    z = rng.standard_normal((3, 5))
    e = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(aj.softmax(z), e / e.sum(-1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(aj.nn.logsumexp(z, axis=1), np.log(np.exp(z).sum(1)), rtol=1e-12)
    x = rng.standard_normal((1, 2, 6, 6))
    w = rng.standard_normal((3, 2, 3, 3))
    y = aj.nn.conv(x, w, padding=1)
    assert y.shape == (1, 3, 6, 6)
    want = np.zeros((1, 3, 6, 6))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for o in range(3):
        for i in range(6):
            for j in range(6):
                want[0, o, i, j] = (xp[0, :, i:i + 3, j:j + 3] * w[o]).sum()
    np.testing.assert_allclose(y, want, rtol=1e-10)
    np.testing.assert_allclose(aj.nn.max_pool(x, (2, 2)), x.reshape(1, 2, 3, 2, 3, 2).max((3, 5)))
    np.testing.assert_allclose(aj.nn.gelu(aj.asarray([0.0, 1.0])), [0.0, 0.8413447460685429], rtol=1e-12)


def test_keyed_random_draws_new_numbers_in_every_replay():
    k = aj.random.key(5)
    a = np.asarray(aj.random.uniform(size=8, key=k))
    np.testing.assert_array_equal(a, np.asarray(aj.random.uniform(size=8, key=aj.random.key(5))))
    assert not np.array_equal(a, np.asarray(aj.random.uniform(size=8, key=aj.random.fold_in(k, 1))))
    ks = aj.random.split(k, 3)
    assert len(ks) == 3 and len({int(x) for x in ks}) == 3
    assert int(ks[1]) == int(aj.random.fold_in(k, 1))
    bits = np.asarray(aj.random.bits(k, 4))
    assert bits.dtype == np.int64 and len(set(bits.tolist())) == 4

    @aj.compile
    def noisy(x, key):
        return x + aj.random.normal(size=x.shape, dtype=aj.float32, key=key)

    x = aj.zeros(1000, aj.float32)
    aj.reset_stats()
    draws = [np.asarray(noisy(x, aj.random.key(step))) for step in range(4)]
    assert all(not np.array_equal(draws[0], d) for d in draws[1:])
    assert abs(draws[1].mean()) < 0.15 and abs(draws[1].std() - 1) < 0.1
    s = aj.stats()
    assert s["compiled_traces"] == 1 and s["compiled_replays"] == 3, s


def test_host_callback_with_a_vjp_under_grad(rng):
    a = rng.standard_normal(6)

    def cube(x, out):
        out[...] = x ** 3

    def cube_vjp(x, y, g, gx):
        gx[...] = 3 * x ** 2 * g

    def f(x):
        (y,) = aj.host_callback(cube, [x.shape], aj.float64, x, vjp=cube_vjp, name="cube")
        return aj.sum(y * 2)

    x = aj.asarray(a)
    np.testing.assert_allclose(f(x), 2 * np.sum(a ** 3))
    np.testing.assert_allclose(aj.grad(f)(x), 6 * a ** 2, rtol=1e-12)
    with pytest.raises(aj.UserError, match="cube"):  # no vjp given: differentiating it is an error naming it
        aj.grad(lambda x: aj.sum(aj.host_callback(cube, [x.shape], aj.float64, x, name="cube")[0]))(x)
