#!/usr/bin/env python3
"""arrayjit on a stream PyTorch created, through the C API (ctypes), on a GPU.

PyTorch writes a tensor on its own stream after a long sleep kernel; arrayjit
borrows the memory naming that stream as the producer (the CUDA Array
Interface rule) and computes on it, (1) on arrayjit's own stream, which waits
on an event recorded on PyTorch's, and (2) on PyTorch's stream itself
(aj_cuda_stream_push), ordered after the sleep with no synchronization. Each
result is read back and compared; a missing wait reads the tensor before it
was written. The borrowed memory's release callback must run exactly once.

    AJ_LIB=path/to/libarrayjit.so python3 tests/cuda_torch_stream.py

Prints "skipped: ..." and exits 0 without torch or a GPU; exits 1 on a
failure. bench/device/run.sh runs it on the GPU machine.
"""
import ctypes
import os
import sys


def main():
    try:
        import torch
    except ImportError:
        print("cuda_torch_stream: skipped: no torch")
        return 0
    if not torch.cuda.is_available():
        print("cuda_torch_stream: skipped: no GPU")
        return 0
    lib = ctypes.CDLL(os.environ.get("AJ_LIB", "build/libarrayjit.so"))

    class Array(ctypes.Structure):
        _fields_ = [("_id", ctypes.c_uint64)]

    class View(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_size_t), ("data", ctypes.c_void_p), ("ndim", ctypes.c_int32),
                    ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                    ("dtype", ctypes.c_int32), ("format", ctypes.c_char_p), ("itemsize", ctypes.c_int64),
                    ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32), ("readonly", ctypes.c_int32),
                    ("owner", ctypes.c_void_p)]

    RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    lib.aj_last_error.restype = ctypes.c_char_p
    lib.aj_array_from_cuda_view.argtypes = [ctypes.POINTER(View), ctypes.c_void_p, RELEASE, ctypes.c_void_p,
                                            ctypes.POINTER(Array)]
    lib.aj_multiply.argtypes = [Array, Array, ctypes.POINTER(Array)]
    lib.aj_add.argtypes = [Array, Array, ctypes.POINTER(Array)]
    lib.aj_scalar_f64.argtypes = [ctypes.c_double, ctypes.POINTER(Array)]
    lib.aj_array_read.argtypes = [Array, ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    lib.aj_array_release.argtypes = [Array]
    lib.aj_cuda_stream_push.argtypes = [ctypes.c_int32, ctypes.c_void_p]
    lib.aj_cuda_stream_pop.argtypes = [ctypes.c_int32]
    lib.aj_cuda_current_stream.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
    lib.aj_eval.argtypes = [Array]
    AJ_F32, AJ_DEVICE_CUDA = 3, 2

    def ok(status, what):
        if status != 0:
            raise RuntimeError(f"{what}: status {status}: {lib.aj_last_error().decode()}")

    failures = []
    n = 1 << 22
    releases = []
    release_cb = RELEASE(lambda ctx: releases.append(ctx))
    print(f"cuda_torch_stream: torch {torch.__version__} on {torch.cuda.get_device_name()}")

    def produced_on(stream, value):
        """A tensor PyTorch writes on `stream` after ~50 ms of sleep there."""
        with torch.cuda.stream(stream):
            t = torch.empty(n, device="cuda")
            torch.cuda._sleep(100_000_000)  # cycles: ~50 ms at 2 GHz
            t.fill_(value)
        return t

    def borrow(t, stream):
        shape = (ctypes.c_int64 * 1)(n)
        v = View(struct_size=ctypes.sizeof(View), data=t.data_ptr(), ndim=1, shape=shape, strides=None,
                 dtype=AJ_F32, format=b"f", itemsize=4, device_type=AJ_DEVICE_CUDA, device_id=0, readonly=1,
                 owner=None)
        a = Array()
        ok(lib.aj_array_from_cuda_view(ctypes.byref(v), ctypes.c_void_p(stream.cuda_stream), release_cb, None,
                                       ctypes.byref(a)), "aj_array_from_cuda_view")
        return a

    def times2_plus1(a):
        two, one, p, q = Array(), Array(), Array(), Array()
        ok(lib.aj_scalar_f64(2.0, ctypes.byref(two)), "scalar")
        ok(lib.aj_scalar_f64(1.0, ctypes.byref(one)), "scalar")
        ok(lib.aj_multiply(a, two, ctypes.byref(p)), "aj_multiply")
        ok(lib.aj_add(p, one, ctypes.byref(q)), "aj_add")
        for h in (two, one, p):
            lib.aj_array_release(h)
        return q

    def read(a):
        buf = (ctypes.c_float * n)()
        ok(lib.aj_array_read(a, AJ_F32, buf, n * 4, None), "aj_array_read")
        return buf

    def check(buf, want, what):
        bad = sum(1 for i in range(0, n, 4099) if buf[i] != want) + (buf[n - 1] != want)
        print(f"  {what}: {'ok' if not bad else f'{bad} sampled elements wrong (first {buf[0]}, last {buf[n - 1]})'}")
        if bad:
            failures.append(what)

    # (1) arrayjit's own stream waits on PyTorch's (an event, no synchronize).
    s1 = torch.cuda.Stream()
    t1 = produced_on(s1, 7.0)
    a = borrow(t1, s1)
    y = times2_plus1(a)
    lib.aj_array_release(a)
    check(read(y), 15.0, "on arrayjit's stream, after PyTorch's producer stream")
    lib.aj_array_release(y)

    # (2) On PyTorch's stream itself: enqueued after the sleep and the fill.
    s2 = torch.cuda.Stream()
    t2 = produced_on(s2, 3.0)
    ok(lib.aj_cuda_stream_push(0, ctypes.c_void_p(s2.cuda_stream)), "aj_cuda_stream_push")
    cur = ctypes.c_void_p()
    ok(lib.aj_cuda_current_stream(0, ctypes.byref(cur)), "aj_cuda_current_stream")
    if cur.value != s2.cuda_stream:
        failures.append("current stream after push")
    a = borrow(t2, s2)
    y = times2_plus1(a)
    lib.aj_array_release(a)
    ok(lib.aj_eval(y), "aj_eval")
    # PyTorch, on the same stream, sees arrayjit's work done when its own is.
    s2.synchronize()
    check(read(y), 7.0, "on PyTorch's stream (aj_cuda_stream_push)")
    lib.aj_array_release(y)
    ok(lib.aj_cuda_stream_pop(0), "aj_cuda_stream_pop")
    torch.cuda.synchronize()
    del t1, t2
    # The releases run at a later arrayjit CUDA call once the work is done.
    lib.aj_cuda_current_stream(0, ctypes.byref(cur))
    two = Array()
    ok(lib.aj_scalar_f64(2.0, ctypes.byref(two)), "scalar")
    lib.aj_array_release(two)
    print(f"  releases: {len(releases)} (2 once arrayjit has seen its work done; never more)")
    if len(releases) > 2:
        failures.append("release called more than once")
    print("cuda_torch_stream:", "FAILED: " + ", ".join(failures) if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
