"""arrayjit.distributed: a group of one in this process (no launcher), and
the same calls on 2 processes of mpirun (a script this test writes and runs
with the package and library under test)."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import arrayjit as aj
from arrayjit import distributed as dist


def test_a_group_of_one_returns_its_inputs(rng):
    world = dist.init()
    assert world.rank() == 0 and world.size() == 1
    x = rng.standard_normal((3, 4)).astype(np.float32)
    a = aj.asarray(x)
    for op in ("sum", "mean", "max", "min", "prod"):
        np.testing.assert_array_equal(dist.all_reduce(a, op=op).numpy(), x)
    np.testing.assert_array_equal(dist.all_gather(a).numpy(), x)
    np.testing.assert_array_equal(dist.reduce_scatter(a).numpy(), x)
    np.testing.assert_array_equal(dist.broadcast(a, root=0).numpy(), x)
    assert dist.all_gather(aj.asarray(np.float32(2.5))).shape == (1,)
    assert world.split(0).size() == 1
    assert world.split(-1) is None
    g = [a, aj.asarray(np.arange(5.0))]
    got = dist.average_gradients(g)
    assert isinstance(got, list) and len(got) == 2
    np.testing.assert_array_equal(got[0].numpy(), x)
    got = dist.average_gradients({"w": a, "b": g[1]}, bucket_bytes=8)
    assert set(got) == {"w", "b"}
    np.testing.assert_array_equal(got["b"].numpy(), np.arange(5.0))
    assert isinstance(dist.average_gradients(tuple(g)), tuple)
    dist.set_overlap(True)
    assert dist.overlap() is True
    dist.set_overlap(False)
    assert dist.overlap() is False
    dist.set_overlap(None)


def test_bad_arguments_are_errors_naming_the_op():
    a = aj.asarray(np.arange(4, dtype=np.int32))
    with pytest.raises(aj.UserError, match="floating-point"):
        dist.all_reduce(a, op="mean")
    with pytest.raises(ValueError, match="unknown reduction"):
        dist.all_reduce(a, op="avg")
    with pytest.raises(aj.UserError, match="not a rank of the group"):
        dist.broadcast(a, root=3)
    with pytest.raises(aj.UserError, match="cannot send to itself"):
        dist.send(a, 0)
    with pytest.raises(aj.UserError, match="does not exist"):
        dist.all_reduce(a, group=dist.Group(5))
    with pytest.raises(aj.UserError, match=r"gradient 1 is i32.*\(at test_distributed.py:"):
        dist.average_gradients([aj.asarray(np.ones(2)), a])
    with pytest.raises(aj.UserError, match="bucket_bytes 0 is not positive"):
        dist.average_gradients([aj.asarray(np.ones(2))], bucket_bytes=0)


SCRIPT = textwrap.dedent("""
    import numpy as np
    import arrayjit as aj
    from arrayjit import distributed as dist
    world = dist.init(strict=True)
    r, p = world.rank(), world.size()
    x = np.arange(12, dtype=np.float64).reshape(3, 4) * (r + 1)
    total = sum(np.arange(12, dtype=np.float64).reshape(3, 4) * (k + 1) for k in range(p))
    np.testing.assert_allclose(dist.all_reduce(aj.asarray(x), op="mean").numpy(), total / p)
    g = dist.all_gather(aj.asarray(x.astype(np.int16))).numpy()
    assert g.shape == (3 * p, 4) and (g[3 * r:3 * r + 3] == x).all()
    b = dist.broadcast(aj.asarray(x), root=p - 1).numpy()
    np.testing.assert_array_equal(b, np.arange(12).reshape(3, 4) * p)
    y = dist.reduce_scatter(aj.asarray(np.ones((2 * p, 3), np.float32)), op="sum").numpy()
    np.testing.assert_array_equal(y, np.full((2, 3), p, np.float32))
    if r == 0:
        aj.eval(dist.send(aj.asarray(x), 1))
    elif r == 1:
        got = dist.recv((3, 4), aj.float64, 0).numpy()
        np.testing.assert_array_equal(got, np.arange(12).reshape(3, 4))
    grads = [aj.asarray(np.full((2, 3), r + 1.0, np.float32)), aj.asarray(np.arange(5.0) * (r + 1)),
             aj.asarray(np.float32(r))]
    avg = dist.average_gradients(grads, bucket_bytes=24)   # [], [5] f64, [2, 3] f32 in buckets
    mean = sum(range(1, p + 1)) / p
    np.testing.assert_allclose(avg[0].numpy(), np.full((2, 3), mean, np.float32))
    np.testing.assert_allclose(avg[1].numpy(), np.arange(5.0) * mean)
    np.testing.assert_allclose(avg[2].numpy(), np.float32(sum(range(p)) / p))
    try:
        dist.all_reduce(aj.asarray(np.ones(3 + r, np.float32))).numpy()
        raise SystemExit("no error")
    except aj.UserError as e:
        assert "disagree" in str(e) and "script.py" in str(e), str(e)
    print("rank %d of %d: ok" % (r, p))
""")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (Debian: openmpi-bin)")
def test_two_processes_under_mpirun(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run(["mpirun", "--oversubscribe", "--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include",
                        "lo", "--mca", "btl_vader_single_copy_mechanism", "none", "-np", "2", sys.executable,
                        str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "rank 0 of 2: ok" in p.stdout and "rank 1 of 2: ok" in p.stdout, p.stdout + p.stderr
