#!/usr/bin/python3
"""Writes tests/data/print_cases.inc: arrays and the text NumPy prints for them.

Run with Debian's NumPy 1.24 (/usr/bin/python3 tests/data/make_print_cases.py > tests/data/print_cases.inc).
Each case gives the dtype, shape, values and print options, then two expected strings:
  str  - np.array2string(a, ...): what print(a) shows in NumPy, and what aj::array2string gives;
  repr - what operator<< writes: NumPy's repr layout ("array(" prefix, ", " separator, wrapping
         one column early for the trailing comma) with arrayjit's "dtype=f32, shape=[2, 3])"
         trailer, which moves to its own line, as NumPy's dtype= does, when the last line is too long.
"""
import math
import sys

import numpy as np

NP_DTYPE = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64,
            "f16": np.float16}
CPP_DTYPE = {"bool": "bool_", "i32": "i32", "i64": "i64", "f32": "f32", "f64": "f64", "f16": "f16"}
DEFAULTS = dict(precision=8, threshold=1000, edgeitems=3, linewidth=75, suppress=False)

rng = np.random.RandomState(17)
cases = []


def case(name, dtype, values, shape=None, **options):
    a = np.array(values, dtype=NP_DTYPE[dtype])
    if shape is not None:
        a = a.reshape(shape)
    cases.append((name, dtype, a, {**DEFAULTS, **options}))


# rank 0
case("f64 scalar", "f64", 3.5)
case("f64 scalar 0.1+0.2 rounds to 8 digits", "f64", 0.1 + 0.2)
case("f32 scalar 0.1 is its own shortest repr", "f32", 0.1)
case("f64 scalar in scientific notation", "f64", 1.5e-9)
case("i64 scalar", "i64", 42)
case("i32 scalar negative", "i32", -7)
case("bool scalar True has no pad", "bool", True)
case("bool scalar False", "bool", False)
case("f64 scalar nan", "f64", math.nan)
# rank 1, positional
case("f64 decimal points align", "f64", [0.5, 1.0, -2.25, 0.1])
case("f32 shortest float32 digits", "f32", [0.1, 0.2, 0.3, 1 / 3])
case("f64 full precision values round to 8 digits", "f64", [0.1 + 0.2, 1 / 3, 2 / 3, 1.23456789012])
case("f64 rounding up to a whole number", "f64", [0.999999999, 9.9999999996, -0.5])
case("f64 powers of two", "f64", [0.5, 0.25, 0.125, 0.0625])
case("f64 negative values", "f64", [-1.0, -2.5, 3.0, -100.0])
case("f64 negative zero", "f64", [-0.0, 0.0, 1.5])
case("f64 nan inf -inf", "f64", [math.nan, math.inf, -math.inf, 2.0])
case("f32 only nan", "f32", [math.nan, math.nan])
case("f64 only inf", "f64", [math.inf, -math.inf])
case("f32 whole numbers up to 2^24", "f32", [16777216.0, 1e7, -3.0])
case("f32 whole digits print exactly, not shortest", "f32", [-74521808.0, 17303418.0, 77320632.0])
case("f64 just below 1e8 stays positional", "f64", [99999999.0, 12345.5])
# rank 1, scientific
case("f64 mixed magnitudes go scientific", "f64", [1e-5, 1.0, 1e4])
case("f64 huge value 1e20", "f64", [1e20, 1.0, -1.0])
case("f64 tiny values 1e-7", "f64", [1e-7, 1e-8, 0.5])
case("f32 tiny and ordinary", "f32", [1e-7, 3.14159, -2.5e-3])
case("f64 ratio over 1000", "f64", [123456.789, 0.001234])
case("f64 1e8 is scientific", "f64", [1e8, 2.0, 3.0])
case("f64 three-digit exponents", "f64", [1e100, 1e-100, -2.5])
case("f32 extremes", "f32", [3e38, 1e-38, -1.0])
case("f64 subnormal", "f64", [5e-324, 1.0])
case("f64 scientific with zeros nan and -inf", "f64", [0.0, -0.0, 1e-5, 1.25, math.nan, -math.inf])
case("f32 scientific pads with exact float32 digits", "f32", [0.1, 1.2345e-5])
case("f32 1e-4 is below 1e-4 in float32", "f32", [0.0001, 1.0])
case("f64 nan with huge value", "f64", [math.nan, 1e10])
# integers and bools
case("i64 right-aligned", "i64", [1, -20, 300, 4], (2, 2))
case("i64 beyond 2^53 and the minimum", "i64", [9007199254740993, -1, -(2**63)])
case("i32 extremes", "i32", [-(2**31), 2**31 - 1, 0])
case("bool rank 1", "bool", [True, False, True])
case("bool rank 2", "bool", [[True, True, False], [False, True, False]])
# ranks 2-4
case("f64 rank 2 random", "f64", rng.normal(size=(4, 5)))
case("f32 rank 2 random", "f32", rng.normal(size=(3, 4)).astype(np.float32))
case("i64 rank 3", "i64", list(range(8)), (2, 2, 2))
case("f64 rank 4", "f64", np.arange(24) / 4 - 2, (2, 2, 2, 3))
case("i32 rank 4 with ones", "i32", list(range(-3, 3)), (1, 2, 1, 3))
case("f64 rank 3 scientific", "f64", rng.lognormal(0, 6, size=(2, 3, 2)))
# empty
case("f32 empty (0,)", "f32", [], (0,))
case("f64 empty (2, 0, 3)", "f64", [], (2, 0, 3))
case("bool empty (3, 0)", "bool", [], (3, 0))
# wide rows wrap at the line width
case("f64 wide row wraps", "f64", rng.uniform(-10, 10, size=30))
case("i64 wide row wraps", "i64", [i * 1000 - 7 for i in range(40)])
case("f64 wide rank 2 rows wrap", "f64", rng.uniform(0, 1, size=(3, 14)))
case("bool wide row wraps", "bool", rng.uniform(size=25) < 0.5)
case("i64 1000 elements print in full", "i64", list(range(1000)))
# summarization above the threshold
case("i64 1001 elements summarize", "i64", list(range(1001)))
case("f64 rank 2 summarized", "f64", np.arange(2000) / 8 - 100, (40, 50))
case("f32 rank 3 summarized", "f32", np.arange(1100) / 2, (10, 10, 11))
case("f64 hidden middle values do not change the format", "f64",
     [0.5] * 3 + [1e20, 1e-20] * 500 + [1.25] * 3)
case("i64 rank 2 summarized negative edge", "i64", [i * 37 % 1001 - 500 for i in range(1500)], (30, 50))
case("bool 2000 summarized", "bool", [i % 3 == 0 for i in range(2000)])
case("i32 rank 4 summarized", "i32", list(range(2 * 8 * 3 * 30)), (2, 8, 3, 30))
# options
case("suppress hides tiny values", "f64", [1e-10, 1.0, 1000.5], suppress=True)
case("suppress keeps positional below 1e8", "f64", [1e-5, 1e4, -3e-12], suppress=True)
case("suppress still goes scientific at 1e8", "f64", [1e8, 1e-5], suppress=True)
case("precision 3", "f64", [math.pi, math.e, 1 / 3, -2.0005], precision=3)
case("precision 3 scientific", "f64", [1e-5 * math.pi, 1e3 * math.e], precision=3)
case("precision 0 rounds half to even", "f64", [1.5, 2.5, -0.4, 3.0], precision=0)
case("precision 3 f32", "f32", rng.normal(size=6).astype(np.float32), precision=3)
case("linewidth 40", "f64", np.arange(20) * 1.5, linewidth=40)
case("linewidth 40 rank 2", "i64", [i * i for i in range(24)], (2, 12), linewidth=40)
case("linewidth 40 bool", "bool", [i % 2 == 0 for i in range(12)], linewidth=40)
case("threshold 10 edgeitems 2", "i32", list(range(20)), (4, 5), threshold=10, edgeitems=2)
case("edgeitems 1 rank 3", "f64", np.arange(60) / 3, (3, 4, 5), threshold=5, edgeitems=1)
case("threshold 0 summarizes a short row", "i64", list(range(10)), threshold=0)
# f16: shortest float16 digits (np.float16's repr), its range and its rounding
case("f16 scalar 0.1 is its own shortest repr", "f16", 0.1)
case("f16 shortest float16 digits", "f16", [0.1, 0.2, 0.3, 1 / 3, 2 / 3])
case("f16 largest, smallest normal and subnormal", "f16", [65504.0, 6.1035e-05, 6e-08, -1.0])
case("f16 whole numbers round to even above 2048", "f16", [2049.0, 2051.0, 4097.0, 1.5])
case("f16 nan inf -inf", "f16", [math.nan, math.inf, -math.inf, 0.5])
case("f16 ratio over 1000 divides in float16", "f16", [1000.5, 1.0, 0.25])
case("f16 rank 2 random", "f16", rng.normal(size=(3, 4)).astype(np.float16))
case("f16 random magnitudes scientific", "f16", rng.lognormal(0, 4, size=8).astype(np.float16))
case("f16 negative zero and tiny", "f16", [-0.0, 1e-5, 3.0])
case("f16 precision 3", "f16", rng.normal(size=6).astype(np.float16), precision=3)
case("f16 summarized", "f16", np.arange(2000) / 16, (40, 50))


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def c_real(v):
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(float(v))  # shortest round-trip text of the exact value (float32 widened exactly)


def c_int(v):
    return "INT64_MIN" if v == -(2**63) else str(v)  # "-9223372036854775808" negates an unsigned literal


def expected(a, dtype, o):
    kw = dict(max_line_width=o["linewidth"], precision=o["precision"], suppress_small=o["suppress"],
              threshold=o["threshold"], edgeitems=o["edgeitems"])
    s = np.array2string(a, **kw)
    if a.size == 0:
        values = "[]"
    else:
        values = np.array2string(a, separator=", ", prefix="array(", suffix=",", **kw)
    trailer = "dtype=%s, shape=[%s])" % (dtype, ", ".join(str(d) for d in a.shape))
    head = "array(" + values + ","
    last_line = len(head) - (head.rfind("\n") + 1)
    spacer = "\n      " if last_line + len(trailer) + 1 > o["linewidth"] else " "
    return s, head + spacer + trailer


def main():
    out = sys.stdout
    out.write("// Generated by tests/data/make_print_cases.py with NumPy %s; do not edit.\n" % np.__version__)
    out.write("// {name, dtype, shape, reals, ints, {precision, threshold, edgeitems, linewidth, suppress},\n")
    out.write("//  np.array2string text, operator<< text}\n")
    for name, dtype, a, o in cases:
        flat = a.reshape(-1)
        if dtype in ("bool", "i32", "i64"):
            reals, ints = "{}", "{" + ", ".join(c_int(int(v)) for v in flat) + "}"
        else:
            reals, ints = "{" + ", ".join(c_real(float(v)) for v in flat) + "}", "{}"
        s, r = expected(a, dtype, o)
        out.write("{%s, aj::DType::%s, {%s},\n %s,\n %s,\n {%d, %d, %d, %d, %s},\n %s,\n %s},\n" % (
            c_string(name), CPP_DTYPE[dtype], ", ".join(str(d) for d in a.shape), reals, ints,
            o["precision"], o["threshold"], o["edgeitems"], o["linewidth"],
            "true" if o["suppress"] else "false", c_string(s), c_string(r)))


main()
