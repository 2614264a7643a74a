// aj::Array: a cheap handle to a node of the traced graph.
//
// Every op below records a node at once (shape and dtype are inferred when the
// op is written, and mistakes throw aj::Error naming the caller's file:line).
// Nothing runs until a value is needed: eval(), to_vector(), item(), printing.
//
// Threads: any number of threads may trace, evaluate, read out and destroy
// arrays at the same time. Each thread traces into a graph of its own, so
// arrays made on different threads are independent and never contend; an
// array may be handed to another thread and used there (as an operand it is
// evaluated first, then shared without a copy), and one evaluated array
// (weights, say) may be read by many threads at once. What is not allowed,
// as for std::vector: two threads assigning to the same Array object at once,
// or one assigning while another reads it (copy the handle instead: copies are
// cheap and safe). docs/semantics.md, "Threads", has the whole model.
#pragma once

#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"
#include "arrayjit/ops.def"

namespace aj {

class Array;
struct ArrayData;
class Graph;  // a thread's traced graph (internal: graph/graph.hpp)

// Axes of a reduction: one axis, a list, or (default) all of them.
// Negative axes count from the end.
class Axes {
 public:
  Axes() : all_(true) {}
  Axes(int axis) : axes_{axis} {}
  Axes(std::initializer_list<int> axes) : axes_(axes) {}
  Axes(std::vector<int> axes) : axes_(std::move(axes)) {}
  static Axes all() { return Axes(); }
  bool is_all() const { return all_; }
  const std::vector<int>& list() const { return axes_; }

 private:
  std::vector<int> axes_;
  bool all_ = false;
};

// One axis of a slice, Python style: start, stop, step; nullopt means "from
// the start/to the end" in the direction of step. Negative start/stop count
// from the end; they must lie in [-n, n] (no silent clamping).
struct Slice {
  std::optional<std::int64_t> start, stop;
  std::int64_t step = 1;
  Slice() = default;
  Slice(std::optional<std::int64_t> start_, std::optional<std::int64_t> stop_,
        std::int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};

// A scalar as written in C++ code: bool, integer or floating point. It is
// "weak": it takes the dtype of the array it meets (see docs/semantics.md).
struct Scalar {
  enum class Kind : std::uint8_t { boolean, integer, floating };
  Kind kind = Kind::integer;
  std::int64_t i = 0;
  double f = 0.0;
  // An unsigned integer above INT64_MAX: `i` holds its bits (read it back as
  // uint64_t); it fits no integer dtype, only the floating ones.
  bool above_int64 = false;

  Scalar() = default;
  template <class T>
    requires std::is_arithmetic_v<T>
  Scalar(T v) {  // NOLINT: implicit on purpose
    if constexpr (std::is_same_v<T, bool>) {
      kind = Kind::boolean, i = v, f = v;
    } else if constexpr (std::is_integral_v<T>) {
      kind = Kind::integer, i = static_cast<std::int64_t>(v), f = static_cast<double>(v);
      if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
        above_int64 = v > static_cast<T>(INT64_MAX);
      }
    } else {
      kind = Kind::floating, f = static_cast<double>(v), i = 0;
    }
  }
};

namespace detail {
// Marks a handle weak or not (core/api/elementwise.cpp, aj::scalar).
void set_weak(Array& a, bool weak) noexcept;
}  // namespace detail

// An operand of an elementwise op: an Array or a scalar. Converting to it
// captures the caller's source location, which is how `a + b` names the line
// it was written on in error messages.
struct Operand {
  Operand(const Array& a, Loc l = Loc::current());
  template <class T>
    requires std::is_arithmetic_v<T>
  Operand(T v, Loc l = Loc::current()) : scalar(v), is_scalar(true), loc(l) {}
  Operand(const Operand&) = default;

  const Array* array = nullptr;
  Scalar scalar;
  bool is_scalar = false;
  Loc loc;
};

class Array {
 public:
  Array() = default;  // an empty handle; using it throws
  Array(const Array& o);
  Array(Array&& o) noexcept;
  Array& operator=(const Array& o);
  Array& operator=(Array&& o) noexcept;
  ~Array();

  bool valid() const { return id_ != kNoNode; }
  // On an empty handle these throw a user error naming the caller's line.
  // shape() refers into the array's node: valid as long as a handle to this
  // array lives (on any thread), whatever else is traced meanwhile.
  DType dtype(Loc loc = Loc::current()) const;
  const Shape& shape(Loc loc = Loc::current()) const;
  int ndim(Loc loc = Loc::current()) const;
  std::int64_t size(Loc loc = Loc::current()) const;
  Device device(Loc loc = Loc::current()) const;

  // Evaluate now (and everything this array needs). Returns *this.
  const Array& eval(Loc loc = Loc::current()) const;
  bool is_evaluated(Loc loc = Loc::current()) const;

  // Copy the values out (evaluating first). T may differ from dtype(); values
  // are converted with astype's rules.
  template <class T>
  std::vector<T> to_vector(Loc loc = Loc::current()) const;
  template <class T>
  T item(Loc loc = Loc::current()) const;

  // ---- out without copies (docs/semantics.md, "Memory shared with callers") ----
  // The evaluated elements where they lie (evaluating first), with their
  // layout. Read-only; valid while the returned ArrayData (which holds a
  // handle) lives. A GPU array gives its device pointer.
  ArrayData data(Loc loc = Loc::current()) const;
  // The values into caller memory of this dtype (evaluating first), strides in
  // elements (empty = row-major). A contiguous source and destination is one
  // memcpy. GPU arrays are copied to the host first.
  void copy_to(void* dst, std::vector<std::int64_t> strides = {}, Loc loc = Loc::current()) const;
  // Evaluate with the kernel writing straight into `dst` (row-major, dtype()
  // elements; no arrayjit buffer, no copy). Afterwards this array borrows dst
  // (as aj::borrow): the caller keeps it alive and unchanged while arrays use
  // it. When the result is not made by a host kernel (already evaluated, a
  // view, matmul/concatenate) the values are copied there instead; a GPU
  // array is copied there and keeps its device buffer. dst must not overlap
  // memory the evaluation reads.
  const Array& eval_into(void* dst, Loc loc = Loc::current()) const;

  Array astype(DType t, Loc loc = Loc::current()) const;
  // A copy on device `d` (this array when it is there already). Host <-> GPU
  // copies are ordered on the device's current stream (arrayjit/cuda.hpp).
  Array to(Device d, Loc loc = Loc::current()) const;

  // Convenience members mirroring the free functions.
  Array reshape(Shape s, Loc loc = Loc::current()) const;
  Array transpose(std::vector<int> perm = {}, Loc loc = Loc::current()) const;
  Array T(Loc loc = Loc::current()) const;  // reverse all axes

  Array& operator+=(const Operand& b);
  Array& operator-=(const Operand& b);
  Array& operator*=(const Operand& b);
  Array& operator/=(const Operand& b);
  Array& operator%=(const Operand& b);

  // Whether this handle is weak: made by aj::scalar (or passed so to an
  // aj::compile'd function), or by elementwise ops of weak arrays and C++
  // scalars only. In an elementwise op a weak array counts as the C++ scalar
  // it holds: it takes the dtype of the other operands (f32 * weak f64 is
  // f32), and only moves the result to another category (bool, integer,
  // float). astype, and any other op that makes an array, give an ordinary
  // one.
  bool is_weak() const noexcept { return weak_; }

  // Internal: the node this handle refers to, in graph_of().
  static constexpr std::uint32_t kNoNode = 0xffffffffu;
  std::uint32_t node_id() const { return id_; }
  Graph* graph_of() const { return g_; }
  // A handle to node `id` of the graph the calling thread works in now
  // (graph/graph.hpp graph()); takes a new external reference.
  static Array from_node(std::uint32_t id);

 private:
  void copy_out(void* dst, DType as, const Loc& loc) const;
  friend void detail::set_weak(Array& a, bool weak) noexcept;
  Graph* g_ = nullptr;
  std::uint32_t id_ = kNoNode;
  bool weak_ = false;  // is_weak(); a handle's property, copied with it
};

// What Array::data() gives: a read-only window on evaluated elements.
struct ArrayData {
  const void* ptr = nullptr;          // element [0, 0, ...] (the offset applied)
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::int64_t> strides;  // elements, one per axis (may be 0 or negative)
  Device device;
  Array owner;                        // keeps the buffer alive (and out of in-place reuse)

  bool row_major() const;     // C-contiguous (size-1 axes may have any stride)
  bool column_major() const;  // Fortran-contiguous
  template <class T>
  const T* as() const {
    if (dtype_of<T> != dtype) {
      throw Error(Error::Kind::user, std::string("aj: ArrayData::as: the data is ") + dtype_name(dtype) +
                                         ", not " + dtype_name(dtype_of<T>));
    }
    return static_cast<const T*>(ptr);
  }
};

template <class T>
std::vector<T> Array::to_vector(Loc loc) const {
  if (!valid()) user_error("to_vector", "empty Array handle (default-constructed or moved-from)", loc);
  try {  // the vectors below may be more than the system has
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<std::uint8_t> tmp(static_cast<std::size_t>(size()));
      copy_out(tmp.data(), DType::bool_, loc);
      return std::vector<bool>(tmp.begin(), tmp.end());
    } else {
      // A dtype's own type (arrayjit/dtypes.def), or the nearest of another
      // arithmetic type of this size (long long on a platform where that is
      // not int64_t, say).
      using S = std::conditional_t<
          requires { dtype_of_t<T>::value; }, T,
          std::conditional_t<std::is_floating_point_v<T>, std::conditional_t<sizeof(T) == 4, float, double>,
                             std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>>>;
      std::vector<S> out(static_cast<std::size_t>(size()));
      copy_out(out.data(), dtype_of<S>, loc);
      if constexpr (std::is_same_v<S, T>) {
        return out;
      } else {
        return std::vector<T>(out.begin(), out.end());
      }
    }
  } catch (const std::bad_alloc&) {
    detail::out_of_memory("to_vector", loc);
  }
}

template <class T>
T Array::item(Loc loc) const {
  if (!valid()) user_error("item", "empty Array handle (default-constructed or moved-from)", loc);
  if (size() != 1) {
    user_error("item", "array of shape " + shape().str() + " has " + std::to_string(size()) +
                           " elements, item() needs exactly one", loc);
  }
  return to_vector<T>(loc)[0];
}

// ---- creation ---------------------------------------------------------------

Array zeros(Shape shape, DType dtype = DType::f32, Loc loc = Loc::current());
Array ones(Shape shape, DType dtype = DType::f32, Loc loc = Loc::current());
Array full(Shape shape, Scalar value, DType dtype, Loc loc = Loc::current());
// The dtype from the value, as zeros' and arange's defaults: a float is f32,
// an integer i64, a bool bool (full({256}, 0.01) is f32).
Array full(Shape shape, Scalar value, Loc loc = Loc::current());
// A C++ scalar as a weak rank-0 array (is_weak(), evaluated): f64 for a
// floating value, i64 for an integer, bool for a bool. Arithmetic on it is
// traced (`lr * (1 + t)` with lr and t weak is an array computed in f64) and
// its result meets other arrays as the C++ scalar would (`w - c * g` is f32
// for f32 w and g). aj::compile passes a scalar argument this way where the
// function takes an aj::Array, so arithmetic on it replays.
Array scalar(Scalar value, Loc loc = Loc::current());
// Values start, start+step, ... below stop (NumPy's arange).
Array arange(double start, double stop, double step = 1.0, DType dtype = DType::f32,
             Loc loc = Loc::current());
Array arange(std::int64_t n, DType dtype = DType::i64, Loc loc = Loc::current());
Array linspace(double start, double stop, std::int64_t num, DType dtype = DType::f32,
               Loc loc = Loc::current());
// n x m identity (m defaults to n); k shifts the diagonal up (k > 0) or down.
Array eye(std::int64_t n, std::optional<std::int64_t> m = std::nullopt, std::int64_t k = 0,
          DType dtype = DType::f32, Loc loc = Loc::current());
// Copies the data. data.size() must equal shape.numel().
template <class T>
Array from_vector(const std::vector<T>& data, Shape shape, Loc loc = Loc::current());
template <class T>
Array from_vector(const std::vector<T>& data, Loc loc = Loc::current()) {
  return from_vector<T>(data, Shape{static_cast<std::int64_t>(data.size())}, loc);
}
// Zero-copy view of caller memory (strides in elements; empty = row-major).
// The caller keeps the memory alive and unchanged while arrays use it; a
// borrowed buffer is never written by arrayjit and never reused in place.
template <class T>
Array borrow(T* ptr, Shape shape, std::vector<std::int64_t> strides = {},
             Loc loc = Loc::current());
// Caller memory lent for writing (row-major, zero-copy): read as borrow's,
// and in addition arrayjit may write a result into it in place wherever it
// would reuse a buffer of its own: when the array is donated to a compiled
// call (aj::donate, std::move) or is a temporary nothing else holds, an
// elementwise output of its layout takes the memory over, so the caller finds
// the new values at ptr after the evaluation (an optimizer updating weights
// a framework owns, with no copy). Never freed; the caller keeps it alive
// while arrays use it and does not read it while an evaluation runs.
template <class T>
Array lend(T* ptr, Shape shape, Loc loc = Loc::current());

// ---- elementwise --------------------------------------------------------------

Array operator+(const Operand& a, const Operand& b);
Array operator-(const Operand& a, const Operand& b);
Array operator*(const Operand& a, const Operand& b);
Array operator/(const Operand& a, const Operand& b);  // floor division on integers
Array operator%(const Operand& a, const Operand& b);  // sign of divisor (NumPy mod)
Array operator-(const Operand& a);
Array operator==(const Operand& a, const Operand& b);
Array operator!=(const Operand& a, const Operand& b);
Array operator<(const Operand& a, const Operand& b);
Array operator<=(const Operand& a, const Operand& b);
Array operator>(const Operand& a, const Operand& b);
Array operator>=(const Operand& a, const Operand& b);
Array operator&&(const Operand& a, const Operand& b);  // bool only
Array operator||(const Operand& a, const Operand& b);  // bool only
Array operator!(const Operand& a);                     // bool only
// Bit operations (integers; bool: logic): bitwise_and, bitwise_or,
// bitwise_xor, bitwise_invert, left_shift, right_shift.
Array operator&(const Operand& a, const Operand& b);
Array operator|(const Operand& a, const Operand& b);
Array operator^(const Operand& a, const Operand& b);
Array operator~(const Operand& a);
Array operator<<(const Operand& a, const Operand& b);
Array operator>>(const Operand& a, const Operand& b);

// The functions that are an op and nothing more: the rows of arrayjit/ops.def
// whose Api column is `unary` or `binary`. AJ_UNARY_FUNCTIONS(X) calls
// X(function, Op enumerator) for each; each is declared here as
// `Array function(const Operand&...)` and core/api/elementwise.cpp defines it
// from the same list (dtype rules, broadcasting and checks are the op's
// category's). See ops.def for what each computes (docs/semantics.md in full).
#define AJ_UNARY_FUNCTIONS(X) AJ_OPS_V(AJ_PICK_UNARY_, X)
#define AJ_BINARY_FUNCTIONS(X) AJ_OPS_V(AJ_PICK_BINARY_, X)
#define AJ_PICK_UNARY_(X, e, name, arity, cat, flags, api, fn, libm, acc) AJ_PICK_UNARY_##api(X, fn, e)
#define AJ_PICK_BINARY_(X, e, name, arity, cat, flags, api, fn, libm, acc) AJ_PICK_BINARY_##api(X, fn, e)
#define AJ_PICK_UNARY_unary(X, fn, e) X(fn, e)
#define AJ_PICK_UNARY_binary(X, fn, e)
#define AJ_PICK_UNARY_c_binary(X, fn, e)
#define AJ_PICK_UNARY_none(X, fn, e)
#define AJ_PICK_BINARY_unary(X, fn, e)
#define AJ_PICK_BINARY_binary(X, fn, e) X(fn, e)
#define AJ_PICK_BINARY_c_binary(X, fn, e)
#define AJ_PICK_BINARY_none(X, fn, e)
#define AJ_DECLARE_UNARY(function, op) Array function(const Operand& a);
#define AJ_DECLARE_BINARY(function, op) Array function(const Operand& a, const Operand& b);
AJ_UNARY_FUNCTIONS(AJ_DECLARE_UNARY)
AJ_BINARY_FUNCTIONS(AJ_DECLARE_BINARY)
#undef AJ_DECLARE_UNARY
#undef AJ_DECLARE_BINARY

Array true_divide(const Operand& a, const Operand& b);  // always floating point
Array floor_divide(const Operand& a, const Operand& b); // floor(a / b), same dtype
Array where(const Operand& cond, const Operand& a, const Operand& b);
Array clip(const Operand& x, const Operand& lo, const Operand& hi);

// Elementwise functions composed of the ops above (they fuse like any op;
// docs/semantics.md, "Elementwise functions"). The predicates give bool: an
// integer or bool operand is never NaN or inf, and its sign bit is x < 0.
Array isnan(const Operand& x);
Array isinf(const Operand& x);
Array isfinite(const Operand& x);
Array signbit(const Operand& x);  // also true for -0.0
// NaN -> nan, +inf -> posinf, -inf -> neginf (by default the dtype's largest
// and lowest finite values); integers and bool unchanged.
Array nan_to_num(const Operand& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                 std::optional<double> neginf = std::nullopt);
Array square(const Operand& x);      // x * x (bool: x, as NumPy)
Array reciprocal(const Operand& x);  // 1 / x; integers: 1 / x truncated (+-1 at +-1, else 0; 0 at 0)
Array logical_xor(const Operand& a, const Operand& b);  // bool only, as logical_and

// Array-API (and NumPy 2) names of the functions above.
inline Array asin(const Operand& x) { return arcsin(x); }
inline Array acos(const Operand& x) { return arccos(x); }
inline Array atan(const Operand& x) { return arctan(x); }
inline Array asinh(const Operand& x) { return arcsinh(x); }
inline Array acosh(const Operand& x) { return arccosh(x); }
inline Array atanh(const Operand& x) { return arctanh(x); }
inline Array atan2(const Operand& y, const Operand& x) { return arctan2(y, x); }
inline Array power(const Operand& a, const Operand& b) { return pow(a, b); }
inline Array remainder(const Operand& a, const Operand& b) { return mod(a, b); }
inline Array absolute(const Operand& x) { return abs(x); }
inline Array gammaln(const Operand& x) { return lgamma(x); }  // SciPy's name

// ---- reductions ----------------------------------------------------------------

Array sum(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
Array prod(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
Array mean(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
Array max(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
Array min(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
Array all(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
Array any(const Array& a, Axes axes = Axes::all(), bool keepdims = false, Loc loc = Loc::current());
// Index along one axis (flattened index when axis is nullopt), i64.
Array argmax(const Array& a, std::optional<int> axis = std::nullopt, bool keepdims = false,
             Loc loc = Loc::current());
Array argmin(const Array& a, std::optional<int> axis = std::nullopt, bool keepdims = false,
             Loc loc = Loc::current());

// ---- shape ops (views where possible) -------------------------------------------

// One extent may be -1 (inferred).
Array reshape(const Array& a, Shape shape, Loc loc = Loc::current());
// Empty perm reverses the axes.
Array transpose(const Array& a, std::vector<int> perm = {}, Loc loc = Loc::current());
// The array API's names: transpose with every axis given, and the last two
// axes swapped (a view; an error below rank 2).
Array permute_dims(const Array& a, std::vector<int> axes, Loc loc = Loc::current());
Array matrix_transpose(const Array& a, Loc loc = Loc::current());
Array broadcast_to(const Array& a, Shape shape, Loc loc = Loc::current());
Array expand_dims(const Array& a, int axis, Loc loc = Loc::current());
// Drop the given size-1 axes (all size-1 axes by default).
Array squeeze(const Array& a, Axes axes = Axes::all(), Loc loc = Loc::current());
// One Slice per leading axis; missing trailing axes are taken whole.
Array slice(const Array& a, std::vector<Slice> slices, Loc loc = Loc::current());
// Slice a single axis.
Array slice(const Array& a, int axis, std::optional<std::int64_t> start,
            std::optional<std::int64_t> stop, std::int64_t step = 1, Loc loc = Loc::current());
Array concatenate(const std::vector<Array>& arrays, int axis = 0, Loc loc = Loc::current());
inline Array concat(const std::vector<Array>& arrays, int axis = 0, Loc loc = Loc::current()) {
  return concatenate(arrays, axis, loc);  // the array API's name
}
Array stack(const std::vector<Array>& arrays, int axis = 0, Loc loc = Loc::current());

// ---- linear algebra ---------------------------------------------------------------

// NumPy matmul: 1-d operands are promoted and the added axis removed; leading
// (batch) axes broadcast.
Array matmul(const Array& a, const Array& b, Loc loc = Loc::current());

// ---- evaluation, inspection -------------------------------------------------------

void eval(const std::vector<Array>& arrays, Loc loc = Loc::current());

// Graphviz text of the unevaluated graph reaching `a`.
std::string to_dot(const Array& a, Loc loc = Loc::current());
// Deterministic text of the graph reaching the arrays ("%3 = add f32[4] %1, %2").
std::string dump(const std::vector<Array>& arrays, Loc loc = Loc::current());

std::ostream& operator<<(std::ostream& os, const Array& a);
std::ostream& operator<<(std::ostream& os, DType t);
std::ostream& operator<<(std::ostream& os, const Shape& s);

namespace random {
// The random state is per thread: seed() sets the calling thread's seed, and
// every thread starts at the same default seed (give threads seeds of their
// own, e.g. seed(base + thread_index), when their streams must differ).
void seed(std::uint64_t s);
// Uniform in [lo, hi). Counter-based: the values depend only on the seed and
// the number of random arrays made since it was set, never on the backend.
Array uniform(Shape shape, double lo = 0.0, double hi = 1.0, DType dtype = DType::f32,
              Loc loc = Loc::current());
Array normal(Shape shape, double mean = 0.0, double stddev = 1.0, DType dtype = DType::f32,
             Loc loc = Loc::current());
// ---- more random arrays, counter-based as uniform: the same
// values on every backend. ----
// Integers uniform in [lo, hi) (lo < hi, both fitting dtype, hi - lo below
// 2^63), of any integer dtype: lo + (64 random bits mod (hi - lo)).
Array randint(Shape shape, std::int64_t lo, std::int64_t hi, DType dtype = DType::i64, Loc loc = Loc::current());
// A random permutation of 0 .. n-1 (i64): the positions that sort n random
// 64-bit keys (argsort, stable: a repeated key still gives a permutation).
Array permutation(std::int64_t n, Loc loc = Loc::current());
// true with probability p (0 <= p <= 1): uniform(0, 1) in f64 < p.
Array bernoulli(Shape shape, double p = 0.5, Loc loc = Loc::current());
}  // namespace random

// ---- creation from another array's shape ------------------------------
// Fills of a's shape, and of a's dtype unless one is given; like zeros(), a
// fill has no device of its own (it is made where it is used).
Array zeros_like(const Array& a, std::optional<DType> dtype = std::nullopt, Loc loc = Loc::current());
Array ones_like(const Array& a, std::optional<DType> dtype = std::nullopt, Loc loc = Loc::current());
Array full_like(const Array& a, Scalar value, std::optional<DType> dtype = std::nullopt, Loc loc = Loc::current());

}  // namespace aj
