# NumPy and arrayjit (through the C API, ctypes) in one Python process: each
# f32 1024^2 matmul's time, then the core the process's OpenBLAS (NumPy's)
# runs, which arrayjit must leave alone, and aj_host_info(). Run it with the
# process's OpenBLAS on its generic kernels, as Debian 12's on a CPU newer
# than it (bench/README.md, "Host matmul"):
#
#   OPENBLAS_CORETYPE=Prescott OPENBLAS_NUM_THREADS=1 /usr/bin/python3 \
#       bench/numpy_private_blas.py [path/to/libarrayjit.so]   (default: build/)
import ctypes, os, sys, time, numpy as np
ob = ctypes.CDLL("libopenblas.so.0")
ob.openblas_get_corename.restype = ctypes.c_char_p
here = os.path.dirname(os.path.abspath(__file__))
aj = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "libarrayjit.so"))
class A(ctypes.Structure): _fields_ = [("_id", ctypes.c_uint64)]
shape = (ctypes.c_int64 * 2)(1024, 1024)
a, b, c, s = A(), A(), A(), A()
assert aj.aj_random_normal(shape, 2, ctypes.c_double(0), ctypes.c_double(1), 3, ctypes.byref(a)) == 0
assert aj.aj_random_normal(shape, 2, ctypes.c_double(0), ctypes.c_double(1), 3, ctypes.byref(b)) == 0
assert aj.aj_eval(a) == 0 and aj.aj_eval(b) == 0
def aj_mm():
    assert aj.aj_matmul(a, b, ctypes.byref(c)) == 0
    assert aj.aj_eval(c) == 0
    aj.aj_array_release(c)
x = np.random.rand(1024, 1024).astype(np.float32)
def np_mm(): x @ x
for f in (aj_mm, np_mm): f()
for name, f in (("arrayjit", aj_mm), ("numpy", np_mm)):
    t = []
    for _ in range(5):
        t0 = time.perf_counter(); f(); t.append(time.perf_counter() - t0)
    print(f"{name} f32 1024^2 matmul: {sorted(t)[2]*1e3:.1f} ms")
print("process OpenBLAS core after both:", ob.openblas_get_corename().decode())
aj.aj_host_info.restype = ctypes.c_char_p
print(aj.aj_host_info().decode())
