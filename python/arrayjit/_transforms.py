"""compile, grad, value_and_grad, vjp, jvp over Python callables.

Arguments and results may be nested tuples, lists and dicts of arrays (a
"tree", as JAX's pytrees); Python numbers in the arguments are weak scalars
(a learning rate: it takes the other operand's dtype, and a compiled call
rebinds it without tracing again); other values (strings, None, ...) are
static: a new one traces again.

A Python function is called by arrayjit while it traces (aj_function_new,
aj_vjp, aj_jvp): it records ops on stand-in arrays and must not read values.
An exception it raises comes out of the call that traced it, as it was.
"""
import ctypes as C
import numbers

from ._capi import H, HP, check, keep_exception, lib, set_caller
from ._core import Array, asarray, operand, scalar

TRACE_FN = C.CFUNCTYPE(C.c_int32, C.c_void_p, HP, HP)
RULE_FN = C.CFUNCTYPE(C.c_int32, C.c_void_p, HP, HP, HP)
RELEASE_FN = C.CFUNCTYPE(None, C.c_void_p)


class FunctionDesc(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("trace", TRACE_FN), ("context", C.c_void_p),
                ("n_inputs", C.c_int32), ("n_outputs", C.c_int32), ("release", C.c_void_p),
                ("name", C.c_char_p), ("check_allocations", C.c_int32), ("max_allocations", C.c_int64),
                ("in_place", C.c_void_p), ("n_in_place", C.c_int32), ("fwd", C.c_void_p), ("bwd", C.c_void_p),
                ("n_residuals", C.c_int32), ("jvp", C.c_void_p), ("checkpoint", C.c_int32)]


# ---- trees -----------------------------------------------------------------------------------


def _is_dynamic(x):
    return isinstance(x, Array) or (isinstance(x, numbers.Number) and not isinstance(x, complex)) or (
        type(x).__module__ == "numpy" and hasattr(x, "dtype"))


def flatten(tree):
    """(leaves, treedef): Arrays, numbers and NumPy arrays are leaves; tuples,
    lists and dicts are walked; anything else is kept in the treedef
    (static)."""
    leaves = []
    return leaves, _walk(tree, leaves)


def _walk(t, leaves):
    # (A module function, not a closure: a recursive closure is a reference
    # cycle that kept the leaves, a probe call's results among them, alive
    # until Python's cycle collector ran, and a kept result reads the
    # arguments, so the first call of a compiled function wrote nothing in place.)
    if isinstance(t, (tuple, list)):
        return (type(t).__name__, tuple(_walk(c, leaves) for c in t))
    if isinstance(t, dict):
        keys = sorted(t, key=repr)
        return ("dict", tuple(keys), tuple(_walk(t[k], leaves) for k in keys))
    if _is_dynamic(t):
        leaves.append(t)
        return ("*",)
    try:
        hash(t)
    except TypeError:
        raise TypeError("arrayjit: %r is neither an array, a number, a tuple, list or dict, nor hashable "
                        "(a static argument must be hashable)" % (type(t).__name__,)) from None
    return ("static", t)


def unflatten(treedef, leaves):
    it = iter(leaves)

    def build(d):
        kind = d[0]
        if kind == "*":
            return next(it)
        if kind == "static":
            return d[1]
        if kind == "dict":
            return {k: build(c) for k, c in zip(d[1], d[2])}
        children = [build(c) for c in d[1]]
        return tuple(children) if kind == "tuple" else children

    return build(treedef)


def _leaf_array(x):
    """An Array for a leaf: numbers weak scalars, NumPy arrays copied."""
    if isinstance(x, Array):
        return x
    if isinstance(x, numbers.Number):
        return scalar(x)
    return asarray(x)


def _leaf_kind(x):
    if isinstance(x, Array):
        return "a"
    if isinstance(x, bool):
        return "b"
    if isinstance(x, numbers.Integral):
        return "i"
    if isinstance(x, numbers.Number):
        return "f"
    return "a"


def _trace_callback(body):
    """A TRACE_FN calling body(inputs, outputs); a Python exception crosses as
    a failed status and comes out of the C call that ran it (keep_exception)."""
    def trace(ctx, inputs, outputs):
        try:
            body(inputs, outputs)
            return 0
        except BaseException as exc:  # noqa: B902 (every exception crosses as a status)
            keep_exception(exc)
            return 1
    return TRACE_FN(trace)


def _wrap_inputs(ptr, n):
    return [Array._own(ptr[i]) for i in range(n)]


def _out_handle(x):
    """A new handle to x for a callback's output slot: arrayjit reads it after
    the callback returned, when the Python objects it made may be gone (and
    their handles with them), then releases it."""
    h = H()
    check(lib.aj_array_retain(_leaf_array(x)._h, C.byref(h)))
    return h.value


def _write_outputs(outs, ptr, n, who):
    leaves, treedef = flatten(outs)
    if len(leaves) != n:
        raise ValueError("%s returned %d arrays where its first trace returned %d" % (who, len(leaves), n))
    for i, leaf in enumerate(leaves):
        ptr[i] = _out_handle(leaf)
    return treedef


# ---- compile ---------------------------------------------------------------------------------


class _Entry:
    __slots__ = ("fn", "callback", "out_tree", "n_in", "n_out", "donate", "ins_type", "outs_type", "flat_list")

    def __del__(self):
        if self.fn and lib is not None:
            lib.aj_function_release(self.fn)
            self.fn = 0


class Compiled:
    """What compile(f) returns: called as f is; the first call of each
    argument structure traces f, later ones replay its plan (arrayjit's own
    cache adds the dtypes, shapes and layouts to the signature)."""

    def __init__(self, f, donate_argnums=(), static_argnums=(), name=None, max_allocations=None):
        self.f = f
        self.donate_argnums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.name = name or getattr(f, "__name__", "function")
        self.max_allocations = max_allocations
        self._entries = {}
        self.__wrapped__ = f
        self.__doc__ = getattr(f, "__doc__", None)

    def _split(self, args, kwargs):
        static = tuple((i, args[i]) for i in self.static_argnums if i < len(args))
        dyn_args = tuple(a if i not in self.static_argnums else None for i, a in enumerate(args))
        leaves, treedef = flatten((dyn_args, kwargs))
        return leaves, (treedef, static)

    def _rebuild(self, args_tree, static, leaves):
        dyn_args, kwargs = unflatten(args_tree, leaves)
        args = list(dyn_args)
        for i, v in static:
            args[i] = v
        return args, kwargs

    def _entry(self, leaves, key, args, kwargs):
        kinds = tuple(_leaf_kind(x) for x in leaves)
        full_key = (key, kinds)
        e = self._entries.get(full_key)
        if e is not None:
            return e
        # One plain call first, recording lazily on the real arrays: it gives
        # the results' structure (aj_function_new needs their count).
        out_leaves, out_tree = flatten(self.f(*args, **kwargs))
        n_in, n_out = len(leaves), len(out_leaves)
        del out_leaves  # (the probe's arrays go now)
        if n_out == 0:
            raise ValueError("compile: %s returned no arrays" % self.name)
        args_tree, static = key
        f, who = self.f, "compile: " + self.name

        def trace(inputs, outputs):
            a, kw = self._rebuild(args_tree, static, _wrap_inputs(inputs, n_in))
            _write_outputs(f(*a, **kw), outputs, n_out, who)

        e = _Entry()
        e.fn = 0
        e.callback = _trace_callback(trace)
        e.out_tree, e.n_in, e.n_out = out_tree, n_in, n_out
        e.ins_type, e.outs_type = H * max(1, n_in), H * n_out
        e.flat_list = out_tree[0] == "list" and all(c == ("*",) for c in out_tree[1])
        # Donated inputs: the leaves of the donated arguments, numbered as
        # flatten((dyn_args, kwargs)) numbers them (positional ones first).
        donate = [0] * n_in
        start = 0
        for j, a in enumerate(args):
            if j in self.static_argnums:
                continue
            cnt = len(flatten(a)[0])
            if j in self.donate_argnums:
                donate[start:start + cnt] = [1] * cnt
            start += cnt
        e.donate = (C.c_int * max(1, n_in))(*donate) if any(donate) else None
        d = FunctionDesc()
        d.struct_size = C.sizeof(FunctionDesc)
        d.trace = e.callback
        d.n_inputs, d.n_outputs = n_in, n_out
        d.name = self.name.encode()
        if self.max_allocations is not None:
            d.check_allocations, d.max_allocations = 1, int(self.max_allocations)
        out = H()
        check(lib.aj_function_new(C.byref(d), C.byref(out)))
        e.fn = out.value
        self._entries[full_key] = e
        return e

    def __call__(self, *args, **kwargs):
        set_caller()
        if not kwargs and not self.static_argnums and all(type(a) is Array for a in args):
            # A flat call of arrays (a replay's usual form, the torch
            # backend's every call): no tree to walk.
            e = self._entries.get(len(args))
            if e is None:
                leaves, key = self._split(args, kwargs)
                e = self._entries[len(args)] = self._entry(leaves, key, args, kwargs)
            arrays = args
            hs = [a._h for a in args]
        else:
            leaves, key = self._split(args, kwargs)
            e = self._entry(leaves, key, args, kwargs)
            arrays = [_leaf_array(x) for x in leaves]
            hs = [a._h for a in arrays]
        ins = e.ins_type(*hs)
        outs = e.outs_type()
        if e.donate is not None:
            check(lib.aj_function_call_donate(e.fn, ins, e.donate, outs))
            for i, a in enumerate(arrays):  # consumed: the Python arrays end with their handles
                if e.donate[i]:
                    a._h = 0
        else:
            check(lib.aj_function_call(e.fn, ins, outs))
        results = [Array._own(h) for h in outs]
        return results if e.flat_list else unflatten(e.out_tree, results)


def compile(f=None, *, donate_argnums=(), static_argnums=(), name=None, max_allocations=None):
    """f traced once per argument structure and replayed after: a training
    step costs one plan and one compile, then runs without calling Python's f.
    donate_argnums: arguments whose buffers the results may take over in place
    (the arrays passed are consumed). Usable as @compile or @compile(...)."""
    if f is None:
        return lambda g: Compiled(g, donate_argnums, static_argnums, name, max_allocations)
    return Compiled(f, donate_argnums, static_argnums, name, max_allocations)


jit = compile


# ---- derivatives ---------------------------------------------------------------------------------


def _primal_leaves(args, argnums):
    trees = [args[i] for i in argnums]
    leaves, treedef = flatten(tuple(trees))
    arrays = []
    for x in leaves:
        a = x if isinstance(x, Array) else asarray(x)
        arrays.append(a)
    return arrays, treedef


def _call_with(f, args, argnums, treedef, primal_arrays):
    trees = unflatten(treedef, primal_arrays)
    a = list(args)
    for i, t in zip(argnums, trees):
        a[i] = t
    return f(*a)


def _run_vjp(f, args, argnums, cotangent_fn, n_out, has_aux):
    """aj_vjp over the leaves of args[argnums]: (outputs, aux tree, grads)."""
    primals, treedef = _primal_leaves(args, argnums)
    n_in = len(primals)
    state = {}

    def trace(inputs, outputs):
        out = _call_with(f, args, argnums, treedef, _wrap_inputs(inputs, n_in))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise ValueError("with has_aux the function must return (value, aux)")
            out, aux = out
            aux_leaves, state["aux_tree"] = flatten(aux)
            # aux values leave the trace as outputs with no cotangent.
            _write_outputs((out, tuple(aux_leaves)), outputs, n_out, "the differentiated function")
        else:
            state["out_tree"] = _write_outputs(out, outputs, n_out, "the differentiated function")

    cb = _trace_callback(trace)
    ins = (H * max(1, n_in))(*[p._h for p in primals])
    cts = cotangent_fn()
    cts_arr = (H * n_out)(*[c._h if c is not None else 0 for c in cts])
    outs = (H * n_out)()
    grads = (H * max(1, n_in))()
    check(lib.aj_vjp(cb, None, n_in, n_out, ins, cts_arr, outs, grads))
    out_arrays = [Array._own(outs[i]) for i in range(n_out)]
    grad_arrays = [Array._own(grads[i]) for i in range(n_in)]
    return out_arrays, state, unflatten(treedef, grad_arrays)


def _norm_argnums(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def value_and_grad(f, argnums=0, has_aux=False):
    """A function returning (f(*args), the gradient of f's scalar result with
    respect to args[argnums]) (a tree of the same structure; a tuple of them
    for a tuple of argnums); with has_aux, f returns (value, aux) and the
    result is ((value, aux), grads)."""
    nums = _norm_argnums(argnums)
    from ._ops import ones_like

    def vg(*args):
        set_caller()
        for i in nums:
            if i >= len(args):
                raise TypeError("value_and_grad: argnums %d but only %d arguments" % (i, len(args)))
        # One lazy call first (nothing is evaluated): the value's dtype (its
        # cotangent is a one of it) and the size of aux.
        value = f(*args)
        n_aux = 0
        if has_aux:
            if not (isinstance(value, tuple) and len(value) == 2):
                raise ValueError("with has_aux the function must return (value, aux)")
            n_aux = len(flatten(value[1])[0])
            value = value[0]
        value = value if isinstance(value, Array) else asarray(value)
        if value.ndim != 0:
            raise TypeError("grad needs a function with a scalar result, got shape %s (use vjp)" % (value.shape,))
        one = ones_like(value)
        del value
        outs, state, grads = _run_vjp(f, args, nums, lambda: [one] + [None] * n_aux, 1 + n_aux, has_aux)
        g = grads[0] if isinstance(argnums, int) else grads
        if has_aux:
            return (outs[0], unflatten(state["aux_tree"], outs[1:])), g
        return outs[0], g

    vg.__name__ = "value_and_grad(%s)" % getattr(f, "__name__", "f")
    return vg


def grad(f, argnums=0, has_aux=False):
    """The gradient of f's scalar result with respect to args[argnums]
    (as jax.grad); with has_aux, (grads, aux)."""
    vg = value_and_grad(f, argnums, has_aux)

    def g(*args):
        value, grads = vg(*args)
        return (grads, value[1]) if has_aux else grads

    g.__name__ = "grad(%s)" % getattr(f, "__name__", "f")
    return g


def vjp(f, *primals, has_aux=False):
    """(f(*primals), vjp_fn): vjp_fn(cotangent) gives one cotangent per
    primal (as jax.vjp); cotangent has the structure of f's result."""
    set_caller()
    out = f(*primals)
    if has_aux:
        out, aux = out
    out_leaves, out_tree = flatten(out)
    n_out = len(out_leaves)
    nums = tuple(range(len(primals)))

    def vjp_fn(cotangent):
        set_caller()
        ct_leaves, ct_tree = flatten(cotangent)
        if ct_tree != out_tree:
            raise ValueError("vjp: the cotangent's structure differs from the result's")
        cts = [operand(c) for c in ct_leaves]
        g = f if not has_aux else (lambda *a: f(*a)[0])
        _, _, grads = _run_vjp(g, primals, nums, lambda: cts, n_out, False)
        return tuple(grads)

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jvp(f, primals, tangents):
    """(f(*primals), the derivative of f at primals applied to tangents), as
    jax.jvp; primals and tangents are tuples of the same structure."""
    set_caller()
    primals, tangents = tuple(primals), tuple(tangents)
    p_leaves, p_tree = flatten(primals)
    t_leaves, t_tree = flatten(tangents)
    if p_tree != t_tree:
        raise ValueError("jvp: primals and tangents differ in structure")
    p_arrays = [x if isinstance(x, Array) else asarray(x) for x in p_leaves]
    t_arrays = [operand(t) for t in t_leaves]
    out = f(*primals)
    out_leaves, out_tree = flatten(out)
    del out
    n_in, n_out = len(p_arrays), len(out_leaves)
    del out_leaves

    def trace(inputs, outputs):
        _write_outputs(f(*unflatten(p_tree, _wrap_inputs(inputs, n_in))), outputs, n_out,
                       "the differentiated function")

    cb = _trace_callback(trace)
    ins = (H * max(1, n_in))(*[p._h for p in p_arrays])
    tin = (H * max(1, n_in))(*[t._h for t in t_arrays])
    outs = (H * n_out)()
    touts = (H * n_out)()
    check(lib.aj_jvp(cb, None, n_in, n_out, ins, tin, outs, touts))
    return (unflatten(out_tree, [Array._own(outs[i]) for i in range(n_out)]),
            unflatten(out_tree, [Array._own(touts[i]) for i in range(n_out)]))


# ---- functions with derivatives of their own ---------------------------------------------------


class _WithRules:
    """custom_vjp / custom_jvp / checkpoint: f as an aj_function whose desc
    carries the rules (C API 1.5), one per number of argument arrays. Called
    inside grad, vjp, jvp or a compiled function, its ops are recorded with
    the rules; called plainly, it runs (as one compiled call)."""

    def __init__(self, f, fwd=None, bwd=None, jvp=None, checkpoint=False):
        self.f, self.fwd, self.bwd, self.jvp, self.checkpoint = f, fwd, bwd, jvp, checkpoint
        self._fns = {}
        self.__wrapped__ = f

    def _make(self, arrays):
        n_in = len(arrays)
        out_leaves, out_tree = flatten(self.f(*arrays))  # one lazy call: the results' count
        n_out = len(out_leaves)
        n_res = 0
        if self.fwd is not None:
            res_leaves, res_tree = flatten(self.fwd(*arrays)[1])
            n_res = len(res_leaves)
            del res_leaves
        del out_leaves
        f = self.f
        keep = []

        def trace(inputs, outputs):
            _write_outputs(f(*_wrap_inputs(inputs, n_in)), outputs, n_out, "custom function")

        d = FunctionDesc()
        d.struct_size = C.sizeof(FunctionDesc)
        d.trace = _trace_callback(trace)
        d.n_inputs, d.n_outputs = n_in, n_out
        d.name = getattr(f, "__name__", "custom").encode()
        keep.append(d.trace)
        if self.fwd is not None:
            fwd, bwd = self.fwd, self.bwd

            def fwd_body(inputs, outputs):
                out, res = fwd(*_wrap_inputs(inputs, n_in))
                _write_outputs((out, res), outputs, n_out + n_res, "custom_vjp's fwd")

            def bwd_rule(ctx, res, cts, grads):
                try:
                    r = unflatten(res_tree, _wrap_inputs(res, n_res))
                    g = unflatten(out_tree, _wrap_inputs(cts, n_out))
                    got = bwd(r, g)
                    if not isinstance(got, (tuple, list)) or len(got) != n_in:
                        raise ValueError("custom_vjp: bwd must return a tuple of %d cotangents (one per argument), "
                                         "got %r" % (n_in, type(got).__name__))
                    for i, c in enumerate(got):
                        grads[i] = 0 if c is None else _out_handle(c)
                    return 0
                except BaseException as exc:  # noqa: B902
                    keep_exception(exc)
                    return 1

            fwd_cb, bwd_cb = _trace_callback(fwd_body), RULE_FN(bwd_rule)
            keep += [fwd_cb, bwd_cb]  # alive as long as the function (the entry holds them)
            d.fwd = C.cast(fwd_cb, C.c_void_p)
            d.bwd = C.cast(bwd_cb, C.c_void_p)
            d.n_residuals = n_res
        elif self.jvp is not None:
            rule = self.jvp

            def jvp_rule(ctx, primals, tangents, out):
                try:
                    p = _wrap_inputs(primals, n_in)
                    t = _wrap_inputs(tangents, n_in)
                    got = rule(tuple(p), tuple(t))
                    leaves, _ = flatten(got)
                    if len(leaves) != n_out:
                        raise ValueError("custom_jvp: the rule returned %d tangents for %d results"
                                         % (len(leaves), n_out))
                    for i, c in enumerate(leaves):
                        out[i] = _out_handle(c)
                    return 0
                except BaseException as exc:  # noqa: B902
                    keep_exception(exc)
                    return 1

            cb = RULE_FN(jvp_rule)
            d.jvp = C.cast(cb, C.c_void_p)
            keep.append(cb)
        d.checkpoint = 1 if self.checkpoint else 0
        h = H()
        check(lib.aj_function_new(C.byref(d), C.byref(h)))
        e = _Entry()
        e.fn, e.callback, e.out_tree, e.n_in, e.n_out, e.donate = h.value, keep, out_tree, n_in, n_out, None
        e.ins_type, e.outs_type = H * max(1, n_in), H * n_out
        e.flat_list = False
        return e

    def __call__(self, *args):
        set_caller()
        arrays = [_leaf_array(a) for a in args]
        key = len(arrays)
        e = self._fns.get(key)
        if e is None:
            e = self._fns[key] = self._make(arrays)
        outs = e.outs_type()
        check(lib.aj_function_call(e.fn, e.ins_type(*[a._h for a in arrays]), outs))
        return unflatten(e.out_tree, [Array._own(h) for h in outs])


def custom_vjp(f, fwd, bwd):
    """f with its own reverse-mode rule (JAX's custom_vjp): fwd(*args) returns
    (f's result, residuals: any tree of arrays), bwd(residuals, cotangent)
    returns a tuple of one cotangent per argument (None: zero). Forward mode
    through it is an error, as in JAX."""
    return _WithRules(f, fwd=fwd, bwd=bwd)


def custom_jvp(f, jvp):
    """f with its own forward-mode rule: jvp(primals, tangents) returns the
    result's tangent (linear in the tangents); reverse mode transposes it."""
    return _WithRules(f, jvp=jvp)


def checkpoint(f):
    """f whose values the backward computes again from its arguments instead
    of keeping them from the forward pass (less memory, more compute)."""
    return _WithRules(f, checkpoint=True)


remat = checkpoint
