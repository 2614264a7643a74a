"""libarrayjit.so through ctypes: finding the library, the C functions'
signatures, and turning a failed status into a Python exception.

Why ctypes over the C API rather than a compiled extension: the package then
builds nothing (the project's build stays within its CI time), runs on any
Python 3 with the same library the C and C++ programs use, and drives
arrayjit exactly as a foreign runtime does, so the C API is what the Python
tests exercise. The cost is a microsecond or so per call, which only tracing
pays: compiled calls replay without calling back into Python.

The signatures below are the C header's (arrayjit/arrayjit.h and
arrayjit/dlpack.h), one line per function: name, result, parameters, in the
codes of _CODES. python/tests/test_c_api_coverage.py derives the same lines
from the header and fails when they differ or when a C function has no use
in the package (or no reason for having none).
"""
import ctypes as C
import os
import sys
import threading

# aj_array / aj_function are a struct of one uint64 passed by value: the
# same registers as a uint64 on every ABI arrayjit runs on (SysV x86-64,
# AArch64), and much cheaper through ctypes than a Structure.
H = C.c_uint64
HP = C.POINTER(H)

_CODES = {
    "a": H, "ap": HP, "fn": H, "fnp": HP, "i32": C.c_int32, "i64": C.c_int64, "u32": C.c_uint32,
    "u64": C.c_uint64, "f64": C.c_double, "sz": C.c_size_t, "s": C.c_char_p, "p": C.c_void_p,
    "st": C.c_int32, "-": None,
}

DECLS = """
aj_api_version u32
aj_version s
aj_host_info s
aj_last_error s
aj_set_error - s
aj_set_caller - s i32
aj_dtype_name s i32
aj_dtype_itemsize sz i32
aj_array_release st a
aj_array_retain st a ap
aj_live_handles sz
aj_array_from_data st p i32 p i32 ap
aj_array_borrow st p i32 p i32 p p ap
aj_array_lend st p i32 p i32 p p ap
aj_zeros st p i32 i32 ap
aj_ones st p i32 i32 ap
aj_full st p i32 f64 i32 ap
aj_arange st i64 i32 ap
aj_arange_range st f64 f64 f64 i32 ap
aj_linspace st f64 f64 i64 i32 ap
aj_eye st i64 i64 i64 i32 ap
aj_zeros_like st a p ap
aj_ones_like st a p ap
aj_full_like st a f64 p ap
aj_random_seed - u64
aj_random_uniform st p i32 f64 f64 i32 ap
aj_random_normal st p i32 f64 f64 i32 ap
aj_random_randint st p i32 i64 i64 i32 ap
aj_random_permutation st i64 ap
aj_random_bernoulli st p i32 f64 ap
aj_random_exponential st p i32 f64 i32 ap
aj_random_gumbel st p i32 f64 f64 i32 ap
aj_random_truncated_normal st p i32 f64 f64 i32 ap
aj_random_gamma st p i32 f64 f64 i32 ap
aj_random_beta st p i32 f64 f64 i32 ap
aj_random_poisson st p i32 f64 ap
aj_random_categorical st a i32 ap
aj_random_multinomial st i64 a ap
aj_random_choice st i64 i64 i32 a ap
aj_random_shuffle st a i32 ap
aj_random_fold_in st a i64 ap
aj_random_key st i64 ap
aj_random_split st a i32 ap
aj_random_bits st a p i32 ap
aj_random_key_uniform st a p i32 f64 f64 i32 ap
aj_random_key_normal st a p i32 f64 f64 i32 ap
aj_random_key_bernoulli st a p i32 f64 ap
aj_scalar_f64 st f64 ap
aj_scalar_i64 st i64 ap
aj_scalar_bool st i32 ap
aj_scalar_u64 st u64 ap
aj_op_names s i32
aj_nan_to_num st a f64 p p ap
aj_var st a p i32 f64 i32 ap
aj_std st a p i32 f64 i32 ap
aj_diff st a i32 i32 ap
aj_isclose st a a f64 f64 i32 ap
aj_allclose st a a f64 f64 i32 ap
aj_array_equal st a a i32 ap
aj_quantile st a f64 p i32 ap
aj_percentile st a f64 p i32 ap
aj_median st a p i32 ap
aj_cumsum st a p ap
aj_cumprod st a p ap
aj_cummax st a p ap
aj_cummin st a p ap
aj_logcumsumexp st a p ap
aj_cumulative_sum st a p p i32 ap
aj_sort st a i32 ap
aj_argsort st a i32 ap
aj_partition st a p i32 i32 ap
aj_argpartition st a p i32 i32 ap
aj_topk st a i64 i32 ap ap
aj_searchsorted st a a i32 ap
aj_digitize st a a i32 ap
aj_bincount st a a i64 p ap
aj_argwhere st a p i64 ap
aj_unique st a p f64 ap
aj_masked_select st a a p f64 ap
aj_nonzero st a p i64 ap i32
aj_softmax st a p i32 ap
aj_log_softmax st a p i32 ap
aj_logsumexp st a p i32 i32 ap
aj_take st a a p ap
aj_take_along_axis st a a i32 ap
aj_scatter_add st a a a i32 ap
aj_one_hot st a i64 i32 ap
aj_scatter st a a a i32 ap
aj_scatter_add_along_axis st a a a i32 ap
aj_put_along_axis st a a a i32 ap
aj_slice_update st a p p p i32 a ap
aj_slice_add st a p p p i32 a ap
aj_pad st a p i32 i32 f64 ap
aj_roll st a p p i32 ap
aj_stop_gradient st a ap
aj_sum_to_shape st a p i32 ap
aj_argmax st a p i32 ap
aj_argmin st a p i32 ap
aj_matmul st a a ap
aj_linalg_cholesky st a i32 ap
aj_linalg_solve st a a ap
aj_linalg_inv st a ap
aj_linalg_triangular_solve st a a i32 i32 i32 ap
aj_linalg_lu_factor st a ap i32
aj_linalg_lu st a ap i32
aj_linalg_qr st a i32 ap i32
aj_linalg_svd st a i32 ap i32
aj_linalg_svdvals st a ap
aj_linalg_eigh st a i32 ap i32
aj_linalg_eigvalsh st a i32 ap
aj_linalg_det st a ap
aj_linalg_slogdet st a ap i32
aj_linalg_lstsq st a a p ap i32
aj_linalg_pinv st a f64 ap
aj_linalg_norm st a i32 f64 p i32 i32 ap
aj_linalg_vector_norm st a f64 p i32 i32 ap
aj_linalg_matrix_norm st a i32 f64 i32 ap
aj_linalg_matrix_power st a i64 ap
aj_linalg_matrix_rank st a p ap
aj_conv_general st a a p i32 i32 p i32 p i32 p i32 i64 s s s ap
aj_conv_transpose st a a p i32 p i32 p i32 i64 p i32 ap
aj_max_pool st a p i32 p i32 p i32 i32 p i32 ap
aj_avg_pool st a p i32 p i32 p i32 i32 i32 ap
aj_reduce_window st a s p i32 p i32 p i32 ap
aj_interpolate st a p i32 s i32 ap
aj_astype st a i32 ap
aj_to_device st a i32 i32 ap
aj_reshape st a p i32 ap
aj_transpose st a p i32 ap
aj_broadcast_to st a p i32 ap
aj_expand_dims st a i32 ap
aj_squeeze st a p i32 ap
aj_slice st a p p p i32 ap
aj_slice_axis st a i32 i64 i64 i64 ap
aj_concatenate st ap sz i32 ap
aj_stack st ap sz i32 ap
aj_flip st a p i32 ap
aj_swapaxes st a i32 i32 ap
aj_moveaxis st a p p i32 ap
aj_tile st a p i32 ap
aj_repeat st a p i64 p ap
aj_split st a p i32 i32 ap
aj_array_split st a i64 i32 ap
aj_unstack st a i32 ap i64
aj_broadcast_arrays st ap sz ap
aj_meshgrid st ap sz i32 ap
aj_tril st a i64 ap
aj_triu st a i64 ap
aj_diag st a i64 ap
aj_diagonal st a i64 i32 i32 ap
aj_trace st a i64 i32 i32 ap
aj_atleast_1d st a ap
aj_atleast_2d st a ap
aj_atleast_3d st a ap
aj_logspace st f64 f64 i64 f64 i32 ap
aj_tensordot st a a p p i32 ap
aj_cross st a a i32 ap
aj_einsum st s ap sz ap
aj_einsum_path st s p p sz p p sz p
aj_eval st a
aj_eval_many st ap sz
aj_eval_into st a p sz
aj_array_read st a i32 p sz p
aj_array_item_f64 st a p
aj_array_item_i64 st a p
aj_array_dtype st a p
aj_array_ndim st a p
aj_array_shape st a p i32
aj_array_size st a p
aj_array_device st a p p
aj_array_is_evaluated st a p
aj_array_to_string st a p sz p
aj_array_dump st a p sz p
aj_array_format st a i32 p sz p
aj_profile_begin st s
aj_profile_end st
aj_profile_summary st sz p sz p
aj_profile_range_push st s
aj_profile_range_pop st
aj_explain st ap sz p sz p
aj_to_dot st ap sz i32 p sz p
aj_jit_kernel_ir st a i32 p sz p
aj_set_log st s
aj_llvm_version s
aj_jit_enabled i32
aj_jit_set_enabled - i32
aj_interrupt - i32
aj_jit_num_threads i32
aj_jit_set_num_threads st i32
aj_jit_cache_dir st p sz p
aj_jit_set_cache_dir st s
aj_jit_clear_memory_cache st
aj_jit_tiers i32
aj_jit_set_tiers st i32
aj_jit_finish_tier_ups st
aj_trim_memory st
aj_set_memory_limit st sz
aj_memory_limit sz
aj_cached_bytes sz
aj_set_debug - i32
aj_debug i32
aj_printoptions st p
aj_set_printoptions st p
aj_stats st p
aj_reset_stats -
aj_save st s a
aj_load st s ap
aj_savez st s p ap sz
aj_savez_compressed st s p ap sz
aj_load_npz st s ap sz p p sz p
aj_save_safetensors st s p ap sz p p sz
aj_load_safetensors st s ap sz p p sz p
aj_safetensors_metadata st s p sz p
aj_function_new st p fnp
aj_function_release st fn
aj_function_call st fn ap ap
aj_function_call_donate st fn ap p ap
aj_vjp st p p i32 i32 ap ap ap ap
aj_jvp st p p i32 i32 ap ap ap ap
aj_view_acquire st a i32 p
aj_view_release - p
aj_array_from_view st p p p ap
aj_array_copy_view st p ap
aj_array_from_cuda_view st p p p p ap
aj_cuda_current_stream st i32 p
aj_cuda_stream_push st i32 p
aj_cuda_stream_pop st i32
aj_cuda_available i32
aj_cuda_device_count i32
aj_cuda_unavailable_reason st p sz p
aj_cuda_compiler_available i32
aj_cuda_compiler_reason st p sz p
aj_cuda_kernel_source st ap sz p sz p
aj_cuda_trim_memory st i32
aj_cuda_release_borrowed st i32
aj_host_callback st p i32 p p i32 ap i32 ap
aj_distributed_init st i32 p p
aj_distributed_group_info st i64 p p
aj_distributed_split st i64 i32 i32 p
aj_distributed_set_timeout st f64
aj_distributed_set_overlap st i32
aj_distributed_overlap st p
aj_distributed_all_reduce st a i32 i64 ap
aj_distributed_all_gather st a i64 ap
aj_distributed_reduce_scatter st a i32 i64 ap
aj_distributed_broadcast st a i32 i64 ap
aj_distributed_send st a i32 i64 ap
aj_distributed_recv st p i32 i32 i32 i64 ap
aj_distributed_average_gradients st ap sz i64 i64 ap
aj_to_dlpack_versioned st a p p
aj_to_dlpack st a p p
aj_from_dlpack_versioned st p ap
aj_from_dlpack st p ap
"""


def _candidates():
    env = os.environ.get("ARRAYJIT_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    try:  # written by `cmake --install` next to the installed package
        from ._install import LIBRARY
        yield LIBRARY
    except ImportError:
        pass
    # The source tree: python/arrayjit -> build/ (./dev's build directory).
    root = os.path.dirname(os.path.dirname(here))
    for d in ("build", "build-release", "build-asan"):
        yield os.path.join(root, d, "libarrayjit.so")


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return C.CDLL(path), path
        tried.append(path)
    raise ImportError("arrayjit: libarrayjit.so not found (tried " + ", ".join(tried) +
                      "); build it with ./dev build, or set ARRAYJIT_LIBRARY to its path")


lib, LIBRARY_PATH = _load()

def declare(name, ret, *params):
    """Gives lib.<name> its signature (codes of _CODES) and returns it."""
    f = getattr(lib, name)
    f.restype = _CODES[ret]
    f.argtypes = [_CODES[p] for p in params]
    return f


for _line in DECLS.strip().splitlines():
    declare(*_line.split())

# The ops the header declares from its lists (AJ_UNARY_OPS, ...): their
# names come from the library (aj_op_names), their signatures from the list.
_LIST_SIGNATURES = {0: ("a", "ap"), 1: ("a", "a", "ap"), 2: ("a", "a", "a", "ap"),
                    3: ("a", "p", "i32", "i32", "ap"), 4: ("a", "a", "ap")}
OP_LISTS = {}
for _list, _params in _LIST_SIGNATURES.items():
    OP_LISTS[_list] = lib.aj_op_names(_list).decode().split()
    for _name in OP_LISTS[_list]:
        declare("aj_" + _name, "st", *_params)

API_MAJOR, API_MINOR = 1, 9
_v = lib.aj_api_version()
if (_v >> 16) != API_MAJOR or (_v & 0xFFFF) < API_MINOR:
    raise ImportError("arrayjit: %s has C API %d.%d; this package needs %d.%d or later"
                      % (LIBRARY_PATH, _v >> 16, _v & 0xFFFF, API_MAJOR, API_MINOR))

AJ_OK, AJ_ERROR_USER, AJ_ERROR_RUNTIME, AJ_ERROR_INTERNAL, AJ_ERROR_HANDLE = 0, 1, 2, 3, 4


class ArrayJitError(Exception):
    """An error arrayjit reported. Its subclasses also derive from the
    built-in exception a Python user would catch for it."""


class UserError(ArrayJitError, ValueError):
    """A bad argument or request (shapes, dtypes, axes...); nothing changed."""


class RuntimeFailure(ArrayJitError, RuntimeError):
    """Out of memory, a compile failure, a device error, an interrupt."""


class InternalError(ArrayJitError, RuntimeError):
    """A bug in arrayjit: please report it."""


class HandleError(ArrayJitError, ValueError):
    """An array used where it no longer exists: most often a value made
    inside a traced function (grad, compile) kept and used after it."""


_BY_STATUS = {AJ_ERROR_USER: UserError, AJ_ERROR_RUNTIME: RuntimeFailure,
              AJ_ERROR_INTERNAL: InternalError, AJ_ERROR_HANDLE: HandleError}

# A Python exception raised inside a callback arrayjit called (a traced
# function, a derivative rule, a host callback): kept per thread and raised
# again, as it was, by the check() of the call that ran the callback.
_pending = threading.local()


def keep_exception(exc):
    _pending.exc = exc
    lib.aj_set_error(("%s: %s" % (type(exc).__name__, exc)).encode(errors="replace"))


def check(status):
    if status == 0:
        return
    exc = getattr(_pending, "exc", None)
    if exc is not None:
        _pending.exc = None
        raise exc
    msg = lib.aj_last_error().decode(errors="replace")
    if msg.startswith("aj_"):  # "aj_add: shapes ..." -> "add: shapes ...": the Python name
        msg = msg[3:]
    if status == AJ_ERROR_HANDLE:
        msg += (" (an arrayjit array used after it ended: one donated to a compiled call, or a value "
                "made inside a traced function, grad or compile, which lives only while that function runs)")
    raise _BY_STATUS.get(status, ArrayJitError)(msg)


# ---- the caller's line ------------------------------------------------------------
# Before each op the package tells the library the Python line that called it
# (aj_set_caller), so errors, explain and evaluation failures name the user's
# file and line, not the package's. Set only when it changed on this thread.
_PKG_DIR = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
_last = threading.local()
_in_package = {}  # a code object's file name -> whether it is one of this package's


def _ours(filename):
    r = _in_package.get(filename)
    if r is None:
        r = _in_package[filename] = os.path.realpath(os.path.dirname(os.path.abspath(filename))) == _PKG_DIR
    return r


def set_caller():
    f = sys._getframe(1)
    while f is not None and _ours(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return
    key = (f.f_code.co_filename, f.f_lineno)
    if getattr(_last, "key", None) != key:
        _last.key = key
        lib.aj_set_caller(key[0].encode(errors="replace"), key[1])
