"""Train a tiny transformer block with PyTorch, its forward and backward
graphs run by arrayjit (AOTAutograd with arrayjit.torch's compiler): the
loss curve, then arrayjit's counters over the steps after warm-up (no plans,
no compiles: every step replays).

    ./dev python examples/python/train_transformer.py [steps]
"""
import os
import sys

import torch

import arrayjit as aj
import arrayjit.torch as ajt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "python", "tests"))
from torch_models import Block  # noqa: E402  (the block of the backend's tests)

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
torch.manual_seed(0)
model = Block(vocab=50, d=32, t=16, dropout=0.1)
compiled = ajt.compile(model)                      # AOTAutograd, arrayjit compiling both graphs
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

# A toy task: predict the next token of sequences that count up modulo 50.
start = torch.randint(0, 50, (64, 1))
seq = (start + torch.arange(17)) % 50
for step in range(steps):
    idx = seq[step % 16 * 4:(step % 16) * 4 + 4]
    x, y = idx[:, :16].contiguous(), idx[:, 1:17].contiguous()
    opt.zero_grad()
    loss = compiled(x, y)
    loss.backward()
    opt.step()
    if step == 2:
        aj.reset_stats()                           # warm-up done: both graphs traced and planned
    if step % 10 == 0 or step == steps - 1:
        print("step %3d  loss %.4f" % (step, loss.item()))

s = aj.stats()
print("after warm-up: %d plans built, %d kernels compiled, %d traces, %d replays"
      % (s["plans_built"], s["kernels_compiled"], s["compiled_traces"], s["compiled_replays"]))
