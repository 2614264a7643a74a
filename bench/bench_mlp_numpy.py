"""The MLP training step of bench/bench_mlp.cpp in NumPy (run by it as a child
process, threads set through OPENBLAS_NUM_THREADS).

    python3 bench_mlp_numpy.py DIR WARM RUNS STEPS

Reads X, Y, W1, W2 (raw f32) from DIR, prints the losses of the first five
steps from the initial weights ("loss L"), then the median over RUNS of the
mean wall time of STEPS steps after WARM warm-up steps ("ms_per_step T").
"""
import sys
import time

import numpy as np

B, D, H, C = 256, 784, 256, 10
LR, BETA1, BETA2, EPS = np.float32(1e-3), np.float32(0.9), np.float32(0.999), np.float32(1e-8)


def load(d):
    X = np.fromfile(d + "/X.f32", np.float32).reshape(B, D)
    Y = np.fromfile(d + "/Y.f32", np.float32).reshape(B, C)
    W1 = np.fromfile(d + "/W1.f32", np.float32).reshape(D, H)
    W2 = np.fromfile(d + "/W2.f32", np.float32).reshape(H, C)
    return X, Y, W1, W2


class Model:
    def __init__(self, X, Y, W1, W2):
        self.X, self.Y = X, Y
        self.p = [W1.copy(), np.zeros(H, np.float32), W2.copy(), np.zeros(C, np.float32)]
        self.m = [np.zeros_like(q) for q in self.p]
        self.v = [np.zeros_like(q) for q in self.p]
        self.t = 0

    def step(self):
        X, Y = self.X, self.Y
        W1, b1, W2, b2 = self.p
        hpre = X @ W1 + b1
        h = np.maximum(hpre, 0)
        z = h @ W2 + b2
        mx = z.max(axis=1, keepdims=True)
        e = np.exp(z - mx)
        s = e.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(s[:, 0]) + mx[:, 0] - (Y * z).sum(axis=1))
        dz = (e / s - Y) / np.float32(B)
        dW2 = h.T @ dz
        db2 = dz.sum(axis=0)
        dh = (dz @ W2.T) * (hpre > 0)
        dW1 = X.T @ dh
        db1 = dh.sum(axis=0)
        self.t += 1
        c1 = np.float32(1 - BETA1 ** self.t)
        c2 = np.float32(1 - BETA2 ** self.t)
        for i, g in enumerate((dW1, db1, dW2, db2)):
            self.m[i] = BETA1 * self.m[i] + (1 - BETA1) * g
            self.v[i] = BETA2 * self.v[i] + (1 - BETA2) * g * g
            self.p[i] = self.p[i] - LR * (self.m[i] / c1) / (np.sqrt(self.v[i] / c2) + EPS)
        return float(loss)


def main():
    d, warm, runs, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    data = load(d)
    check = Model(*data)
    for _ in range(5):
        print("loss", check.step())
    m = Model(*data)
    for _ in range(warm):
        m.step()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(steps):
            m.step()
        times.append((time.perf_counter() - t0) * 1000 / steps)
    times.sort()
    print("ms_per_step", times[len(times) // 2])


if __name__ == "__main__":
    main()
