"""The Array type, dtypes, and the helpers every op uses.

An Array owns one aj_array handle of the C API; it is lazy (a node of the
traced graph) until something reads its values (printing, NumPy conversion,
item(), eval()). Arrays are immutable, as JAX's: `x.at[i].set(v)` is the
functional update.
"""
import builtins
import ctypes as C
import numbers

from ._capi import H, check, lib, set_caller

# ---- dtypes ---------------------------------------------------------------------------


class DType:
    """An arrayjit dtype: bool_, int8, int16, int32, int64, uint8, uint16,
    uint32, uint64, float16, float32, float64, bfloat16.
    Compares equal to its NumPy name ("float32"), arrayjit's ("f32") and the
    NumPy dtype of that name."""

    __slots__ = ("code", "name", "short", "itemsize", "kind")

    def __init__(self, code, name, short, kind):
        self.code = code
        self.name = name
        self.short = short
        self.itemsize = lib.aj_dtype_itemsize(code)
        self.kind = kind  # "b", "i", "u", "f" (NumPy's dtype.kind)

    def __repr__(self):
        return "arrayjit." + ("bool_" if self.name == "bool" else self.name)

    def __str__(self):
        return self.name

    def __eq__(self, other):
        try:
            return self is dtype(other)
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self):
        return hash(self.name)

    @property
    def is_floating(self):
        return self.kind == "f"

    def to_numpy(self):
        import numpy as np
        if self.name == "bfloat16":
            raise TypeError("bfloat16 has no NumPy dtype (NumPy has no bfloat16); use astype(float32) first")
        return np.dtype(self.name)


bool_ = DType(0, "bool", "bool", "b")
int32 = DType(1, "int32", "i32", "i")
int64 = DType(2, "int64", "i64", "i")
float32 = DType(3, "float32", "f32", "f")
float64 = DType(4, "float64", "f64", "f")
float16 = DType(5, "float16", "f16", "f")
bfloat16 = DType(6, "bfloat16", "bf16", "f")
uint8 = DType(7, "uint8", "u8", "u")
int8 = DType(8, "int8", "i8", "i")
int16 = DType(9, "int16", "i16", "i")
uint16 = DType(10, "uint16", "u16", "u")
uint32 = DType(11, "uint32", "u32", "u")
uint64 = DType(12, "uint64", "u64", "u")
_BY_CODE = {d.code: d for d in (bool_, int32, int64, float32, float64, float16, bfloat16,
                                uint8, int8, int16, uint16, uint32, uint64)}
_BY_NAME = {}
for _d in _BY_CODE.values():
    _BY_NAME[_d.name] = _d
    _BY_NAME[_d.short] = _d
_BY_NAME.update({"bool_": bool_, "float": float64, "int": int64, "half": float16, "double": float64})
for _code in _BY_CODE:  # the library's own names must be the ones above
    assert lib.aj_dtype_name(_code).decode() == _BY_CODE[_code].short


def dtype(x):
    """The arrayjit dtype named by x: a DType, a name ("float32", "f32"), a
    NumPy dtype or scalar type, or Python's bool, int, float."""
    if isinstance(x, DType):
        return x
    if x is builtins.bool:
        return bool_
    if x is builtins.int:
        return int64
    if x is builtins.float:
        return float64
    if isinstance(x, str):
        d = _BY_NAME.get(x)
        if d is None:
            try:  # NumPy's spellings: "u2", "<i4", "uint8", "B"
                import numpy as np
                d = _BY_NAME.get(np.dtype(x).name)
            except (ImportError, TypeError):
                d = None
        if d is None:
            raise TypeError("arrayjit has no dtype %r (it has %s)"
                            % (x, ", ".join(d.name for d in _BY_CODE.values())))
        return d
    name = getattr(x, "name", None)  # a NumPy dtype
    if name is None and isinstance(x, type):
        try:
            import numpy as np
            name = np.dtype(x).name
        except TypeError:
            name = None
    if isinstance(name, str):
        d = _BY_NAME.get(name)
        if d is not None:
            return d
        raise TypeError("arrayjit has no dtype for %s (it has %s)"
                        % (name, ", ".join(d.name for d in _BY_CODE.values())))
    raise TypeError("not a dtype: %r" % (x,))


def _code(d):
    return dtype(d).code


# ---- arrays -----------------------------------------------------------------------------


def _i64s(values):
    values = [_index(v) for v in values]
    return (C.c_int64 * builtins.max(1, len(values)))(*values), len(values)


def _i32s(values):
    values = [_index(v) for v in values]
    return (C.c_int32 * builtins.max(1, len(values)))(*values), len(values)


def _index(v):
    try:
        return v.__index__()
    except AttributeError:
        raise TypeError("expected an integer, got %r" % (v,)) from None


def _shape_arg(shape):
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    return _i64s(tuple(shape))


def _axes_arg(axis):
    """(pointer, n) for an axes parameter: None -> all (NULL)."""
    if axis is None:
        return None, 0
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    arr, n = _i32s(tuple(axis))
    return arr, n


def _axis_ptr(axis):
    """A const int32_t* axis: None -> NULL."""
    if axis is None:
        return None
    return C.byref(C.c_int32(_index(axis)))


class Array:
    """A lazy array of arrayjit (NumPy's operators and methods)."""

    __slots__ = ("_h", "__weakref__")
    __array_priority__ = 100  # NumPy defers to our reflected operators

    def __init__(self, *args, **kwargs):
        raise TypeError("make arrays with arrayjit.asarray, arrayjit.zeros, ... (not Array(...))")

    @classmethod
    def _own(cls, handle):
        a = object.__new__(cls)
        a._h = handle
        return a

    def __del__(self):
        h = getattr(self, "_h", 0)
        if h and lib is not None:
            self._h = 0
            lib.aj_array_release(h)  # a handle ended with its trace is already gone: ignored

    # ---- queries (no evaluation) ----
    @property
    def dtype(self):
        out = C.c_int32()
        check(lib.aj_array_dtype(self._h, C.byref(out)))
        return _BY_CODE[out.value]

    @property
    def ndim(self):
        out = C.c_int32()
        check(lib.aj_array_ndim(self._h, C.byref(out)))
        return out.value

    @property
    def shape(self):
        nd = self.ndim
        buf = (C.c_int64 * builtins.max(1, nd))()
        check(lib.aj_array_shape(self._h, buf, nd))
        return tuple(buf[:nd])

    @property
    def size(self):
        out = C.c_int64()
        check(lib.aj_array_size(self._h, C.byref(out)))
        return out.value

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    @property
    def device(self):
        t, i = C.c_int32(), C.c_int32()
        check(lib.aj_array_device(self._h, C.byref(t), C.byref(i)))
        return Device(t.value, i.value)

    def is_evaluated(self):
        out = C.c_int()
        check(lib.aj_array_is_evaluated(self._h, C.byref(out)))
        return builtins.bool(out.value)

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d array")
        return shape[0]

    # ---- evaluation and reading out ----
    def eval(self):
        """Evaluates now (and everything it needs); returns self."""
        set_caller()
        check(lib.aj_eval(self._h))
        return self

    block_until_ready = eval

    def _text(self, style):
        set_caller()
        n = C.c_size_t()
        check(lib.aj_array_format(self._h, style, None, 0, C.byref(n)))
        buf = C.create_string_buffer(n.value + 1)
        check(lib.aj_array_format(self._h, style, buf, n.value + 1, None))
        return buf.value.decode()

    def __repr__(self):
        if not self._h:
            return "array(<released>)"
        return self._text(2)  # AJ_FORMAT_NUMPY_REPR: as NumPy's repr

    def __str__(self):
        return self._text(1)  # AJ_FORMAT_STR: as NumPy's str

    def __format__(self, spec):
        if self.ndim == 0 and spec:
            return format(self.item(), spec)
        return format(str(self), spec)

    def numpy(self):
        """A NumPy copy of the values (evaluating first)."""
        import numpy as np
        d = self.dtype
        out = np.empty(self.shape, dtype=d.to_numpy() if d is not bfloat16 else np.float32)
        set_caller()
        check(lib.aj_array_read(self._h, d.code if d is not bfloat16 else float32.code,
                                out.ctypes.data_as(C.c_void_p), out.nbytes, None))
        return out

    def __array__(self, dtype=None, copy=None):
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def tolist(self):
        return self.numpy().tolist()

    def item(self):
        if self.size != 1:
            raise ValueError("item(): the array has %d elements, not 1" % self.size)
        d = self.dtype
        set_caller()
        if d.kind == "f":
            out = C.c_double()
            check(lib.aj_array_item_f64(self._h, C.byref(out)))
            return out.value
        out = C.c_int64()
        check(lib.aj_array_item_i64(self._h, C.byref(out)))
        if d is uint64:  # the u64's bits, as the int64 it wraps to
            return out.value & ((1 << 64) - 1)
        return builtins.bool(out.value) if d is bool_ else out.value

    def __bool__(self):
        if self.size != 1:
            raise ValueError("the truth value of an array with more than one element is ambiguous; "
                             "use a.any() or a.all()")
        return builtins.bool(self.item())

    def __float__(self):
        return builtins.float(self.item())

    def __int__(self):
        return builtins.int(self.item())

    def __index__(self):
        if self.dtype.kind not in "bi" or self.ndim != 0:
            raise TypeError("only 0-d integer arrays can be used as an index")
        return builtins.int(self.item())

    def __complex__(self):
        return complex(self.item())

    __hash__ = None

    def __iter__(self):
        n = len(self)
        for i in range(n):
            yield self[i]

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):  # pickling: the values, through NumPy
        return (asarray, (self.numpy(),))

    # ---- DLPack ----
    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        from . import _dlpack
        return _dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        dev = self.device
        return (dev.type_code, dev.index)

    # ---- operators ----
    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("subtract", self, o)
    def __rsub__(self, o): return _binary("subtract", o, self)
    def __mul__(self, o): return _binary("multiply", self, o)
    def __rmul__(self, o): return _binary("multiply", o, self)
    def __truediv__(self, o): return _binary("true_divide", self, o)
    def __rtruediv__(self, o): return _binary("true_divide", o, self)
    def __floordiv__(self, o): return _binary("floor_divide", self, o)
    def __rfloordiv__(self, o): return _binary("floor_divide", o, self)
    def __mod__(self, o): return _binary("mod", self, o)
    def __rmod__(self, o): return _binary("mod", o, self)
    def __pow__(self, o): return _binary("pow", self, o)
    def __rpow__(self, o): return _binary("pow", o, self)
    def __matmul__(self, o): return _binary("matmul", self, o)
    def __rmatmul__(self, o): return _binary("matmul", o, self)
    def __divmod__(self, o): return (self // o, self % o)
    def __and__(self, o): return _binary("bitwise_and", self, o)
    def __rand__(self, o): return _binary("bitwise_and", o, self)
    def __or__(self, o): return _binary("bitwise_or", self, o)
    def __ror__(self, o): return _binary("bitwise_or", o, self)
    def __xor__(self, o): return _binary("bitwise_xor", self, o)
    def __rxor__(self, o): return _binary("bitwise_xor", o, self)
    def __lshift__(self, o): return _binary("left_shift", self, o)
    def __rlshift__(self, o): return _binary("left_shift", o, self)
    def __rshift__(self, o): return _binary("right_shift", self, o)
    def __rrshift__(self, o): return _binary("right_shift", o, self)
    def __eq__(self, o): return _binary("equal", self, o)
    def __ne__(self, o): return _binary("not_equal", self, o)
    def __lt__(self, o): return _binary("less", self, o)
    def __le__(self, o): return _binary("less_equal", self, o)
    def __gt__(self, o): return _binary("greater", self, o)
    def __ge__(self, o): return _binary("greater_equal", self, o)
    def __neg__(self): return _unary("negative", self)
    def __pos__(self): return self
    def __abs__(self): return _unary("abs", self)

    def __invert__(self):
        return _unary("bitwise_invert", self)

    # ---- indexing ----
    def __getitem__(self, key):
        from ._indexing import getitem
        return getitem(self, key)

    def __setitem__(self, key, value):
        raise TypeError("arrayjit arrays are immutable: use x = x.at[%s].set(value) (or .add)"
                        % ("..." if key is Ellipsis else "index"))

    @property
    def at(self):
        from ._indexing import At
        return At(self)

    # ---- methods as NumPy's (defined in _methods.py, bound below) ----


class Device:
    __slots__ = ("type_code", "index")

    def __init__(self, type_code, index):
        self.type_code, self.index = type_code, index

    @property
    def platform(self):
        return {1: "cpu", 2: "cuda", 3: "cuda_host"}.get(self.type_code, "device%d" % self.type_code)

    def __repr__(self):
        return self.platform if self.type_code == 1 else "%s:%d" % (self.platform, self.index)

    def __eq__(self, other):
        if isinstance(other, str):
            return repr(self) == other or (other == "cuda" and self.type_code == 2 and self.index == 0)
        return isinstance(other, Device) and (self.type_code, self.index) == (other.type_code, other.index)

    def __hash__(self):
        return hash((self.type_code, self.index))


# ---- making arrays -----------------------------------------------------------------------


def _handles_of(args):
    # Arrays pass as their handles; `args` keeps them (and temporaries made by
    # operand()) alive until the call returns.
    return [a._h if isinstance(a, Array) else a for a in args]


def new(fn, *args):
    """Calls the C function fn(*args, &out) and returns out as an Array;
    Arrays among args pass as their handles."""
    out = H()
    check(fn(*_handles_of(args), C.byref(out)))
    return Array._own(out.value)


def new_many(fn, n, *args, count_after=False):
    """fn(*args, outs) (count_after: fn(*args, outs, n)) writing n handles."""
    outs = (H * builtins.max(1, n))()
    if count_after:
        check(fn(*_handles_of(args), outs, n))
    else:
        check(fn(*_handles_of(args), outs))
    return [Array._own(outs[i]) for i in range(n)]


def scalar(v):
    """A weak scalar handle for a Python (or NumPy) scalar: it takes the other
    operand's dtype in elementwise ops, as a literal does in C++."""
    if isinstance(v, (builtins.bool,)) or type(v).__name__ == "bool_":
        return new(lib.aj_scalar_bool, 1 if v else 0)
    if isinstance(v, numbers.Integral):
        v = builtins.int(v)
        if (1 << 63) <= v < (1 << 64):
            return new(lib.aj_scalar_u64, v)
        if not -(1 << 63) <= v < (1 << 63):
            raise OverflowError("integer %d does not fit int64 or uint64" % v)
        return new(lib.aj_scalar_i64, v)
    if isinstance(v, numbers.Real):
        return new(lib.aj_scalar_f64, builtins.float(v))
    raise TypeError("not a number: %r" % (v,))


def operand(x):
    """An Array for an op's operand: Arrays as they are, Python scalars weak,
    anything else through asarray (NumPy arrays, lists)."""
    if isinstance(x, Array):
        return x
    if isinstance(x, (numbers.Number,)) and not isinstance(x, complex):
        return scalar(x)
    if type(x).__module__ == "numpy" and getattr(x, "ndim", None) == 0 and type(x).__name__ != "ndarray":
        return scalar(x.item())
    return asarray(x)


_binary_fns = {}


def _binary(name, a, b):
    set_caller()
    fn = _binary_fns.get(name)
    if fn is None:
        fn = _binary_fns[name] = getattr(lib, "aj_" + name)
    if not isinstance(a, Array) and not isinstance(b, Array):
        return NotImplemented
    try:
        ra, rb = operand(a), operand(b)
    except TypeError:
        return NotImplemented
    return new(fn, ra._h, rb._h)


def _unary(name, x):
    set_caller()
    return new(getattr(lib, "aj_" + name), operand(x))


def asarray(obj, dtype=None, copy=None):
    """An Array of obj: an Array (converted when dtype differs), anything with
    __dlpack__ (zero-copy, read-only), a NumPy array, a list, a scalar (copied)."""
    set_caller()
    if isinstance(obj, Array):
        return obj if dtype is None else obj.astype(dtype)
    import numpy as np
    if dtype is not None:
        d = globals()["dtype"](dtype)
    else:
        d = None
    if isinstance(obj, np.ndarray) or not hasattr(obj, "__dlpack__"):
        if d is bfloat16:
            arr = np.asarray(obj, dtype=np.float32)
        else:
            arr = np.asarray(obj, dtype=None if d is None else d.to_numpy())
        if arr.dtype.kind == "O":
            raise TypeError("cannot make an arrayjit array from %r" % (type(obj).__name__,))
        src = globals()["dtype"](arr.dtype)
        if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
            arr = arr.copy(order="C")
        shape, nd = _shape_arg(arr.shape)
        out = new(lib.aj_array_from_data, arr.ctypes.data_as(C.c_void_p) if arr.size else None, src.code, shape, nd)
        return out if d is None or d is src else out.astype(d)
    from . import _dlpack
    out = _dlpack.from_dlpack(obj)
    return out if d is None else out.astype(d)


array = asarray
from_numpy = asarray
