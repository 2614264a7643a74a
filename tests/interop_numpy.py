"""NumPy <-> arrayjit through DLPack, zero-copy both ways, via ctypes against
libarrayjit.so's C API (arrayjit/arrayjit.h, arrayjit/dlpack.h). Run by
tests/test_interop_numpy.cpp: python3 interop_numpy.py /path/to/libarrayjit.so
NumPy 1.24 speaks legacy DLPack (a "dltensor" capsule of a DLManagedTensor).
"""
import ctypes as C
import sys

import numpy as np

lib = C.CDLL(sys.argv[1])


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32),
                ("dtype", DLDataType), ("shape", C.POINTER(C.c_int64)),
                ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


class AjHandle(C.Structure):
    """aj_array: a 64-bit id passed by value (not a pointer)."""
    _fields_ = [("id", C.c_uint64)]


class AjView(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("data", C.c_void_p), ("ndim", C.c_int32), ("shape", C.POINTER(C.c_int64)),
                ("strides", C.POINTER(C.c_int64)), ("dtype", C.c_int32), ("format", C.c_char_p),
                ("itemsize", C.c_int64), ("device_type", C.c_int32), ("device_id", C.c_int32),
                ("readonly", C.c_int32), ("owner", C.c_void_p)]


AJ_I64, AJ_F64 = 2, 4
AJ_VIEW_ANY, AJ_VIEW_C_CONTIGUOUS = 0, 2
lib.aj_last_error.restype = C.c_char_p
lib.aj_arange.argtypes = [C.c_int64, C.c_int, C.POINTER(AjHandle)]
lib.aj_array_release.argtypes = [AjHandle]
lib.aj_view_acquire.argtypes = [AjHandle, C.c_int, C.POINTER(AjView)]
lib.aj_view_release.argtypes = [C.POINTER(AjView)]
lib.aj_to_dlpack.argtypes = [AjHandle, C.c_void_p, C.POINTER(C.c_void_p)]
lib.aj_from_dlpack.argtypes = [C.c_void_p, C.POINTER(AjHandle)]

capsule_new = C.pythonapi.PyCapsule_New
capsule_new.restype = C.py_object
capsule_new.argtypes = [C.c_void_p, C.c_char_p, C.c_void_p]
capsule_pointer = C.pythonapi.PyCapsule_GetPointer
capsule_pointer.restype = C.c_void_p
capsule_pointer.argtypes = [C.py_object, C.c_char_p]
capsule_set_name = C.pythonapi.PyCapsule_SetName
capsule_set_name.argtypes = [C.py_object, C.c_char_p]


def check(status):
    if status != 0:
        raise RuntimeError(lib.aj_last_error().decode())


class AjArray:
    """An arrayjit handle with the DLPack protocol np.from_dlpack asks for."""

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        check(lib.aj_array_release(self.handle))

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __dlpack__(self, stream=None):
        out = C.c_void_p()
        check(lib.aj_to_dlpack(self.handle, None, C.byref(out)))
        # NumPy renames a consumed capsule and calls the tensor's deleter itself.
        return capsule_new(out, b"dltensor", None)

    def view(self, flags=AJ_VIEW_ANY):
        v = AjView()
        v.struct_size = C.sizeof(AjView)
        check(lib.aj_view_acquire(self.handle, flags, C.byref(v)))
        return v


def arange(n, dtype):
    h = AjHandle()
    check(lib.aj_arange(n, dtype, C.byref(h)))
    return AjArray(h)


# arrayjit -> NumPy: an evaluated arrayjit buffer, same address, values checked.
a = arange(1000, AJ_F64)
x = np.from_dlpack(a)
v = a.view(AJ_VIEW_C_CONTIGUOUS)
assert x.ctypes.data == v.data, (hex(x.ctypes.data), hex(v.data))
lib.aj_view_release(C.byref(v))
assert x.dtype == np.float64 and x.shape == (1000,)
assert np.array_equal(x, np.arange(1000.0))
del a  # the export alone keeps the buffer: a new result of the same size must not land in it
ints = arange(1000, AJ_I64)
w = ints.view()
assert w.data != x.ctypes.data
lib.aj_view_release(C.byref(w))
assert np.array_equal(x, np.arange(1000.0))

# NumPy -> arrayjit: a strided NumPy view, imported through its capsule.
base = np.random.default_rng(16).standard_normal((5, 6))
y = base[1:4, ::2]
refs = sys.getrefcount(y)
cap = y.__dlpack__()
h = AjHandle()
check(lib.aj_from_dlpack(capsule_pointer(cap, b"dltensor"), C.byref(h)))
capsule_set_name(cap, b"used_dltensor")  # arrayjit owns it now: the capsule must not delete it
del cap
imported = AjArray(h)
v = imported.view()
assert v.data == y.ctypes.data, (hex(v.data), hex(y.ctypes.data))
assert (v.shape[0], v.shape[1]) == y.shape
assert (v.strides[0], v.strides[1]) == y.strides, ((v.strides[0], v.strides[1]), y.strides)
got = [[C.c_double.from_address(v.data + i * v.strides[0] + j * v.strides[1]).value
        for j in range(y.shape[1])] for i in range(y.shape[0])]
assert np.array_equal(np.array(got), y)
lib.aj_view_release(C.byref(v))

# ...and back out to NumPy: still the same memory.
z = np.from_dlpack(imported)
assert z.ctypes.data == y.ctypes.data and np.shares_memory(z, base) and np.array_equal(z, y)
del z
assert sys.getrefcount(y) > refs  # arrayjit's import still holds NumPy's array
del imported  # the last arrayjit handle: NumPy's deleter runs, once
assert sys.getrefcount(y) == refs, (sys.getrefcount(y), refs)
print("interop numpy: ok")
