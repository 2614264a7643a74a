#!/usr/bin/env python3
"""The torch peers of bench/bench_cuda.cpp: the same four cases, torch eager
and torch.compile, medians of CUDA-event timings, bandwidth as a share of a
device-to-device copy measured in the same run.

    python3 bench/bench_cuda_torch.py [scale]
"""
import statistics
import sys
import time

import torch

WARMUP, REPS = 3, 15


def time_ms(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for i in range(WARMUP + REPS):
        start.record()
        fn()
        end.record()
        end.synchronize()
        if i >= WARMUP:
            out.append(start.elapsed_time(end))
    return statistics.median(out)


def report(name, ms, nbytes, copy_gbs):
    gbs = nbytes / ms / 1e6
    print(f"{name:<22} {ms:10.3f} ms {gbs:9.1f} GB/s  {100 * gbs / copy_gbs:5.1f}% of copy")


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    dev = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()} (scale 1/{scale})")
    big = (256 << 20) // scale
    src = torch.rand(big, device=dev) * 2 - 1
    dst = torch.empty_like(src)
    copy_ms = time_ms(lambda: dst.copy_(src))
    copy_gbs = 2 * big * 4 / copy_ms / 1e6
    print(f"{'copy':<22} {copy_ms:10.3f} ms {copy_gbs:9.1f} GB/s")

    n = 16384 // (4 if scale > 1 else 1)
    x = torch.rand(n, n, device=dev)

    def seed(x):
        a = x + 2
        return (a.sum(1) * 3) + 0

    def chain(x):
        return torch.exp(-x * x / 2) * torch.sin(3 * x) + 0.5 * torch.cos(x)

    def adam(p, m, v, g, lr):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - lr * m / (torch.sqrt(v) + 1e-8)
        return p, m, v

    def dispatch(x):
        for _ in range(5):
            x = x * 1.0001 + 0.5
        return x

    na = 100_000_000 // scale
    p, m, v, g = (torch.rand(na, device=dev) for _ in range(4))
    small = torch.rand(1000, device=dev)
    for label, wrap in (("eager", lambda f: f), ("compile", torch.compile)):
        fs, fc, fa, fd = wrap(seed), wrap(chain), wrap(adam), wrap(dispatch)
        report(f"seed ({label})", time_ms(lambda: fs(x)), 4.0 * n * n + 4.0 * n, copy_gbs)
        state = [p, m, v]

        def step():
            state[:] = fa(*state, g, torch.tensor(1e-3, device=dev))

        report(f"adam ({label})", time_ms(step), 7.0 * 4 * na, copy_gbs)
        report(f"chain ({label})", time_ms(lambda: fc(src)), 2.0 * 4 * big, copy_gbs)
        for _ in range(100):
            fd(small)
        torch.cuda.synchronize()
        us = []
        for _ in range(REPS):
            t0 = time.perf_counter()
            for _ in range(1000):
                fd(small)
            us.append((time.perf_counter() - t0) * 1e3)  # ms per 1000 = us per call
        torch.cuda.synchronize()
        print(f"{'dispatch (' + label + ')':<22} {statistics.median(us):10.2f} us per call")


if __name__ == "__main__":
    main()
