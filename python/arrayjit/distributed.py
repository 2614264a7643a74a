"""Several processes computing together (arrayjit/distributed.hpp): MPI
collectives as lazy ops, like MLX's mx.distributed. Start the script with
`mpirun -np N python3 script.py`; without a launcher the process is a group
of one and every collective returns its input.

    import arrayjit as aj
    world = aj.distributed.init()
    g = aj.distributed.all_reduce(grad, op="mean")   # fuses into the update

Every rank must evaluate the same collectives in the same order; a
disagreement raises UserError on every rank, naming what each asked for, and
a rank that waits past the timeout raises RuntimeError."""
import ctypes as C

from ._capi import check, lib, set_caller
from ._core import _code, _shape_arg, new, new_many, operand
from ._ops import _arrays

_OPS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4}


def _op(op):
    if op not in _OPS:
        raise ValueError("unknown reduction %r (sum, mean, max, min, prod)" % (op,))
    return _OPS[op]


class Group:
    """A set of processes that run collectives together (the world: Group())."""

    def __init__(self, _id=0):
        self._id = _id

    def _info(self):
        r, s = C.c_int32(), C.c_int32()
        check(lib.aj_distributed_group_info(self._id, C.byref(r), C.byref(s)))
        return r.value, s.value

    def rank(self):
        return self._info()[0]

    def size(self):
        return self._info()[1]

    def split(self, color, key=-1):
        """The ranks with the same color as a new group (collective: every
        rank calls it); None for a negative color."""
        out = C.c_int64()
        check(lib.aj_distributed_split(self._id, color, key, C.byref(out)))
        return Group(out.value) if out.value >= 0 else None

    def __repr__(self):
        r, s = self._info()
        return "Group(rank=%d, size=%d)" % (r, s)


def init(strict=False):
    """Starts MPI once and returns the world group."""
    check(lib.aj_distributed_init(1 if strict else 0, None, None))
    return Group()


def set_timeout(seconds):
    check(lib.aj_distributed_set_timeout(float(seconds)))


def set_overlap(mode):
    """Do exchanges run while the steps that do not read them do? True,
    False, or None (automatic: AJ_DISTRIBUTED_OVERLAP, else on with at least
    two hardware threads per rank on the machine)."""
    check(lib.aj_distributed_set_overlap(-1 if mode is None else int(bool(mode))))


def overlap():
    """Do exchanges overlap the steps after them now (set_overlap's setting,
    or what automatic chose)?"""
    on = C.c_int32(0)
    check(lib.aj_distributed_overlap(C.byref(on)))
    return bool(on.value)


def _g(group):
    return (group or Group())._id


def all_reduce(x, op="sum", group=None):
    set_caller()
    return new(lib.aj_distributed_all_reduce, operand(x), _op(op), _g(group))


def all_gather(x, group=None):
    set_caller()
    return new(lib.aj_distributed_all_gather, operand(x), _g(group))


def reduce_scatter(x, op="sum", group=None):
    set_caller()
    return new(lib.aj_distributed_reduce_scatter, operand(x), _op(op), _g(group))


def broadcast(x, root=0, group=None):
    set_caller()
    return new(lib.aj_distributed_broadcast, operand(x), root, _g(group))


def send(x, dst, group=None):
    """x sent to rank dst when the result (x's values) is evaluated."""
    set_caller()
    return new(lib.aj_distributed_send, operand(x), dst, _g(group))


def recv(shape, dtype, src, group=None):
    set_caller()
    dims, n = _shape_arg(shape)
    return new(lib.aj_distributed_recv, dims, n, _code(dtype), src, _g(group))


def recv_like(x, src, group=None):
    return recv(x.shape, x.dtype, src, group)


def average_gradients(grads, bucket_bytes=4 << 20, group=None):
    """The mean of each gradient over the group's ranks (data-parallel
    training), exchanged in buckets of at most bucket_bytes, the last gradient
    first: one all_reduce per bucket, started in the step's plan as soon as its
    gradients are computed. A list in grads' order (a dict or tuple of
    gradients: the same kind back)."""
    set_caller()
    if isinstance(grads, dict):
        keys = list(grads)
        return dict(zip(keys, average_gradients([grads[k] for k in keys], bucket_bytes, group)))
    grads_list = list(grads)
    xs, hs, n = _arrays(grads_list)
    out = new_many(lib.aj_distributed_average_gradients, n, hs, n, int(bucket_bytes), _g(group))
    return tuple(out) if isinstance(grads, tuple) else out

