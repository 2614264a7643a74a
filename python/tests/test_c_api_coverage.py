"""The package covers the C API by construction: its signature table is the
header's (derived here again from arrayjit.h and dlpack.h), and every C
function is used by some Python function, or is listed below with the
reason it is not."""
import os
import re

import pytest

from arrayjit import _capi

ROOT = os.environ.get("ARRAYJIT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)
HEADERS = [os.path.join(ROOT, "core", "include", "arrayjit", h) for h in ("arrayjit.h", "dlpack.h")]
PACKAGE = os.path.join(os.path.dirname(_capi.__file__))

# C functions the package does not call, and why.
NOT_USED = {
    "aj_array_borrow": "asarray copies NumPy memory and from_dlpack shares it with its owner's lifetime rules; a "
                       "raw pointer with a C release callback has no safe Python spelling",
    "aj_eval_into": "the array would go on borrowing caller memory: numpy() and from_dlpack cover reading out",
    "aj_array_from_view": "from_dlpack is Python's zero-copy import (with the owner kept alive by DLPack)",
    "aj_array_copy_view": "asarray copies through NumPy",
    "aj_array_from_cuda_view": "from_dlpack imports CUDA memory (torch, CuPy) with the stream rule",
    "aj_view_acquire": "__dlpack__ and numpy() read values out",
    "aj_view_release": "(aj_view_acquire's)",
    "aj_array_to_string": "str and repr use aj_array_format (NumPy's styles); AJ_FORMAT_REPR is the same text",
}

_T = {"aj_array": "a", "aj_array*": "ap", "const aj_array*": "ap", "aj_function": "fn", "aj_function*": "fnp",
      "int64_t": "i64", "int32_t": "i32", "int": "i32", "double": "f64", "size_t": "sz", "const char*": "s",
      "uint64_t": "u64", "uint32_t": "u32", "aj_status": "st"}
_I32 = {"aj_dtype", "aj_device_type", "aj_pad_mode", "aj_qr_mode", "aj_norm_ord", "aj_padding_mode",
        "aj_format_style", "aj_op_list", "aj_reduce_op"}


def code(t):
    t = re.sub(r"\s*\*", "*", " ".join(t.split()))
    if t in _T:
        return _T[t]
    if t in _I32:
        return "i32"
    if t.endswith("*") or t in ("aj_release_fn", "aj_trace_fn"):
        return "p"  # other pointers pass as void*
    raise AssertionError("a C type this test does not know: " + t)


def header_decls():
    src = "".join(open(h).read() for h in HEADERS)
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    out = []
    for ret, name, params in re.findall(r"AJ_C_API\s+([\w\s\*]+?)\s*\b(aj_\w+)\s*\(([^)]*)\)\s*;", src):
        ps = []
        if params.strip() not in ("void", ""):
            for p in params.split(","):
                t = re.match(r"(.*?)\w+$", " ".join(p.split())).group(1)
                ps.append(code(t))
        r = "-" if ret.strip() == "void" else code(ret)
        out.append(" ".join([name, r] + ps))
    return out


def test_the_signature_table_is_the_header_s():
    if not os.path.exists(HEADERS[0]):
        pytest.skip("the C headers are not here (set ARRAYJIT_SOURCE_DIR)")
    want = header_decls()
    have = _capi.DECLS.strip().splitlines()
    missing = sorted(set(want) - set(have))
    stale = sorted(set(have) - set(want))
    assert not missing and not stale, ("_capi.DECLS differs from the header: add %s; drop %s" % (missing, stale))


def test_every_c_function_has_a_python_use():
    text = ""
    for f in os.listdir(PACKAGE):
        if f.endswith(".py") and f != "_capi.py":
            text += open(os.path.join(PACKAGE, f)).read()
    text += open(os.path.join(PACKAGE, "_capi.py")).read().split('"""\n\n\ndef _candidates')[1]  # its code, not its table
    unused = []
    for line in _capi.DECLS.strip().splitlines():
        name = line.split()[0]
        # By name, or as the quoted name a wrapper maker looks up ("cumsum").
        used = re.search(r"\b" + name + r"\b", text) is not None or ('"%s"' % name[3:]) in text
        if name in NOT_USED:
            assert not used, name + " is used now: take it off NOT_USED"
        elif not used:
            unused.append(name)
    assert not unused, "C functions with no Python use (use them, or list them in NOT_USED with why): %s" % unused
    # The generated lists (aj_op_names) are all bound as functions.
    import arrayjit as aj
    for names in _capi.OP_LISTS.values():
        for n in names:
            assert callable(getattr(aj, n, None)), n
