#!/usr/bin/env python3
"""The torch peers of bench/bench_cuda.cpp: the same cases, torch eager and
torch.compile, medians of CUDA-event timings, bandwidth as a share of a
device-to-device copy measured in the same run.

    python3 bench/bench_cuda_torch.py [scale] [--cpu]

Cases: copy, seed, adam, chain, dispatch (eager and compiled: the compiled
dispatch line is arrayjit's `dispatch (compiled)` peer), matmul
f32[4096, 4096] @ f32[4096, 4096] (TF32 off, the peer of arrayjit's; a
second line with TF32 on, for information), and bench_mlp's training step
(784 -> 256 -> 10, batch 256, f32, ReLU, softmax cross-entropy, Adam written
out of place as ajbench::mlp_adam_step, not torch.optim), eager and compiled.

`scale` (default 1) divides the sizes as bench_cuda's does. `--cpu` runs a
small smoke version on the CPU (host timers instead of events; torch.compile
skipped where this torch has none): a check that the script runs to the end,
not a measurement. Each case runs on its own: one that raises prints
`CASE FAILED: <what>` and the rest still run.
"""
import math
import statistics
import sys
import time
import traceback

import torch

WARMUP, REPS = 3, 15
CPU = "--cpu" in sys.argv
DEV = torch.device("cpu" if CPU else "cuda")
HAVE_COMPILE = hasattr(torch, "compile")


def say(*args):
    print(*args, flush=True)


def run_case(name, fn):
    try:
        fn()
    except Exception as e:  # one case's failure must not lose the others
        msg = f"{type(e).__name__}: {e}".strip().splitlines()
        say(f"CASE FAILED: {name}: {msg[0] if msg else type(e).__name__}")
        traceback.print_exc(limit=-6, file=sys.stdout)
        sys.stdout.flush()


def sync():
    if not CPU:
        torch.cuda.synchronize()


def time_ms(fn):
    """Median ms of fn() between two CUDA events (host timer with --cpu)."""
    out = []
    if CPU:
        for i in range(WARMUP + REPS):
            t0 = time.perf_counter()
            fn()
            if i >= WARMUP:
                out.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(out)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
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
    say(f"{name:<22} {ms:10.3f} ms {gbs:9.1f} GB/s  {100 * gbs / copy_gbs:5.1f}% of copy")


def variants():
    """(label, wrap) for eager and, where this torch has it, torch.compile."""
    out = [("eager", lambda f: f)]
    if HAVE_COMPILE:
        out.append(("compile", torch.compile))
    else:
        say(f"torch.compile: skipped (torch {torch.__version__} has none)")
    return out


# ---- matmul ---------------------------------------------------------------------


def matmul_case(n, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        gen = torch.Generator(device=DEV).manual_seed(8)
        a = torch.rand(n, n, device=DEV, generator=gen) * 2 - 1
        b = torch.rand(n, n, device=DEV, generator=gen) * 2 - 1
        box = [None]

        def mm():
            box[0] = a @ b

        ms = time_ms(mm)
        label = f"matmul (tf32 {'on' if tf32 else 'off'})"
        say(f"{label:<22} {ms:10.3f} ms {2.0 * n**3 / ms / 1e9:9.2f} TFLOP/s  (f32[{n}, {n}] @ f32[{n}, {n}], 2 n^3 flops)")
        # Checked against float64, as bench_cuda checks arrayjit's: 64
        # sampled elements (relative error) and whole rows (first, middle,
        # last; error over sum |a b|, the scale of a dot product's rounding).
        c = a @ b
        b64 = b.double()
        rows = torch.tensor([0, n // 2, n - 1], device=DEV)
        a64 = a[rows].double()
        ref = a64 @ b64
        norm = ((c[rows].double() - ref).abs() / (a64.abs() @ b64.abs())).max().item()
        gs = torch.Generator(device="cpu").manual_seed(12345)
        i, j = (torch.randint(0, n, (64,), generator=gs).to(DEV) for _ in range(2))
        ref_s = (a[i].double() * b64[:, j].T).sum(1)
        rel = ((c[i, j].double() - ref_s).abs() / ref_s.abs()).max().item()
        bad = (~torch.isfinite(c)).sum().item()
        say(f"  check vs float64: max rel err {rel:.2e} (64 sampled elements), max |err|/sum|a*b| {norm:.2e} "
            f"(3 rows); non-finite {bad} of {c.numel()}")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


# ---- mlp ----------------------------------------------------------------------------

B, D, H, C = 256, 784, 256, 10
LR, BETA1, BETA2, EPS = 1e-3, 0.9, 0.999, 1e-8
MLP_STEPS = 10  # steps per timed run
MLP_MAX_STEPS = 1000  # steps one model may take (5 checked + 3 + 18 timed runs of 10)


def mlp_loss(q, X, Y):
    """ajbench::mlp_loss: softmax cross-entropy of a ReLU MLP, q = [W1, b1, W2, b2]."""
    W1, b1, W2, b2 = q
    h = torch.relu(X @ W1 + b1)
    z = h @ W2 + b2
    mx = z.amax(1, keepdim=True).detach()
    lse = torch.log(torch.exp(z - mx).sum(1, keepdim=True)) + mx
    return (Y * (lse - z)).sum(1).mean()


def adam(p, m, v, g, c1, c2):
    """ajbench::mlp_adam_step's update, out of place: [p0', m0', v0', p1', ...]."""
    out = []
    for pi, mi, vi, gi in zip(p, m, v, g):
        mi = BETA1 * mi + (1 - BETA1) * gi
        vi = BETA2 * vi + (1 - BETA2) * gi * gi
        out += [pi - LR * (mi / c1) / (torch.sqrt(vi / c2) + EPS), mi, vi]
    return out


def step_autograd(X, Y, p, m, v, c1, c2):
    """The step in eager torch: the gradient by torch.autograd.grad."""
    q = [t.detach().requires_grad_(True) for t in p]
    loss = mlp_loss(q, X, Y)
    g = torch.autograd.grad(loss, q)
    return [loss.detach()] + adam(p, m, v, g, c1, c2)


def step_func(X, Y, p, m, v, c1, c2):
    """The step as one function (torch.func.grad_and_value): what torch.compile
    traces whole, as aj::compile traces mlp_adam_step."""
    g, loss = torch.func.grad_and_value(mlp_loss)(p, X, Y)
    return [loss] + adam(p, m, v, g, c1, c2)


def compiled_split():
    """The fallback where the whole step does not compile: the loss compiled
    (its backward by AOTAutograd), torch.autograd.grad, the update compiled."""
    loss_c, adam_c = torch.compile(mlp_loss), torch.compile(adam)

    def step(X, Y, p, m, v, c1, c2):
        q = [t.detach().requires_grad_(True) for t in p]
        loss = loss_c(q, X, Y)
        g = torch.autograd.grad(loss, q)
        return [loss.detach()] + adam_c(p, m, v, g, c1, c2)

    return step


class Mlp:
    def __init__(self, step):
        gen = torch.Generator(device="cpu").manual_seed(42)
        X = torch.randn(B, D, generator=gen)
        Y = torch.zeros(B, C)
        Y[torch.arange(B), torch.randint(0, C, (B,), generator=gen)] = 1.0
        W1 = torch.randn(D, H, generator=gen) * math.sqrt(2.0 / D)
        W2 = torch.randn(H, C, generator=gen) * math.sqrt(2.0 / H)
        self.X, self.Y = X.to(DEV), Y.to(DEV)
        self.p = [t.to(DEV) for t in (W1, torch.zeros(H), W2, torch.zeros(C))]
        self.m = [torch.zeros_like(t) for t in self.p]
        self.v = [torch.zeros_like(t) for t in self.p]
        # Adam's bias corrections as device scalars, one per step, each its
        # own tensor (not a view at an offset): a Python float that changes
        # every step would make torch.compile recompile.
        t = torch.arange(1, MLP_MAX_STEPS + 1, dtype=torch.float64)
        self.c1 = [x.clone() for x in (1 - BETA1**t).float().to(DEV)]
        self.c2 = [x.clone() for x in (1 - BETA2**t).float().to(DEV)]
        self.t = 0
        self.step_fn = step

    def step(self):
        r = self.step_fn(self.X, self.Y, self.p, self.m, self.v, self.c1[self.t], self.c2[self.t])
        self.t += 1
        self.p, self.m, self.v = list(r[1::3]), list(r[2::3]), list(r[3::3])
        return r[0]


def mlp_measure(label, step, how):
    """Five checked steps (their losses kept), three more, then the timed runs."""
    model = Mlp(step)
    ls = [model.step().item() for _ in range(5)]
    for _ in range(3):
        model.step()
    sync()
    ms = time_ms(lambda: [model.step() for _ in range(MLP_STEPS)]) / MLP_STEPS
    name = f"mlp ({label})"
    say(f"{name:<22} {ms:10.3f} ms per step  ({D}-{H}-{C}, batch {B}, f32, Adam; {how})")
    say(f"  losses, steps 1-5: {' '.join(f'{x:.6f}' for x in ls)}")
    return ls


def mlp_cases():
    losses = {}

    def eager():
        losses["eager"] = mlp_measure("eager", step_autograd, "torch.autograd.grad")

    def compiled():
        try:  # the whole step compiled
            losses["compile"] = mlp_measure("compile", torch.compile(step_func), "whole step: torch.func.grad_and_value")
        except Exception as e:
            first = str(e).strip().splitlines()
            say(f"  mlp (compile): the whole step failed ({type(e).__name__}: {first[0] if first else ''}); "
                "now the loss and the update compiled apart")
            losses["compile"] = mlp_measure("compile", compiled_split(),
                                            "loss and update compiled apart, torch.autograd.grad")

    run_case("mlp (eager)", eager)
    if HAVE_COMPILE:
        run_case("mlp (compile)", compiled)
    else:
        say(f"mlp (compile): skipped (torch {torch.__version__} has no torch.compile)")
    if "eager" in losses and "compile" in losses:
        worst = max(abs(a - b) / abs(a) for a, b in zip(losses["eager"], losses["compile"]))
        say(f"  mlp losses compile vs eager: max rel diff {worst:.1e}: {'ok' if worst <= 1e-3 else 'WRONG (tolerance 1e-3)'}")


# ---- main ---------------------------------------------------------------------------


def main():
    args = [a for a in sys.argv[1:] if a != "--cpu"]
    scale = int(args[0]) if args else 1
    where = "the CPU (--cpu: a smoke run, not a measurement)" if CPU else torch.cuda.get_device_name()
    say(f"torch {torch.__version__} on {where} (scale 1/{scale})")
    torch.backends.cuda.matmul.allow_tf32 = False
    big = (256 << 20) // scale
    state = {"copy_gbs": float("nan")}

    def copy():
        src = torch.rand(big, device=DEV) * 2 - 1
        dst = torch.empty_like(src)
        copy_ms = time_ms(lambda: dst.copy_(src))
        state["copy_gbs"] = 2 * big * 4 / copy_ms / 1e6
        state["src"] = src
        say(f"{'copy':<22} {copy_ms:10.3f} ms {state['copy_gbs']:9.1f} GB/s")

    run_case("copy", copy)
    copy_gbs = state["copy_gbs"]
    src = state.get("src")
    if src is None:
        src = torch.rand(big, device=DEV) * 2 - 1

    n = 16384 // (4 if scale > 1 else 1)
    na = 100_000_000 // scale

    def seed(x):
        a = x + 2
        return (a.sum(1) * 3) + 0

    def chain(x):
        return torch.exp(-x * x / 2) * torch.sin(3 * x) + 0.5 * torch.cos(x)

    def adam_big(p, m, v, g, lr):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        p = p - lr * m / (torch.sqrt(v) + 1e-8)
        return p, m, v

    def dispatch(x):
        for _ in range(5):
            x = x * 1.0001 + 0.5
        return x

    for label, wrap in variants():
        def seed_case():
            x = torch.rand(n, n, device=DEV)
            fs = wrap(seed)
            report(f"seed ({label})", time_ms(lambda: fs(x)), 4.0 * n * n + 4.0 * n, copy_gbs)

        def adam_case():
            p, m, v, g = (torch.rand(na, device=DEV) for _ in range(4))
            fa = wrap(adam_big)
            lr = torch.tensor(1e-3, device=DEV)
            st = [p, m, v]

            def step():
                st[:] = fa(*st, g, lr)

            report(f"adam ({label})", time_ms(step), 7.0 * 4 * na, copy_gbs)

        def chain_case():
            fc = wrap(chain)
            report(f"chain ({label})", time_ms(lambda: fc(src)), 2.0 * 4 * big, copy_gbs)

        def dispatch_case():
            small = torch.rand(1000, device=DEV)
            fd = wrap(dispatch)
            for _ in range(100):
                fd(small)
            sync()
            us = []
            for _ in range(REPS):
                t0 = time.perf_counter()
                for _ in range(1000):
                    fd(small)
                us.append((time.perf_counter() - t0) * 1e3)  # ms per 1000 = us per call
            sync()
            say(f"{'dispatch (' + label + ')':<22} {statistics.median(us):10.2f} us per call")

        run_case(f"seed ({label})", seed_case)
        run_case(f"adam ({label})", adam_case)
        run_case(f"chain ({label})", chain_case)
        run_case(f"dispatch ({label})", dispatch_case)

    nm = 4096 if scale == 1 else 1024
    if CPU:
        nm = min(nm, 256)
    run_case("matmul (tf32 off)", lambda: matmul_case(nm, False))
    if CPU:
        say("matmul (tf32 on): skipped (--cpu)")
    else:
        run_case("matmul (tf32 on)", lambda: matmul_case(nm, True))
    mlp_cases()


if __name__ == "__main__":
    main()
