"""arrayjit.torch against torch eager and AOTAutograd's own compiler
(functorch.compile.ts_compile, TorchScript) in the same run: the time of a
training step (forward, backward, SGD) of the MLPs and the transformer block
on 1 and 2 threads, the backend's host cost per graph call (a model too small
to compute anything), and the first step with a cold kernel cache.

    ./dev python bench/torch_backend.py [--steps N] [--repeats R] [--optimizers]

Medians of R runs of N steps each; the machine line (CPU, ISA, BLAS kernel)
comes first; "replays ms" is the part of arrayjit's step spent in its
replays (the kept plans running), the rest is the crossing of tensors and
AOTAutograd's wrapper. Every timing follows a warm-up of 130 steps and
arrayjit.finish_tier_ups() (kernels run 128 times are compiled in full on a
background thread: the steady state). Targets (issue 36): arrayjit <= 1.0x eager for the MLPs and the
block; host cost <= 50 us per graph call; cold first step <= 2x eager's.
First (alone with --optimizers): opt.step() of arrayjit.torch's SGD and Adam
against torch.optim's, both updating the same tensors in place.
"""
import argparse
import contextlib
import os
import statistics
import sys
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


@contextlib.contextmanager
def replay_clock():
    """Times arrayjit's replays (the C calls aj_function_call and
    aj_function_call_donate the compiled functions make): yields [seconds]."""
    from arrayjit import _transforms
    lib = _transforms.lib
    spent = [0.0]
    originals = {n: getattr(lib, n) for n in ("aj_function_call", "aj_function_call_donate")}

    def timed(f):
        def call(*a):
            t0 = time.perf_counter()
            try:
                return f(*a)
            finally:
                spent[0] += time.perf_counter() - t0
        return call

    for n, f in originals.items():
        setattr(lib, n, timed(f))
    try:
        yield spent
    finally:
        for n, f in originals.items():
            setattr(lib, n, f)


def time_steps(name, kind, steps, repeats, threads):
    """The median time of a step, and for arrayjit the median time of its
    replays within it (0 for the others)."""
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

    for i in range(130):  # warm-up: traces, plans, compiles, 128 launches (the full tier queued)
        step(data[i % 4])
    aj.finish_tier_ups()  # the full code compiled in the background: the steady state
    runs, replays = [], []
    for _ in range(repeats):
        with replay_clock() as spent:
            t0 = time.perf_counter()
            for i in range(steps):
                step(data[i % 4])
            runs.append((time.perf_counter() - t0) / steps)
        replays.append(spent[0] / steps)
    return statistics.median(runs), statistics.median(replays)


def optimizer_step(name, which, kind, steps, repeats):
    """The median time of opt.step() alone (fixed gradients), torch.optim's
    optimizer or arrayjit.torch's, 1 thread."""
    torch.set_num_threads(1)
    aj.set_num_threads(1)
    torch.manual_seed(0)
    model = MODELS[name]()
    cls = getattr(ajt if kind == "arrayjit" else torch.optim, which)
    opt = cls(model.parameters(), lr=1e-3, **({"momentum": 0.9} if which == "SGD" else {}))
    model(*batch(name, 0)).backward()
    for _ in range(130):  # 128 launches: the full tier queued
        opt.step()
    aj.finish_tier_ups()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            opt.step()
        runs.append((time.perf_counter() - t0) / steps)
    return statistics.median(runs)


def _tiny_model():
    """The host-cost model (8 numbers per layer) through arrayjit.torch on
    1 thread, warmed up (traces, plans, the full tier): (model, x, y)."""
    torch.set_num_threads(1)
    aj.set_num_threads(1)
    torch.manual_seed(0)
    tiny = MLP(d_in=8, d_hidden=8, d_out=2)
    cm = ajt.compile(tiny)
    x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
    for _ in range(130):
        cm(x, y).backward()
    aj.finish_tier_ups()
    return cm, x, y


def host_cost(steps, repeats):
    """Per graph call of a model with 8 numbers per layer, so that the
    backend's own cost shows: the time inside its compiled function (tensors
    in, the replay, tensors out), and of that the replay's C call
    (aj_function_call: arrayjit running the kept plan). Means per call
    (medians of the runs), and the median over single calls of the own
    cost (call minus replay), which a preempted call on a shared host does
    not move."""
    cm, x, y = _tiny_model()
    inside = [0.0, 0]
    own = []
    call = ajt._Compiled.__call__
    spent = [0.0]

    def timed_call(self, args):
        before = spent[0]
        t0 = time.perf_counter()
        r = call(self, args)
        t = time.perf_counter() - t0
        inside[0] += t
        inside[1] += 1
        own.append(t - (spent[0] - before))
        return r

    ajt._Compiled.__call__ = timed_call
    try:
        per_call, per_replay = [], []
        for _ in range(repeats):
            inside[:] = [0.0, 0]
            with replay_clock() as clock:
                spent = clock
                for _ in range(steps):
                    cm(x, y).backward()
            per_call.append(inside[0] / inside[1])
            per_replay.append(clock[0] / inside[1])
    finally:
        ajt._Compiled.__call__ = call
    return statistics.median(per_call), statistics.median(per_replay), statistics.median(own)


def host_cost_paths(steps, repeats):
    """The backend's own cost per graph call (median over single calls, call
    minus replay) of its two paths, interleaved in one process: the general
    path (arrayjit.compile's Python wrapper, every tensor imported at every
    call), which a graph's first call takes, and the direct replay of later
    calls (the kept C function, parameter imports kept). {graph: (general,
    direct)} in seconds."""
    cm, x, y = _tiny_model()
    call = ajt._Compiled.__call__

    def general(self, args):
        e, self.entry = self.entry, None
        try:
            return call(self, args)
        finally:
            self.entry = e

    own = {"general": {}, "direct": {}}
    try:
        with replay_clock() as spent:
            for _ in range(repeats):
                for path, f in (("general", general), ("direct", call)):
                    def timed(self, args, f=f, path=path):
                        before = spent[0]
                        t0 = time.perf_counter()
                        r = f(self, args)
                        own[path].setdefault(self.name, []).append(time.perf_counter() - t0 - (spent[0] - before))
                        return r
                    ajt._Compiled.__call__ = timed
                    for _ in range(steps):
                        cm(x, y).backward()
    finally:
        ajt._Compiled.__call__ = call
    names = sorted(own["direct"], key=lambda n: int(n.rsplit("_", 1)[1]))  # the forward graph was made first
    return {("forward" if i == 0 else "backward"): (statistics.median(own["general"][n]), statistics.median(own["direct"][n]))
            for i, n in enumerate(names)}


COLD = """
import sys, time, warnings, tempfile
warnings.filterwarnings("ignore")
sys.path.insert(0, %(tests)r)
import torch
from torch_models import MODELS, batch
torch.manual_seed(0)
m = MODELS[%(name)r]()
args = batch(%(name)r, 0)
if %(kind)r == "arrayjit":
    import arrayjit as aj, arrayjit.torch as ajt
    aj.set_cache_dir(%(cache)r)  # empty for the first process, filled by it for the second
    m = ajt.compile(m)
elif %(kind)r == "aot_nop":
    from functorch.compile import aot_module, nop
    m = aot_module(m, fw_compiler=nop, bw_compiler=nop)
t0 = time.perf_counter()
m(*args).backward()
print(time.perf_counter() - t0)
"""


def cold_first_step(name):
    """The first step in a fresh process (imports done), arrayjit's with an
    empty kernel cache, against eager's first step in a fresh process, and
    AOTAutograd's own with a compiler that returns each graph as it is
    (functorch.compile.nop: the graphs run on torch): the capture every
    AOTAutograd backend pays before its compiler sees a graph; and
    arrayjit's again in a second process whose kernels are on disk (the
    first process's). {kind: seconds}."""
    import shutil
    import subprocess
    import tempfile
    tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python", "tests")
    cache = tempfile.mkdtemp()
    times = {}
    try:
        for kind, run in (("eager", "eager"), ("aot_nop", "aot_nop"), ("arrayjit", "arrayjit"),
                          ("arrayjit_warm", "arrayjit")):  # the second arrayjit process finds the kernels on disk
            code = COLD % {"tests": tests, "name": name, "kind": run, "cache": cache}
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            times[kind] = float(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--optimizers", action="store_true", help="only the optimizer steps")
    args = ap.parse_args()
    print("machine:", " | ".join(aj.host_info().strip().splitlines()))
    print("torch", torch.__version__, "| arrayjit", aj.version())
    print("\noptimizer step alone (weights and state updated in place), 1 thread, median of %d runs of %d steps:"
          % (args.repeats, args.steps))
    print("%-12s %-10s %14s %12s %9s" % ("model", "optimizer", "torch.optim ms", "arrayjit ms", "aj/torch"))
    for name in ("mlp", "block"):
        for which in ("SGD", "Adam"):
            t = {k: optimizer_step(name, which, k, args.steps, args.repeats) for k in ("torch", "arrayjit")}
            print("%-12s %-10s %14.3f %12.3f %9.2f" % (name, which + (" m=0.9" if which == "SGD" else ""),
                                                       1e3 * t["torch"], 1e3 * t["arrayjit"],
                                                       t["arrayjit"] / t["torch"]))
    if args.optimizers:
        return
    print("\nper training step (forward + backward + SGD), median of %d runs of %d steps:" % (args.repeats, args.steps))
    print("%-12s %7s %10s %10s %12s %11s %9s %9s" % ("model", "threads", "eager ms", "aot_ts ms", "arrayjit ms",
                                                  "replays ms", "aj/eager", "aj/aot_ts"))
    for name in ("mlp", "mlp_ln_gelu", "block"):
        for threads in (1, 2):
            t = {k: time_steps(name, k, args.steps, args.repeats, threads) for k in ("eager", "aot_ts", "arrayjit")}
            print("%-12s %7d %10.3f %10.3f %12.3f %11.3f %9.2f %9.2f" % (
                name, threads, 1e3 * t["eager"][0], 1e3 * t["aot_ts"][0], 1e3 * t["arrayjit"][0],
                1e3 * t["arrayjit"][1], t["arrayjit"][0] / t["eager"][0], t["arrayjit"][0] / t["aot_ts"][0]))
    per_call, per_replay, own = host_cost(args.steps * 10, args.repeats)
    print("\nper graph call of a model of 8 numbers per layer: %.1f us in arrayjit.torch's function, of which "
          "%.1f us the replay (aj_function_call), %.1f us the backend's own cost (tensors in and out, the call; "
          "target <= 50 us); median of single calls' own cost %.1f us"
          % (1e6 * per_call, 1e6 * per_replay, 1e6 * (per_call - per_replay), 1e6 * own))
    for graph, (general, direct) in host_cost_paths(args.steps * 10, args.repeats).items():
        print("  %s graph, median own cost of single calls, interleaved: general path %.1f us, direct replay "
              "%.1f us" % (graph, 1e6 * general, 1e6 * direct))
    for name in ("mlp", "block"):
        t = cold_first_step(name)
        print("first step in a fresh process, %s: arrayjit (empty kernel cache) %.3f s, eager %.3f s: %.1fx "
              "(target <= 2x); AOTAutograd's capture alone (nop compiler) %.3f s: %.1fx eager; arrayjit with "
              "its kernels on disk %.3f s" % (name, t["arrayjit"], t["eager"], t["arrayjit"] / t["eager"], t["aot_nop"],
                                               t["aot_nop"] / t["eager"], t["arrayjit_warm"]))


if __name__ == "__main__":
    main()
