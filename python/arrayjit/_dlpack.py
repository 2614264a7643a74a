"""DLPack both ways: Array.__dlpack__ (DLPack 1.x capsules, read-only flagged,
or the legacy one for consumers that ask for no version) and from_dlpack
(anything with __dlpack__, or a capsule). Zero-copy: the memory is shared,
and arrayjit never writes memory it imported.
"""
import ctypes as C

from ._capi import H, check, lib
from ._core import Array

_api = C.pythonapi
_api.PyCapsule_New.restype = C.py_object
_api.PyCapsule_New.argtypes = [C.c_void_p, C.c_char_p, C.c_void_p]
_api.PyCapsule_GetPointer.restype = C.c_void_p
_api.PyCapsule_GetPointer.argtypes = [C.py_object, C.c_char_p]
_api.PyCapsule_GetName.restype = C.c_char_p
_api.PyCapsule_GetName.argtypes = [C.py_object]
_api.PyCapsule_SetName.restype = C.c_int
_api.PyCapsule_SetName.argtypes = [C.py_object, C.c_char_p]
_api.PyCapsule_IsValid.restype = C.c_int
_api.PyCapsule_IsValid.argtypes = [C.py_object, C.c_char_p]
# In the destructor the capsule is being freed: it is passed as a plain
# address (a py_object would take a reference to a dying object).
_raw = C.PyDLL(None)
_raw_get_name = _raw.PyCapsule_GetName
_raw_get_name.restype = C.c_char_p
_raw_get_name.argtypes = [C.c_void_p]
_raw_get_pointer = _raw.PyCapsule_GetPointer
_raw_get_pointer.restype = C.c_void_p
_raw_get_pointer.argtypes = [C.c_void_p, C.c_char_p]
_raw_err_clear = _raw.PyErr_Clear
_raw_err_clear.restype = None
_raw_err_clear.argtypes = []

_DELETER = C.CFUNCTYPE(None, C.c_void_p)


class _DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device_type", C.c_int32), ("device_id", C.c_int32), ("ndim", C.c_int32),
                ("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16), ("shape", C.c_void_p),
                ("strides", C.c_void_p), ("byte_offset", C.c_uint64)]


class _Managed(C.Structure):  # DLManagedTensor (legacy)
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", C.c_void_p), ("deleter", _DELETER)]


class _ManagedVersioned(C.Structure):  # DLManagedTensorVersioned (DLPack 1.x)
    _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32), ("manager_ctx", C.c_void_p), ("deleter", _DELETER),
                ("flags", C.c_uint64), ("dl_tensor", _DLTensor)]


FLAG_READ_ONLY = 1


@C.CFUNCTYPE(None, C.c_void_p)
def _capsule_destructor(capsule):
    """A capsule nobody consumed: its tensor's deleter runs (a consumer renames
    the capsule "used_..." and calls the deleter itself)."""
    name = _raw_get_name(capsule)
    kind = {b"dltensor": _Managed, b"dltensor_versioned": _ManagedVersioned}.get(name)
    p = _raw_get_pointer(capsule, name) if kind is not None else None
    if p:
        m = kind.from_address(p)
        if m.deleter:
            m.deleter(p)
    _raw_err_clear()


_DESTRUCTOR = C.cast(_capsule_destructor, C.c_void_p)


def _stream_arg(stream):
    if stream is None:
        return None
    if stream == -1:
        return C.c_void_p(-1 & ((1 << 64) - 1))
    return C.c_void_p(int(stream))


def export(a, stream=None, max_version=None, dl_device=None, copy=None):
    """Array.__dlpack__: a DLPack 1.x capsule when the consumer gives
    max_version >= (1, 0) (flagged READ_ONLY: arrayjit's buffers may be
    shared), else the legacy capsule."""
    if dl_device is not None and tuple(dl_device) != a.__dlpack_device__():
        raise BufferError("arrayjit: __dlpack__ to device %s: the array is on %s (copy it with to_device first)"
                          % (tuple(dl_device), a.__dlpack_device__()))
    if copy:
        from ._core import asarray
        a = asarray(a.numpy()) if a.device.type_code == 1 else a + 0
    out = C.c_void_p()
    if max_version is not None and tuple(max_version)[0] >= 1:
        check(lib.aj_to_dlpack_versioned(a._h, _stream_arg(stream), C.byref(out)))
        return _api.PyCapsule_New(out, b"dltensor_versioned", _DESTRUCTOR)
    check(lib.aj_to_dlpack(a._h, _stream_arg(stream), C.byref(out)))
    return _api.PyCapsule_New(out, b"dltensor", _DESTRUCTOR)


def from_dlpack(x, device=None, copy=None):
    """An Array sharing x's memory (anything with __dlpack__, or a capsule);
    arrayjit never writes it. copy=True: a copy instead."""
    if hasattr(x, "__dlpack__"):
        stream = None
        dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (1, 0)
        if dev[0] == 2:  # CUDA: name arrayjit's stream, so the producer orders its writes before it
            s = C.c_void_p()
            check(lib.aj_cuda_current_stream(int(dev[1]), C.byref(s)))
            stream = s.value or 1
        try:
            cap = x.__dlpack__(stream=stream, max_version=(1, 1)) if stream is not None else \
                x.__dlpack__(max_version=(1, 1))
        except TypeError:  # a producer from before DLPack 1.0 (NumPy 1.24, torch 1.13)
            cap = x.__dlpack__(stream=stream) if stream is not None else x.__dlpack__()
    else:
        cap = x
    name = _api.PyCapsule_GetName(cap)
    out = H()
    if name == b"dltensor_versioned":
        p = _api.PyCapsule_GetPointer(cap, name)
        check(lib.aj_from_dlpack_versioned(p, C.byref(out)))
        _api.PyCapsule_SetName(cap, b"used_dltensor_versioned")
    elif name == b"dltensor":
        p = _api.PyCapsule_GetPointer(cap, name)
        check(lib.aj_from_dlpack(p, C.byref(out)))
        _api.PyCapsule_SetName(cap, b"used_dltensor")
    else:
        raise BufferError("from_dlpack: not a DLPack capsule (its name is %r)" % (name,))
    a = Array._own(out.value)
    if copy:
        from ._core import asarray
        a = asarray(a.numpy())
    if device is not None:
        from ._ops import to_device
        a = to_device(a, device)
    return a


# ---- memory lent for writing (aj_array_lend) ----------------------------------------------

_LENT = {}  # context -> the object whose memory an array holds (dropped by _give_back)
_LENT_NEXT = [1]


@_DELETER
def _give_back(context):
    _LENT.pop(context, None)


def lend(obj):
    """An array over the memory of obj (a writable, C-contiguous NumPy array or
    a contiguous CPU torch tensor) that arrayjit may write in place: when the
    array is donated to a compiled call (donate_argnums) or is a temporary
    nothing else holds, a result of its layout is written into that memory,
    where obj then shows it (an optimizer updating a framework's weights with
    no copy). Reads are as from_dlpack's; obj is kept alive while arrays use
    its memory. Do not read or write obj while arrayjit evaluates."""
    from . import _core
    if type(obj).__module__.startswith("torch"):
        if obj.device.type != "cpu" or not obj.is_contiguous():
            raise ValueError("lend: a contiguous CPU tensor is needed, got one on %s%s"
                             % (obj.device, "" if obj.is_contiguous() else ", not contiguous"))
        if obj.requires_grad and obj.is_leaf:
            obj = obj.detach()  # the same memory; torch forbids in-place writes it does not see on the leaf
        ptr, dt, shape = obj.data_ptr(), str(obj.dtype).split(".")[-1], tuple(obj.shape)
    else:
        import numpy as np
        if not isinstance(obj, np.ndarray):
            raise TypeError("lend: a NumPy array or a torch tensor, not %s" % type(obj).__name__)
        if not obj.flags.c_contiguous or not obj.flags.writeable:
            raise ValueError("lend: a writable C-contiguous array is needed (%s)"
                             % ("read-only" if not obj.flags.writeable else "not C-contiguous"))
        ptr, dt, shape = obj.ctypes.data, obj.dtype.name, obj.shape
    d = _core.dtype(dt)
    dims, nd = _core._shape_arg(shape)
    context = _LENT_NEXT[0]
    _LENT_NEXT[0] += 1
    _LENT[context] = obj
    try:
        return _core.new(lib.aj_array_lend, C.c_void_p(ptr), d.code, dims, nd,
                         C.cast(_give_back, C.c_void_p), C.c_void_p(context))
    except BaseException:
        _LENT.pop(context, None)
        raise
