"""Inspection, switches, counters, files, CUDA queries, host callbacks: the
C API's facilities (arrayjit/arrayjit.h) as Python functions."""
import contextlib
import ctypes as C
import os

from ._capi import H, check, keep_exception, lib, set_caller
from ._core import Array, _BY_CODE, _handles_of, dtype as _dtype, new, operand

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _text(fn, *args):
    """Calls a C function of snprintf's rule twice: the length, then the text."""
    hs = _handles_of(args)  # args keeps the Arrays alive
    n = C.c_size_t()
    check(fn(*hs, None, 0, C.byref(n)))
    buf = C.create_string_buffer(n.value + 1)
    check(fn(*hs, buf, n.value + 1, None))
    return buf.raw[:n.value].decode(errors="replace")


def _handles(arrays):
    xs = [operand(a) for a in arrays]
    return xs, (H * max(1, len(xs)))(*[x._h for x in xs]), len(xs)


# ---- evaluation, inspection -------------------------------------------------------------------


@_export
def eval(*arrays):  # noqa: A001 (NumPy has none; JAX's block_until_ready)
    """Evaluates the arrays together (one plan: shared work is computed once);
    returns them (one array: that array)."""
    set_caller()
    xs, hs, n = _handles(arrays)
    check(lib.aj_eval_many(hs, n))
    return xs[0] if len(xs) == 1 else tuple(xs)


block_until_ready = eval
__all__.append("block_until_ready")


@_export
def explain(*arrays):
    """The plan evaluating the arrays together would run (kernels, the ops
    fused into each, buffers, in-place reuse), as text; nothing is computed."""
    set_caller()
    xs, hs, n = _handles(arrays)
    return _text(lib.aj_explain, hs, n)


@_export
def to_dot(*arrays, plan=False):
    """Graphviz text of the traced graph (plan=True: of the plan's kernels)."""
    set_caller()
    xs, hs, n = _handles(arrays)
    return _text(lib.aj_to_dot, hs, n, 1 if plan else 0)


@_export
def dump(a):
    """The unevaluated graph reaching a ("%3 = add f32[4] %1, %2")."""
    return _text(lib.aj_array_dump, operand(a))


@_export
def kernel_ir(a, assembly=False):
    """The LLVM IR (or machine code) of the kernels evaluating a would run."""
    set_caller()
    return _text(lib.aj_jit_kernel_ir, operand(a), 1 if assembly else 0)


@_export
def set_log(channels):
    """Debug channels to stderr, as AJ_LOG: "plan", "passes", "graph", "all"; "" clears."""
    check(lib.aj_set_log(channels.encode()))


@_export
def version():
    return lib.aj_version().decode()


@_export
def llvm_version():
    return lib.aj_llvm_version().decode()


@_export
def host_info():
    """What host code runs on: CPU model, instruction set, JIT target, BLAS kernel."""
    return lib.aj_host_info().decode()


@_export
def live_handles():
    """Open C API handles (arrays and functions): a leak check."""
    return lib.aj_live_handles()


# ---- JIT, threads, memory, debug --------------------------------------------------------------


@_export
def jit_enabled():
    return bool(lib.aj_jit_enabled())


@_export
def set_jit_enabled(on):
    """False: kernels run in the kernel interpreter (for debugging)."""
    lib.aj_jit_set_enabled(1 if on else 0)


@_export
def num_threads():
    return lib.aj_jit_num_threads()


@_export
def set_num_threads(n):
    """Threads a large kernel is split over (0: all cores)."""
    check(lib.aj_jit_set_num_threads(int(n)))


@_export
def cache_dir():
    return _text(lib.aj_jit_cache_dir)


@_export
def set_cache_dir(path):
    """The compiled-kernel disk cache's directory ("" disables it)."""
    check(lib.aj_jit_set_cache_dir(os.fspath(path).encode()))


@_export
def clear_kernel_memory_cache():
    check(lib.aj_jit_clear_memory_cache())


_TIERS = ("auto", "full", "quick")


@_export
def jit_tiers():
    """"auto" (small first launches compile quick, in full in the background from their 128th launch), "full" or "quick"."""
    return _TIERS[lib.aj_jit_tiers()]


@_export
def set_jit_tiers(tiers):
    """"auto", "full" (every kernel compiled in full at once) or "quick" (never in full)."""
    if tiers not in _TIERS:
        raise ValueError(f"set_jit_tiers({tiers!r}): use 'auto', 'full' or 'quick'")
    check(lib.aj_jit_set_tiers(_TIERS.index(tiers)))


@_export
def finish_tier_ups():
    """Waits until the kernels queued for the full tier are compiled (a
    benchmark's warm-up, before timing the steady state)."""
    check(lib.aj_jit_finish_tier_ups())


@_export
def interrupt(on=True):
    """Asks running evaluations to stop (they raise RuntimeFailure "interrupted")."""
    lib.aj_interrupt(1 if on else 0)


@_export
def trim_memory():
    """Gives arrayjit's cached free host buffers back to the system."""
    check(lib.aj_trim_memory())


@_export
def set_memory_limit(nbytes):
    check(lib.aj_set_memory_limit(int(nbytes)))


@_export
def memory_limit():
    return lib.aj_memory_limit()


@_export
def cached_bytes():
    return lib.aj_cached_bytes()


@_export
def set_debug(on):
    """Index checks at trace time (AJ_DEBUG=1): an out-of-range index raises."""
    lib.aj_set_debug(1 if on else 0)


@_export
def debug():
    return bool(lib.aj_debug())


# ---- printing ---------------------------------------------------------------------------------


class _PrintOptions(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("precision", C.c_int32), ("edgeitems", C.c_int32),
                ("threshold", C.c_int64), ("linewidth", C.c_int32), ("suppress", C.c_int32)]


def _get_printoptions():
    o = _PrintOptions()
    o.struct_size = C.sizeof(_PrintOptions)
    check(lib.aj_printoptions(C.byref(o)))
    return o


@_export
def get_printoptions():
    o = _get_printoptions()
    return {"precision": o.precision, "edgeitems": o.edgeitems, "threshold": o.threshold,
            "linewidth": o.linewidth, "suppress": bool(o.suppress)}


@_export
def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, suppress=None):
    """As NumPy's: the options not given keep their values."""
    o = _get_printoptions()
    if precision is not None:
        o.precision = precision
    if threshold is not None:
        o.threshold = min(int(threshold), (1 << 63) - 1)
    if edgeitems is not None:
        o.edgeitems = edgeitems
    if linewidth is not None:
        o.linewidth = linewidth
    if suppress is not None:
        o.suppress = 1 if suppress else 0
    check(lib.aj_set_printoptions(C.byref(o)))


@_export
@contextlib.contextmanager
def printoptions(**options):
    """with arrayjit.printoptions(precision=3): ... (as NumPy's)."""
    saved = get_printoptions()
    set_printoptions(**options)
    try:
        yield get_printoptions()
    finally:
        set_printoptions(**saved)


# ---- counters ---------------------------------------------------------------------------------

STATS_FIELDS = ("evals kernels_launched system_allocs system_frees bytes_allocated pool_hits inplace_reuses "
                "live_bytes peak_live_bytes live_nodes nodes_created plans_built plan_cache_hits "
                "plans_renumbered held_values_stored values_materialized kernels_compiled kernel_cache_hits "
                "kernel_disk_hits kernel_disk_rejects compile_ns kernel_disk_load_ns kernels_compiled_ahead "
                "compiled_traces compiled_replays compiled_new_extents compiled_unplanned kernels_tiered_up").split()


class _Stats(C.Structure):
    _fields_ = [("struct_size", C.c_size_t)] + [(f, C.c_uint64) for f in STATS_FIELDS]


@_export
def stats():
    """arrayjit's counters (aj::stats) as a dict: plans_built, kernels_compiled,
    system_allocs, compiled_replays, peak_live_bytes, ..."""
    s = _Stats()
    s.struct_size = C.sizeof(_Stats)
    check(lib.aj_stats(C.byref(s)))
    return {f: getattr(s, f) for f in STATS_FIELDS}


@_export
def reset_stats():
    lib.aj_reset_stats()


# ---- profiling --------------------------------------------------------------------------------


@_export
@contextlib.contextmanager
def profile(trace_path=None):
    """with arrayjit.profile("trace.json"): ... records every kernel, plan,
    compile and transfer as Chrome trace-event JSON (Perfetto); then
    profile_summary() gives the top kernels."""
    check(lib.aj_profile_begin(os.fspath(trace_path).encode() if trace_path else None))
    try:
        yield
    finally:
        check(lib.aj_profile_end())


@_export
def profile_summary(top=10):
    return _text(lib.aj_profile_summary, int(top))


@_export
@contextlib.contextmanager
def profile_range(name):
    """A named range of this thread in the trace."""
    check(lib.aj_profile_range_push(name.encode()))
    try:
        yield
    finally:
        check(lib.aj_profile_range_pop())


# ---- files ------------------------------------------------------------------------------------


def _path(p):
    return os.fspath(p).encode()


@_export
def save(path, a):
    """a as a .npy file (NumPy's format)."""
    set_caller()
    x = operand(a)
    check(lib.aj_save(_path(path), x._h))


@_export
def load(path):
    """A .npy file as an array (mapped: nothing is read until a value is
    needed), or a .npz / .safetensors file as a dict of arrays."""
    set_caller()
    p = os.fspath(path)
    if p.endswith(".npz"):
        return _load_named(lib.aj_load_npz, p)
    if p.endswith(".safetensors"):
        return _load_named(lib.aj_load_safetensors, p)
    return new(lib.aj_load, _path(p))


def _names_arg(named):
    names = list(named)
    arrays = [operand(named[k]) for k in names]
    enc = (C.c_char_p * max(1, len(names)))(*[k.encode() for k in names])
    hs = (H * max(1, len(arrays)))(*[a._h for a in arrays])
    return enc, hs, len(names), arrays


def _savez(fn, path, args, named):
    for i, a in enumerate(args):  # NumPy's names for positional arrays
        named["arr_%d" % i] = a
    enc, hs, n, keep = _names_arg(named)
    check(fn(_path(path), enc, hs, n))


@_export
def savez(path, *args, **named):
    """As NumPy's savez: positional arrays are arr_0, arr_1, ..."""
    set_caller()
    _savez(lib.aj_savez, path, args, named)


@_export
def savez_compressed(path, *args, **named):
    set_caller()
    _savez(lib.aj_savez_compressed, path, args, named)


@_export
def save_safetensors(path, tensors, metadata=None):
    """A dict of arrays as a .safetensors file, with string metadata."""
    set_caller()
    enc, hs, n, keep = _names_arg(tensors)
    metadata = dict(metadata or {})
    keys = (C.c_char_p * max(1, len(metadata)))(*[str(k).encode() for k in metadata])
    vals = (C.c_char_p * max(1, len(metadata)))(*[str(v).encode() for v in metadata.values()])
    check(lib.aj_save_safetensors(_path(path), enc, hs, n, keys, vals, len(metadata)))


def _load_named(fn, path):
    count, names_len = C.c_size_t(), C.c_size_t()
    check(fn(_path(path), None, 0, C.byref(count), None, 0, C.byref(names_len)))
    arrays = (H * max(1, count.value))()
    names = C.create_string_buffer(max(1, names_len.value))
    check(fn(_path(path), arrays, count.value, C.byref(count), names, names_len.value, C.byref(names_len)))
    keys = names.raw[:names_len.value].split(b"\0")[:count.value]
    return {k.decode(): Array._own(arrays[i]) for i, k in enumerate(keys)}


@_export
def load_safetensors(path):
    return _load_named(lib.aj_load_safetensors, path)


@_export
def safetensors_metadata(path):
    raw = _text(lib.aj_safetensors_metadata, _path(path)).encode()
    parts = raw.split(b"\0")
    return {parts[i].decode(): parts[i + 1].decode() for i in range(0, len(parts) - 1, 2)}


# ---- CUDA -------------------------------------------------------------------------------------


@_export
def cuda_available():
    return bool(lib.aj_cuda_available())


@_export
def cuda_device_count():
    return lib.aj_cuda_device_count()


@_export
def cuda_unavailable_reason():
    return _text(lib.aj_cuda_unavailable_reason)


@_export
def cuda_compiler_available():
    return bool(lib.aj_cuda_compiler_available())


@_export
def cuda_compiler_reason():
    return _text(lib.aj_cuda_compiler_reason)


@_export
def cuda_kernel_source(*arrays):
    """The CUDA C of every kernel evaluating the arrays on a GPU would run
    (needs no GPU)."""
    set_caller()
    xs, hs, n = _handles(arrays)
    return _text(lib.aj_cuda_kernel_source, hs, n)


@_export
def cuda_trim_memory(device=0):
    check(lib.aj_cuda_trim_memory(int(device)))


@_export
def cuda_release_borrowed(wait=False):
    check(lib.aj_cuda_release_borrowed(1 if wait else 0))


@_export
def cuda_current_stream(device=0):
    """The CUstream (an int) arrayjit enqueues this thread's work for device on."""
    s = C.c_void_p()
    check(lib.aj_cuda_current_stream(int(device), C.byref(s)))
    return s.value or 0


@_export
@contextlib.contextmanager
def cuda_stream(stream, device=0):
    """with arrayjit.cuda_stream(torch.cuda.current_stream().cuda_stream): work
    for the device is enqueued on that stream (an int CUstream, or an object
    with .cuda_stream or .ptr)."""
    s = getattr(stream, "cuda_stream", getattr(stream, "ptr", stream))
    check(lib.aj_cuda_stream_push(int(device), C.c_void_p(int(s) if s else None)))
    try:
        yield
    finally:
        check(lib.aj_cuda_stream_pop(int(device)))


# ---- host callbacks ---------------------------------------------------------------------------


class _View(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("data", C.c_void_p), ("ndim", C.c_int32),
                ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)), ("dtype", C.c_int32),
                ("format", C.c_char_p), ("itemsize", C.c_int64), ("device_type", C.c_int32),
                ("device_id", C.c_int32), ("readonly", C.c_int32), ("owner", C.c_void_p)]


_HOST_FN = C.CFUNCTYPE(C.c_int32, C.c_void_p, C.POINTER(_View), C.c_int32, C.POINTER(_View), C.c_int32)
_RELEASE_FN = C.CFUNCTYPE(None, C.c_void_p)


class _HostDesc(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("fn", _HOST_FN), ("vjp", C.c_void_p), ("context", C.c_void_p),
                ("release", C.c_void_p), ("name", C.c_char_p)]


def _numpy_of(v, writable):
    """A NumPy array over an aj_view's memory (no copy)."""
    import numpy as np
    d = _BY_CODE[v.dtype]
    shape = tuple(v.shape[i] for i in range(v.ndim))
    strides = tuple(v.strides[i] for i in range(v.ndim))
    npd = np.dtype(np.uint16) if d.name == "bfloat16" else d.to_numpy()
    if not v.data or 0 in shape:
        return np.zeros(shape, npd)
    span = sum((s - 1) * abs(st) for s, st in zip(shape, strides)) + npd.itemsize
    buf = (C.c_char * span).from_address(v.data)
    a = np.ndarray(shape, npd, buffer=buf, strides=strides)
    if not writable:
        a.flags.writeable = False
    return a


_keep_host = {}  # context id -> the callbacks, alive until arrayjit releases them


@_export
def host_callback(fn, result_shapes, dtype, *inputs, vjp=None, name=None):
    """fn's results as a node of the graph: when they are evaluated (also in
    every replay of a compiled function), fn(*numpy_inputs, *numpy_outputs)
    runs on the evaluated inputs (read-only NumPy arrays) and fills the
    outputs (writable NumPy arrays of result_shapes, all of `dtype`). With
    vjp, reverse mode calls vjp(*inputs, *results, *cotangents,
    *input_cotangents_out). Returns the list of results (lazy)."""
    set_caller()
    ins = [operand(x) for x in inputs]
    shapes = [tuple(s) for s in result_shapes]
    d = _dtype(dtype)
    who = name or getattr(fn, "__name__", "callback")

    def make(py):
        def cb(ctx, views_in, n_in, views_out, n_out):
            try:
                args = [_numpy_of(views_in[i], False) for i in range(n_in)]
                outs = [_numpy_of(views_out[i], True) for i in range(n_out)]
                py(*args, *outs)
                return 0
            except BaseException as exc:  # noqa: B902
                keep_exception(exc)
                return 1
        return _HOST_FN(cb)

    key = object()
    callbacks = [make(fn)] + ([make(vjp)] if vjp is not None else [])

    @_RELEASE_FN
    def release(ctx):
        _keep_host.pop(id(key), None)

    _keep_host[id(key)] = (key, callbacks, release)
    desc = _HostDesc()
    desc.struct_size = C.sizeof(_HostDesc)
    desc.fn = callbacks[0]
    desc.vjp = C.cast(callbacks[1], C.c_void_p) if vjp is not None else None
    desc.release = C.cast(release, C.c_void_p)
    desc.name = who.encode()
    arrs = [(C.c_int64 * max(1, len(s)))(*s) for s in shapes]
    ptrs = (C.c_void_p * max(1, len(shapes)))(*[C.cast(a, C.c_void_p) for a in arrs])
    ndims = (C.c_int32 * max(1, len(shapes)))(*[len(s) for s in shapes])
    hs = (H * max(1, len(ins)))(*[x._h for x in ins])
    outs = (H * max(1, len(shapes)))()
    status = lib.aj_host_callback(C.byref(desc), d.code, ptrs, ndims, len(shapes), hs, len(ins), outs)
    if status != 0:
        _keep_host.pop(id(key), None)  # a failed call takes nothing (release is not called)
    check(status)
    return [Array._own(outs[i]) for i in range(len(shapes))]
