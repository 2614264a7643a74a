// Printing: operator<< of arrays (NumPy's repr layout, then dtype and shape) and
// array2string (NumPy's str), print options, DType and Shape text, the
// deterministic graph dump and the Graphviz text. Array texts were printed by
// NumPy 1.24: the table in data/print_cases.inc by data/make_print_cases.py, the
// rest checked by hand against np.array2string; the dump texts follow graph/dump.cpp.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using aj::DType;

template <class T>
std::string str(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

// One row of data/print_cases.inc: an array, the options it is printed under,
// and what NumPy 1.24 printed.
struct PrintCase {
  const char* name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::vector<double> reals;        // f32 (exact float values), f64
  std::vector<std::int64_t> ints;   // bool (0/1), i32, i64
  aj::PrintOptions options;
  const char* str;   // np.array2string(a): aj::array2string
  const char* repr;  // NumPy's repr layout with our trailer: operator<<
};

const std::vector<PrintCase>& print_cases() {
  static const std::vector<PrintCase> cases = {
#include "data/print_cases.inc"
  };
  return cases;
}

template <class T, class From>
aj::Array build(const std::vector<From>& values, const aj::Shape& shape) {
  return aj::from_vector(std::vector<T>(values.begin(), values.end()), shape);
}

aj::Array build(const PrintCase& c) {
  const aj::Shape shape(c.shape);
  switch (c.dtype) {
    case DType::bool_: return build<bool>(c.ints, shape);
    case DType::i32: return build<std::int32_t>(c.ints, shape);
    case DType::i64: return build<std::int64_t>(c.ints, shape);
    case DType::f32: return build<float>(c.reals, shape);
    case DType::f64: return build<double>(c.reals, shape);
    case DType::f16: return build<aj::f16>(c.reals, shape);
    case DType::bf16: return build<aj::bf16>(c.reals, shape);
    case DType::u8: return build<std::uint8_t>(c.ints, shape);
    case DType::i8: return build<std::int8_t>(c.ints, shape);
    case DType::i16: return build<std::int16_t>(c.ints, shape);
    case DType::u16: return build<std::uint16_t>(c.ints, shape);
    case DType::u32: return build<std::uint32_t>(c.ints, shape);
    case DType::u64: return build<std::uint64_t>(c.ints, shape);
  }
  return {};
}

}  // namespace

TEST_SUITE("printing") {

// ---- arrays ---------------------------------------------------------------------------

TEST_CASE("a table of arrays prints exactly as NumPy 1.24 prints them") {
  // Ranks 0-4, every dtype, empty shapes, wrapping, scientific notation, nan/inf,
  // summarization, and each print option (see data/make_print_cases.py).
  REQUIRE(print_cases().size() >= 40);
  for (const PrintCase& c : print_cases()) {
    const std::string name = c.name;
    CAPTURE(name);
    aj::ScopedPrintOptions options(c.options);
    aj::Array a = build(c);
    CHECK(aj::array2string(a) == c.str);
    CHECK(str(a) == c.repr);
  }
  // The scopes put the defaults back.
  CHECK(aj::printoptions().precision == 8);
  CHECK(aj::printoptions().linewidth == 75);
}

TEST_CASE("a small 2-d i64 array prints rows aligned under each other") {
  aj::Array a = aj::from_vector(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(str(a) ==
        "array([[1, 2, 3],\n"
        "       [4, 5, 6]], dtype=i64, shape=[2, 3])");
}

TEST_CASE("integer cells are right-aligned to the widest value") {
  aj::Array a = aj::from_vector(std::vector<std::int64_t>{1, -20, 300, 4}, {2, 2});
  CHECK(str(a) ==
        "array([[  1, -20],\n"
        "       [300,   4]], dtype=i64, shape=[2, 2])");
  // i64 values beyond 2^53 print exactly.
  aj::Array big = aj::from_vector(std::vector<std::int64_t>{9007199254740993LL, -1});
  CHECK(str(big) == "array([9007199254740993,               -1], dtype=i64, shape=[2])");
  aj::Array i32 = aj::from_vector(std::vector<std::int32_t>{-7, 8, 9});
  CHECK(str(i32) == "array([-7,  8,  9], dtype=i32, shape=[3])");
}

TEST_CASE("a 3-d array separates its blocks with a blank line") {
  aj::Array a = aj::from_vector(std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  CHECK(str(a) ==
        "array([[[0, 1],\n"
        "        [2, 3]],\n"
        "\n"
        "       [[4, 5],\n"
        "        [6, 7]]], dtype=i32, shape=[2, 2, 2])");
}

TEST_CASE("f32 values print in shortest round-trip form with decimal points aligned") {
  aj::Array a = aj::from_vector(std::vector<float>{0.5f, 1.0f, -2.25f, 0.1f});
  CHECK(str(a) == "array([ 0.5 ,  1.  , -2.25,  0.1 ], dtype=f32, shape=[4])");
  CHECK(aj::array2string(a) == "[ 0.5   1.   -2.25  0.1 ]");
  // 0.1f is printed as the f32 value it is, not its double expansion.
  aj::Array b = aj::from_vector(std::vector<float>{0.1f, 3.0f}, {2, 1});
  CHECK(str(b) ==
        "array([[0.1],\n"
        "       [3. ]], dtype=f32, shape=[2, 1])");
}

TEST_CASE("f64 values, exponents and special values") {
  // 1e20 puts the whole array in scientific notation.
  aj::Array a = aj::from_vector(std::vector<double>{0.1, 1e20, -0.0});
  CHECK(str(a) == "array([ 1.e-01,  1.e+20, -0.e+00], dtype=f64, shape=[3])");
  aj::Array s = aj::from_vector(std::vector<double>{NAN, INFINITY, -INFINITY, 2.0});
  CHECK(str(s) == "array([ nan,  inf, -inf,   2.], dtype=f64, shape=[4])");
  // 8 digits after the point at most: 0.1 + 0.2 prints as 0.3.
  CHECK(aj::array2string(aj::from_vector(std::vector<double>{0.1 + 0.2, 1.0 / 3})) ==
        "[0.3        0.33333333]");
}

TEST_CASE("bool arrays print True and False as NumPy does") {
  aj::Array a = aj::from_vector(std::vector<bool>{true, false, true});
  CHECK(str(a) == "array([ True, False,  True], dtype=bool, shape=[3])");
  aj::Array b = aj::from_vector(std::vector<bool>{true, true}, {1, 2});
  CHECK(str(b) == "array([[ True,  True]], dtype=bool, shape=[1, 2])");
}

TEST_CASE("rank-0 arrays print the bare value and shape=[]") {
  CHECK(str(aj::from_vector(std::vector<std::int64_t>{42}, aj::Shape{})) ==
        "array(42, dtype=i64, shape=[])");
  CHECK(str(aj::sum(aj::from_vector(std::vector<double>{1.5, 2.0}))) ==
        "array(3.5, dtype=f64, shape=[])");
  CHECK(str(aj::from_vector(std::vector<bool>{false}, aj::Shape{})) ==
        "array(False, dtype=bool, shape=[])");
}

TEST_CASE("empty arrays and empty handles print without values") {
  CHECK(str(aj::zeros({0})) == "array([], dtype=f32, shape=[0])");
  // NumPy's array2string gives "[]" for any empty shape; the trailer tells it.
  CHECK(str(aj::zeros({2, 0}, DType::i32)) == "array([], dtype=i32, shape=[2, 0])");
  CHECK(str(aj::Array()) == "array(<empty handle>)");
  CHECK_THROWS_WITH_AS(aj::array2string(aj::Array()),
                       doctest::Contains("aj::array2string: empty Array handle"), aj::Error);
}

TEST_CASE("printing evaluates the array and shows computed values of views") {
  aj::Array x = aj::from_vector(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  aj::Array y = aj::transpose(x) * 10;
  CHECK_FALSE(y.is_evaluated());
  CHECK(str(y) ==
        "array([[10, 40],\n"
        "       [20, 50],\n"
        "       [30, 60]], dtype=i64, shape=[3, 2])");
  CHECK(y.is_evaluated());
}

TEST_CASE("a 1000-element array prints every value; more than 1000 are summarised with ...") {
  std::string s1000 = str(aj::arange(1000));
  CHECK(s1000.find("...") == std::string::npos);
  CHECK(count(s1000, ",") == 999 + 2);  // 999 separators, then ", dtype=" and ", shape="
  std::string s1001 = str(aj::arange(1001));
  CHECK(s1001 == "array([   0,    1,    2, ...,  998,  999, 1000], dtype=i64, shape=[1001])");
}

TEST_CASE("a 5000-element array is summarised with ... along every long axis") {
  aj::Array v = aj::arange(5000);
  std::string s = str(v);
  CHECK(s == "array([   0,    1,    2, ..., 4997, 4998, 4999], dtype=i64, shape=[5000])");

  aj::Array m = aj::reshape(aj::arange(5000), {100, 50});
  CHECK(str(m) ==
        "array([[   0,    1,    2, ...,   47,   48,   49],\n"
        "       [  50,   51,   52, ...,   97,   98,   99],\n"
        "       [ 100,  101,  102, ...,  147,  148,  149],\n"
        "       ...,\n"
        "       [4850, 4851, 4852, ..., 4897, 4898, 4899],\n"
        "       [4900, 4901, 4902, ..., 4947, 4948, 4949],\n"
        "       [4950, 4951, 4952, ..., 4997, 4998, 4999]],\n"
        "      dtype=i64, shape=[100, 50])");  // too long for the last line: its own, as NumPy's dtype=

  // Floats too; the text stays short.
  std::string f = str(aj::ones({5000}, DType::f32));
  CHECK(f == "array([1., 1., 1., ..., 1., 1., 1.], dtype=f32, shape=[5000])");
}

// ---- print options ------------------------------------------------------------------------

TEST_CASE("print options default to NumPy's and change what operator<< and array2string write") {
  const aj::PrintOptions d = aj::printoptions();
  CHECK(d.precision == 8);
  CHECK(d.threshold == 1000);
  CHECK(d.edgeitems == 3);
  CHECK(d.linewidth == 75);
  CHECK_FALSE(d.suppress);

  aj::Array x = aj::from_vector(std::vector<double>{3.14159265, 1e-9, 2.0});
  CHECK(aj::array2string(x) == "[3.14159265e+00 1.00000000e-09 2.00000000e+00]");
  aj::PrintOptions o = aj::printoptions();
  o.precision = 3;
  o.suppress = true;
  aj::set_printoptions(o);
  CHECK(aj::array2string(x) == "[3.142 0.    2.   ]");
  CHECK(str(x) == "array([3.142, 0.   , 2.   ], dtype=f64, shape=[3])");
  aj::set_printoptions(d);
  CHECK(aj::array2string(x) == "[3.14159265e+00 1.00000000e-09 2.00000000e+00]");

  {
    aj::ScopedPrintOptions scope({.threshold = 4, .edgeitems = 1});
    CHECK(aj::array2string(aj::arange(5)) == "[0 ... 4]");
    CHECK(aj::printoptions().precision == 8);  // fields not named keep NumPy's defaults
  }
  CHECK(aj::array2string(aj::arange(5)) == "[0 1 2 3 4]");
}

TEST_CASE("bad print options are errors naming the option and the caller's line") {
  aj::PrintOptions o;
  o.precision = -1;
  CHECK_THROWS_WITH_AS(aj::set_printoptions(o),
                       doctest::Contains("aj::set_printoptions: precision must be >= 0, got -1 (at test_printing.cpp:"),
                       aj::Error);
  o = {};
  o.linewidth = 0;
  CHECK_THROWS_WITH_AS(aj::set_printoptions(o), doctest::Contains("linewidth must be >= 1, got 0"), aj::Error);
  o = {};
  o.threshold = -5;
  CHECK_THROWS_WITH_AS(aj::ScopedPrintOptions scope(o),
                       doctest::Contains("aj::ScopedPrintOptions: threshold must be >= 0, got -5"), aj::Error);
  o = {};
  o.edgeitems = -2;
  CHECK_THROWS_AS(aj::set_printoptions(o), aj::Error);
  // Nothing was changed by the rejected calls.
  CHECK(aj::printoptions().precision == 8);
  CHECK(aj::printoptions().threshold == 1000);
}

TEST_CASE("print options are process-wide and safe to set and read from several threads") {
  const aj::PrintOptions saved = aj::printoptions();
  const aj::PrintOptions a{.precision = 2, .threshold = 20, .edgeitems = 2, .linewidth = 40, .suppress = true};
  const aj::PrintOptions b{.precision = 6, .threshold = 60, .edgeitems = 6, .linewidth = 60, .suppress = false};
  auto same = [](const aj::PrintOptions& o, const aj::PrintOptions& p) {
    return o.precision == p.precision && o.threshold == p.threshold && o.edgeitems == p.edgeitems &&
           o.linewidth == p.linewidth && o.suppress == p.suppress;
  };
  // A reader sees whole option sets, never a mix of two.
  bool torn = false;
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) aj::set_printoptions(i % 2 ? a : b);
  });
  std::thread reader([&] {
    for (int i = 0; i < 2000; ++i) {
      aj::PrintOptions o = aj::printoptions();
      if (!same(o, saved) && !same(o, a) && !same(o, b)) torn = true;
    }
  });
  writer.join();
  reader.join();
  CHECK_FALSE(torn);
  CHECK(same(aj::printoptions(), a));  // the last set wins, in every thread
  aj::set_printoptions(saved);
}

TEST_CASE("summarized views and lazy arrays print their corners as NumPy does") {
  // Only the corners are read (through views of the evaluated array): the
  // element order must still be the view's, for transposes and reversed, strided slices.
  aj::Array x = aj::reshape(aj::arange(5000), {100, 50});
  aj::Array y = aj::transpose(x) * 2;
  CHECK_FALSE(y.is_evaluated());
  CHECK(str(y) ==
        "array([[   0,  100,  200, ..., 9700, 9800, 9900],\n"
        "       [   2,  102,  202, ..., 9702, 9802, 9902],\n"
        "       [   4,  104,  204, ..., 9704, 9804, 9904],\n"
        "       ...,\n"
        "       [  94,  194,  294, ..., 9794, 9894, 9994],\n"
        "       [  96,  196,  296, ..., 9796, 9896, 9996],\n"
        "       [  98,  198,  298, ..., 9798, 9898, 9998]],\n"
        "      dtype=i64, shape=[50, 100])");
  CHECK(y.is_evaluated());

  // np.arange(8000).reshape(20, 20, 20).astype(np.float32)[::-1, :, ::2] / 4, edgeitems=1
  aj::Array cube = aj::reshape(aj::arange(8000), {20, 20, 20}).astype(DType::f32) / 4;
  aj::Array v = aj::slice(aj::slice(cube, 0, std::nullopt, std::nullopt, -1), 2, std::nullopt,
                          std::nullopt, 2);
  aj::ScopedPrintOptions edge1({.edgeitems = 1});
  CHECK(aj::array2string(v) ==
        "[[[1900.  ... 1904.5]\n  ...\n  [1995.  ... 1999.5]]\n\n ...\n\n"
        " [[   0.  ...    4.5]\n  ...\n  [  95.  ...   99.5]]]");
  CHECK(str(v) ==
        "array([[[1900. , ..., 1904.5],\n        ...,\n        [1995. , ..., 1999.5]],\n\n"
        "       ...,\n\n       [[   0. , ...,    4.5],\n        ...,\n"
        "        [  95. , ...,   99.5]]], dtype=f32, shape=[20, 20, 10])");
}

TEST_CASE("a CUDA array prints its values as the same array on the CPU, and names its device") {
  if (!aj::cuda::available()) {
    MESSAGE("no GPU: " << aj::cuda::unavailable_reason() << ": skipped");
    return;
  }
  aj::Array host = aj::reshape(aj::arange(6000), {60, 100}).astype(DType::f32) / 8;  // summarized
  aj::Array dev = host.to(aj::Device::cuda(0));
  CHECK(aj::array2string(dev) == aj::array2string(host));
  const std::string text = str(dev);
  CHECK(text.rfind("dtype=f32, shape=[60, 100], device=cuda:0)") ==
        text.size() - std::string("dtype=f32, shape=[60, 100], device=cuda:0)").size());
  aj::Array small = aj::from_vector(std::vector<double>{0.5, -1.0}).to(aj::Device::cuda(0));
  CHECK(str(small) == "array([ 0.5, -1. ], dtype=f64, shape=[2], device=cuda:0)");
}

// ---- dtype, shape ---------------------------------------------------------------------------

TEST_CASE("DType and Shape print as their names and bracketed extents") {
  CHECK(str(DType::bool_) == "bool");
  CHECK(str(DType::i32) == "i32");
  CHECK(str(DType::i64) == "i64");
  CHECK(str(DType::f32) == "f32");
  CHECK(str(DType::f64) == "f64");
  CHECK(std::string(aj::dtype_name(DType::f64)) == "f64");
  CHECK(str(aj::Shape{2, 3}) == "[2, 3]");
  CHECK(str(aj::Shape{}) == "[]");
  CHECK(aj::Shape{7}.str() == "[7]");
  CHECK(aj::Shape{1, 0, 4}.str() == "[1, 0, 4]");
  CHECK(aj::Device::cpu().str() == "cpu");
  CHECK(aj::Device::cuda(1).str() == "cuda:1");
}

// ---- dump, to_dot ------------------------------------------------------------------------------

TEST_CASE("dump of (x + 2) * 3 lists nodes in dependency order with dense ids") {
  aj::Array x = aj::from_vector(std::vector<float>{1, 2, 3, 4}, {4});
  aj::Array y = (x + 2) * 3;
  CHECK(aj::dump({y}) ==
        "%0 = input f32[4]\n"
        "%1 = const f32[4] 2\n"
        "%2 = add f32[4] %0, %1\n"
        "%3 = const f32[4] 3\n"
        "%4 = mul f32[4] %2, %3\n");
  // Deterministic: the same text every time.
  CHECK(aj::dump({y}) == aj::dump({y}));
  // After evaluation the result is a leaf input.
  y.eval();
  CHECK(aj::dump({y}) == "%0 = input f32[4]\n");
}

TEST_CASE("dump of integer constants, reductions, views and several roots") {
  aj::Array x = aj::from_vector(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  aj::Array s = aj::sum(aj::transpose(x) - 1, 1);
  CHECK(aj::dump({s}) ==
        "%0 = input i64[2, 3]\n"
        "%1 = transpose i64[3, 2] %0 perm=[1, 0]\n"
        "%2 = const i64[3, 2] 1\n"
        "%3 = sub i64[3, 2] %1, %2\n"
        "%4 = sum i64[3] %3 axes=[1]\n");
  aj::Array sl = aj::slice(x, 1, 2, 0, -1);
  CHECK(aj::dump({sl}) ==
        "%0 = input i64[2, 3]\n"
        "%1 = slice i64[2, 2] %0 start,step=[0, 1, 2, -1]\n");
  // Two roots sharing x: x appears once, numbered first.
  aj::Array m = aj::max(x, 0);
  CHECK(aj::dump({m, sl}) ==
        "%0 = input i64[2, 3]\n"
        "%1 = max i64[3] %0 axes=[0]\n"
        "%2 = slice i64[2, 2] %0 start,step=[0, 1, 2, -1]\n");
}

TEST_CASE("to_dot gives a Graphviz digraph with one edge per input") {
  aj::Array x = aj::from_vector(std::vector<float>{1, 2, 3}, {3});
  aj::Array y = x + aj::from_vector(std::vector<float>{2}, {1});
  std::string dot = aj::to_dot(y);
  CHECK(dot.rfind("digraph", 0) == 0);
  CHECK(dot.back() == '\n');
  CHECK(dot.find("}\n") == dot.size() - 2);
  // Nodes: %0 input, %1 input [1], %2 broadcast, %3 add; edges 1->2, 0->3, 2->3.
  CHECK(count(dot, "->") == 3);
  CHECK(dot.find("n1 -> n2;") != std::string::npos);
  CHECK(dot.find("n0 -> n3;") != std::string::npos);
  CHECK(dot.find("n2 -> n3;") != std::string::npos);
  CHECK(dot.find("add") != std::string::npos);
  CHECK(dot.find("f32[3]") != std::string::npos);
  // An evaluated array is a single node with no edges.
  y.eval();
  std::string dot2 = aj::to_dot(y);
  CHECK(dot2.find("digraph") != std::string::npos);
  CHECK(count(dot2, "->") == 0);
  CHECK(count(dot2, "[label=") == 1);
}

TEST_CASE("Stats print their counters") {
  aj::Stats s;
  s.evals = 3;
  s.system_allocs = 7;
  s.live_bytes = 64;
  std::string t = str(s);
  CHECK(t == s.str());
  CHECK(t.find("evals 3") != std::string::npos);
  CHECK(t.find("system allocs 7") != std::string::npos);
  CHECK(t.find("live 64 bytes") != std::string::npos);
}

}  // TEST_SUITE
