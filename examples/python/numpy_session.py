"""A NumPy-style session with arrayjit, as a user at a Python prompt would
type it: arrays, printing, indexing, a fit by gradient descent, the plan.

    ./dev python examples/python/numpy_session.py
"""
import numpy as np

import arrayjit as aj

aj.random.seed(0)

# Arrays print as NumPy's do.
x = aj.linspace(0, 2 * aj.pi, 8)          # float64, as NumPy's
print("x =", x)
y = aj.sin(x) ** 2 + aj.cos(x) ** 2        # lazy: nothing ran yet
print("sin^2 + cos^2 =", y)               # one fused kernel, evaluated to print
print(repr(y[::3]))

# Indexing and reductions, NumPy's rules.
m = aj.arange(12.0).reshape(3, 4)
print("m[1] =", m[1], " m[:, ::2].sum(axis=0) =", m[:, ::2].sum(axis=0))
print("m[m > 6] =", m[m > 6], " m[[0, 2], 1] =", m[[0, 2], 1])
m2 = m.at[0, :].set(-1.0)                 # functional update: m is unchanged
print("m2 =\n", m2, "\nm =\n", m, sep="")

# NumPy and arrayjit share memory through DLPack.
n = np.from_dlpack(m2)
print("numpy sees", type(n).__name__, n.dtype, n.shape, "sum", n.sum())

# Least squares two ways: the normal equations, and gradient descent on a
# compiled step (traced once, replayed after).
A = aj.random.normal(size=(200, 3))
w_true = aj.asarray([1.5, -2.0, 0.5])
b = A @ w_true + 0.01 * aj.random.normal(size=200)
w_exact = aj.linalg.solve(A.T @ A, A.T @ b)
print("solve:   ", w_exact)

def loss(w):
    r = A @ w - b
    return aj.mean(r * r)

step = aj.compile(lambda w, lr: w - lr * aj.grad(loss)(w))
w = aj.zeros(3)
for i in range(300):
    w = step(w, 0.1)
print("descent: ", w, " loss", float(loss(w)))
assert aj.allclose(w, w_exact, atol=1e-3)
s = aj.stats()
print("compiled: %d traces, %d replays" % (s["compiled_traces"], s["compiled_replays"]))

# What a step runs: the plan, naming the lines that made its values.
print(aj.explain(aj.tanh(A @ w) * 2 + 1))
