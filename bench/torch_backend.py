"""arrayjit.torch against torch eager and AOTAutograd's own compiler
(functorch.compile.ts_compile, TorchScript) in the same run: the time of a
training step (forward, backward, SGD) of the MLPs and the transformer block
on 1 and 2 threads, the backend's host cost per graph call (a model too small
to compute anything), and the first step with a cold kernel cache.

    ./dev python bench/torch_backend.py [--steps N] [--repeats R]

Medians of R runs of N steps each; the machine line (CPU, ISA, BLAS kernel)
comes first. Targets (issue 36): arrayjit <= 1.0x eager for the MLPs and the
block; host cost <= 50 us per graph call; cold first step <= 2x eager's.
"""
import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
import warnings

import torch

import arrayjit as aj
import arrayjit.torch as ajt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python", "tests"))
from torch_models import MLP, MODELS, batch  # noqa: E402

warnings.filterwarnings("ignore", message=".*boxed arguments.*")


def make(kind, model):
    if kind == "eager":
        return model
    from functorch.compile import aot_module, ts_compile
    if kind == "aot_ts":
        return aot_module(model, fw_compiler=ts_compile, bw_compiler=ts_compile)
    return ajt.compile(model)


def time_steps(name, kind, steps, repeats, threads):
    torch.set_num_threads(threads)
    aj.set_num_threads(threads)
    torch.manual_seed(0)
    model = MODELS[name]()
    f = make(kind, model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [batch(name, i) for i in range(4)]

    def step(args):
        opt.zero_grad(set_to_none=True)
        f(*args).backward()
        opt.step()

    for i in range(5):  # warm-up: traces, plans, compiles
        step(data[i % 4])
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(steps):
            step(data[i % 4])
        runs.append((time.perf_counter() - t0) / steps)
    return statistics.median(runs)


def host_cost(steps, repeats):
    """Per graph call of a model with 8 numbers per layer: the backend's own
    cost (tensors in, the replay's call, tensors out) dominates."""
    torch.set_num_threads(1)
    aj.set_num_threads(1)
    torch.manual_seed(0)
    tiny = MLP(d_in=8, d_hidden=8, d_out=2)
    cm = ajt.compile(tiny)
    x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
    eager = copy.deepcopy(tiny)
    for _ in range(5):
        cm(x, y).backward()
    times, eager_times = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            cm(x, y).backward()
        times.append((time.perf_counter() - t0) / steps / 2)  # two graphs per step
        t0 = time.perf_counter()
        for _ in range(steps):
            eager(x, y).backward()
        eager_times.append((time.perf_counter() - t0) / steps / 2)
    return statistics.median(times), statistics.median(eager_times)


def cold_first_step(name):
    """The first step with an empty kernel cache (memory and disk), against
    eager's first step, both in this process."""
    torch.manual_seed(0)
    m = MODELS[name]()
    args = batch(name, 0)
    t0 = time.perf_counter()
    m(*args).backward()
    eager = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        old = aj.cache_dir()
        aj.set_cache_dir(d)
        aj.clear_kernel_memory_cache()
        try:
            cm = ajt.compile(copy.deepcopy(m))
            t0 = time.perf_counter()
            cm(*args).backward()
            ours = time.perf_counter() - t0
        finally:
            aj.set_cache_dir(old)
    return ours, eager


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print("machine:", " | ".join(aj.host_info().strip().splitlines()))
    print("torch", torch.__version__, "| arrayjit", aj.version())
    print("\nper training step (forward + backward + SGD), median of %d runs of %d steps:" % (args.repeats, args.steps))
    print("%-12s %7s %12s %12s %12s %9s %9s" % ("model", "threads", "eager ms", "aot_ts ms", "arrayjit ms",
                                              "aj/eager", "aj/aot_ts"))
    for name in ("mlp", "mlp_ln_gelu", "block"):
        for threads in (1, 2):
            t = {k: time_steps(name, k, args.steps, args.repeats, threads) for k in ("eager", "aot_ts", "arrayjit")}
            print("%-12s %7d %12.3f %12.3f %12.3f %9.2f %9.2f" % (
                name, threads, 1e3 * t["eager"], 1e3 * t["aot_ts"], 1e3 * t["arrayjit"],
                t["arrayjit"] / t["eager"], t["arrayjit"] / t["aot_ts"]))
    ours, eager = host_cost(args.steps * 10, args.repeats)
    print("\nhost cost per graph call (a model of 8 numbers per layer): arrayjit %.1f us, eager %.1f us "
          "(target <= 50 us)" % (1e6 * ours, 1e6 * eager))
    for name in ("mlp", "block"):
        ours, eager = cold_first_step(name)
        print("first step, cold kernel cache, %s: arrayjit %.3f s, eager %.3f s: %.1fx (target <= 2x)"
              % (name, ours, eager, ours / eager))


if __name__ == "__main__":
    main()
