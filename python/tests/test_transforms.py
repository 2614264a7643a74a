"""grad, value_and_grad, vjp, jvp and compile over Python functions."""
import numpy as np
import pytest

import arrayjit as aj


def numeric_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[i] = eps
        g[i] = (f(a + d) - f(a - d)) / (2 * eps)
    return g


def test_grad_matches_the_analytic_gradient(rng):
    w0 = rng.standard_normal((4, 3))
    x0 = rng.standard_normal((5, 4))

    def loss(w, x):
        return aj.sum(aj.tanh(x @ w) ** 2)

    g = aj.grad(loss)(aj.asarray(w0), aj.asarray(x0))
    t = np.tanh(x0 @ w0)
    np.testing.assert_allclose(g, x0.T @ (2 * t * (1 - t ** 2)), rtol=1e-10)
    gw, gx = aj.grad(loss, argnums=(0, 1))(aj.asarray(w0), aj.asarray(x0))
    np.testing.assert_allclose(gx, (2 * t * (1 - t ** 2)) @ w0.T, rtol=1e-10)


def test_grad_of_a_tree_of_parameters_and_aux(rng):
    params = {"w": aj.asarray(rng.standard_normal((3, 2))), "b": aj.asarray(rng.standard_normal(2))}
    x = aj.asarray(rng.standard_normal((6, 3)))
    labels = aj.asarray(rng.integers(0, 2, 6))

    def loss(p, x, labels):
        logits = x @ p["w"] + p["b"]
        logp = aj.log_softmax(logits, axis=-1)
        nll = -aj.mean(aj.take_along_axis(logp, labels[:, None], 1))
        return nll, {"logits": logits}

    (value, aux), g = aj.value_and_grad(loss, has_aux=True)(params, x, labels)
    assert set(g) == {"w", "b"} and g["w"].shape == (3, 2) and aux["logits"].shape == (6, 2)

    def np_loss(w, b):
        z = np.asarray(x) @ w + b
        lp = z - np.log(np.exp(z).sum(-1, keepdims=True))
        return -lp[np.arange(6), np.asarray(labels)].mean()

    w0, b0 = np.asarray(params["w"]), np.asarray(params["b"])
    assert abs(float(value) - np_loss(w0, b0)) < 1e-12
    np.testing.assert_allclose(g["w"], numeric_grad(lambda w: np_loss(w, b0), w0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g["b"], numeric_grad(lambda b: np_loss(w0, b), b0), rtol=1e-6, atol=1e-9)


def test_vjp_and_jvp(rng):
    a = rng.standard_normal((3, 3))
    f = lambda x: (aj.sin(x) * x, aj.sum(x, axis=0))  # noqa: E731
    out, vjp_fn = aj.vjp(f, aj.asarray(a))
    np.testing.assert_allclose(out[0], np.sin(a) * a)
    ct0, ct1 = rng.standard_normal((3, 3)), rng.standard_normal(3)
    (g,) = vjp_fn((aj.asarray(ct0), aj.asarray(ct1)))
    np.testing.assert_allclose(g, ct0 * (np.cos(a) * a + np.sin(a)) + ct1[None, :], rtol=1e-12)
    t = rng.standard_normal((3, 3))
    (y0, y1), (t0, t1) = aj.jvp(f, (aj.asarray(a),), (aj.asarray(t),))
    np.testing.assert_allclose(t0, t * (np.cos(a) * a + np.sin(a)), rtol=1e-12)
    np.testing.assert_allclose(t1, t.sum(0), rtol=1e-12)


def test_grad_of_grad(rng):
    x0 = rng.standard_normal(4)
    d2 = aj.grad(lambda x: aj.sum(aj.grad(lambda y: aj.sum(aj.sin(y) * y))(x)))(aj.asarray(x0))
    np.testing.assert_allclose(d2, 2 * np.cos(x0) - x0 * np.sin(x0), rtol=1e-12)


def test_grad_needs_a_scalar_and_names_the_line():
    with pytest.raises(TypeError, match="scalar result"):
        aj.grad(lambda x: x * 2)(aj.ones(3))


def test_compile_traces_once_and_replays(rng):
    calls = []

    @aj.compile
    def step(w, x, lr):
        calls.append(1)
        loss, g = aj.value_and_grad(lambda w: aj.mean((x @ w) ** 2))(w)
        return w - lr * g, loss

    w = aj.asarray(rng.standard_normal((4, 1)))
    xs = [rng.standard_normal((8, 4)) for _ in range(5)]
    w_np = np.asarray(w).copy()
    aj.reset_stats()
    for i, x in enumerate(xs):
        w, loss = step(w, aj.asarray(x), 0.1 / (i + 1))
        grad = 2 * x.T @ (x @ w_np) / 8
        assert abs(float(loss) - np.mean((x @ w_np) ** 2)) < 1e-12
        w_np = w_np - 0.1 / (i + 1) * grad
        np.testing.assert_allclose(w, w_np, rtol=1e-12)
    s = aj.stats()
    # The first new value of the weak scalar lr traces once more (arrayjit
    # checks that lr reaches the kernels as it is, so it can be rebound);
    # every later call replays without calling the Python function.
    assert s["compiled_traces"] == 2 and s["compiled_replays"] == 3, s
    assert len(calls) == 3  # the structure probe and the two traces


def test_compile_donation_and_static_arguments(rng):
    def update(w, g, scale):
        return w * scale + g

    f = aj.compile(update, donate_argnums=0, static_argnums=2)
    a, b = rng.standard_normal(1000), rng.standard_normal(1000)
    w = aj.asarray(a)
    out = f(w, aj.asarray(b), 2.0)
    np.testing.assert_allclose(out, 2 * a + b)
    with pytest.raises(aj.HandleError, match="donated"):
        w + 1  # consumed by the call
    out2 = f(out, aj.asarray(b), 3.0)  # a new static value: a new trace
    np.testing.assert_allclose(out2, 3 * (2 * a + b) + b)


def test_exceptions_in_traced_functions_come_out_as_they_were():
    class Boom(Exception):
        pass

    def f(x):
        raise Boom("inside")

    with pytest.raises(Boom, match="inside"):
        aj.grad(lambda x: aj.sum(f(x)))(aj.ones(2))
    g = aj.compile(lambda x: x + 1 if x.shape[0] < 3 else f(x))
    np.testing.assert_array_equal(g(aj.ones(2)), [2, 2])
    with pytest.raises(Boom):
        g(aj.ones(4))


def test_values_leaked_from_a_trace_raise_handle_error():
    kept = []

    def f(x):
        y = x * 2
        kept.append(y)
        return y

    aj.compile(f)(aj.ones(2))
    with pytest.raises(aj.HandleError, match="traced function"):
        kept[-1] + 1
    kept.clear()


def test_user_errors_name_the_python_line():
    try:
        aj.ones((2, 3)) @ aj.ones((2, 3))
    except aj.UserError as e:
        assert "test_transforms.py:" in str(e) and "matmul" in str(e)
        assert isinstance(e, ValueError)
    else:
        raise AssertionError("no error")


def test_custom_vjp_custom_jvp_and_checkpoint(rng):
    a = rng.standard_normal(5)

    def f(x):
        return aj.sin(x) * 2

    calls = []

    def fwd(x):
        return f(x), (aj.cos(x),)

    def bwd(res, g):
        calls.append(1)
        (c,) = res
        return (g * c * 2 * 10,)  # ten times the true derivative: the rule is what grad uses

    g = aj.custom_vjp(f, fwd, bwd)
    x = aj.asarray(a)
    np.testing.assert_allclose(g(x), 2 * np.sin(a), rtol=1e-12)
    d = aj.grad(lambda x: aj.sum(g(x)))(x)
    np.testing.assert_allclose(d, 20 * np.cos(a), rtol=1e-12)
    assert calls

    h = aj.custom_jvp(f, lambda p, t: 3 * t[0])  # a made-up rule: d = 3
    _, tan = aj.jvp(h, (x,), (aj.ones(5),))
    np.testing.assert_allclose(tan, 3 * np.ones(5))
    np.testing.assert_allclose(aj.grad(lambda x: aj.sum(h(x)))(x), 3 * np.ones(5))  # the rule transposed

    c = aj.checkpoint(lambda x: aj.exp(aj.sin(x)) * x)
    np.testing.assert_allclose(aj.grad(lambda x: aj.sum(c(x)))(x),
                               np.exp(np.sin(a)) * (np.cos(a) * a + 1), rtol=1e-12)

    bad = aj.custom_vjp(f, fwd, lambda res, g: (g, g))
    with pytest.raises(ValueError, match="one per argument"):
        aj.grad(lambda x: aj.sum(bad(x)))(x)


def test_the_first_call_of_a_compiled_function_writes_a_donated_array_in_place():
    # (flatten's recursive closure was a reference cycle that kept the probe
    # call's results alive, reading the arguments, until the cycle collector ran)
    x = aj.asarray(np.arange(1000, dtype=np.float32))
    where = np.from_dlpack(x).ctypes.data
    f = aj.compile(lambda x, g: [x - 0.5 * g], donate_argnums=0)
    out = f(x, aj.ones(1000, dtype=aj.float32))[0]
    assert np.from_dlpack(out).ctypes.data == where
    np.testing.assert_array_equal(out.numpy(), np.arange(1000, dtype=np.float32) - 0.5)
