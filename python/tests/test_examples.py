"""The Python examples (examples/python) run as a user runs them, and print
what they promise."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.environ.get("ARRAYJIT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)
EXAMPLES = os.path.join(ROOT, "examples", "python")


def run(name, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_numpy_session():
    out = run("numpy_session.py")
    assert "sin^2 + cos^2 = [1. 1. 1. 1. 1. 1. 1. 1.]" in out
    assert "m[m > 6] = [ 7.  8.  9. 10. 11.]" in out
    assert re.search(r"compiled: \d traces, \d+ replays", out)
    assert "plan: 3 steps, 1 kernels" in out


def test_train_transformer():
    pytest.importorskip("torch")
    out = run("train_transformer.py", "40")
    losses = [float(m) for m in re.findall(r"loss (\d+\.\d+)", out)]
    assert len(losses) >= 4 and losses[-1] < 0.7 * losses[0], out
    assert "after warm-up: 0 plans built, 0 kernels compiled, 0 traces" in out, out
