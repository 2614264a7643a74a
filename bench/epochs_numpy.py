"""The epochs loop of bench/epochs.cpp in NumPy (run by it as a child
process): minibatches sliced from one dataset (f32 features, i64 labels
made one-hot per batch), softmax cross-entropy, Adam, random batch sizes.

    python3 epochs_numpy.py N D H C EPOCHS LO HI

H = 0: logistic regression. Prints "us_per_batch T", the median over the
epochs after the first of each epoch's wall time per batch.
"""
import sys
import time

import numpy as np

LR, BETA1, BETA2, EPS = np.float32(1e-3), np.float32(0.9), np.float32(0.999), np.float32(1e-8)


def main():
    n, d, h, c, epochs, lo, hi = (int(a) for a in sys.argv[1:8])
    rng = np.random.default_rng(5)
    X = rng.standard_normal((n, d), dtype=np.float32)
    L = np.argmax(X @ rng.standard_normal((d, c), dtype=np.float32), axis=1).astype(np.int64)
    if h == 0:
        p = [rng.standard_normal((d, c), dtype=np.float32) / np.sqrt(d), np.zeros(c, np.float32)]
    else:
        p = [rng.standard_normal((d, h), dtype=np.float32) / np.sqrt(d), np.zeros(h, np.float32),
             rng.standard_normal((h, c), dtype=np.float32) / np.sqrt(h), np.zeros(c, np.float32)]
    m = [np.zeros_like(q) for q in p]
    v = [np.zeros_like(q) for q in p]
    classes = np.arange(c)
    t = 0
    per_batch = []
    for epoch in range(epochs):
        sizes = []
        at = 0
        while at < n:
            b = min(int(rng.integers(lo, hi + 1)), n - at)
            sizes.append(b)
            at += b
        t0 = time.perf_counter()
        at = 0
        for b in sizes:
            x, lab = X[at:at + b], L[at:at + b]
            at += b
            y = (lab[:, None] == classes).astype(np.float32)
            if h == 0:
                z = x @ p[0] + p[1]
            else:
                hpre = x @ p[0] + p[1]
                hid = np.maximum(hpre, 0)
                z = hid @ p[2] + p[3]
            mx = z.max(axis=1, keepdims=True)
            e = np.exp(z - mx)
            s = e.sum(axis=1, keepdims=True)
            _loss = np.mean(np.log(s[:, 0]) + mx[:, 0] - (y * z).sum(axis=1))
            dz = (e / s - y) / np.float32(b)
            if h == 0:
                grads = (x.T @ dz, dz.sum(axis=0))
            else:
                dh = (dz @ p[2].T) * (hpre > 0)
                grads = (x.T @ dh, dh.sum(axis=0), hid.T @ dz, dz.sum(axis=0))
            t += 1
            c1 = np.float32(1 - BETA1 ** t)
            c2 = np.float32(1 - BETA2 ** t)
            for i, g in enumerate(grads):
                m[i] = BETA1 * m[i] + (1 - BETA1) * g
                v[i] = BETA2 * v[i] + (1 - BETA2) * g * g
                p[i] = p[i] - LR * (m[i] / c1) / (np.sqrt(v[i] / c2) + EPS)
        if epoch > 0:
            per_batch.append((time.perf_counter() - t0) * 1e6 / len(sizes))
    per_batch.sort()
    print("us_per_batch", per_batch[len(per_batch) // 2])


if __name__ == "__main__":
    main()
