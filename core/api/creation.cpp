// Creating arrays: fills (a broadcast constant), index generators, copies of
// caller data, zero-copy borrows and counter-based random numbers.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "arrayjit/scan_sort.hpp"
#include "backends/cpu/host_memory.hpp"
#include "core/api/foreign_storage.hpp"
#include "core/api/random_checks.hpp"
#include "core/api/trace.hpp"

namespace aj {

namespace {

Array leaf(std::shared_ptr<Storage> s, DType t, Shape shape, std::vector<std::int64_t> strides,
           const Loc& loc, std::int64_t offset = 0) {
  Node n;
  n.op = Op::Input;
  n.dtype = t;
  n.shape = std::move(shape);
  n.storage = std::move(s);
  n.strides = std::move(strides);
  n.offset = offset;
  n.loc = loc;
  return Array::from_node(graph().add(std::move(n)));
}

}  // namespace

namespace {
// `op` is the name the caller used (ones and zeros are fills too).
Array fill(const char* op, Shape shape, Scalar value, DType dtype, const Loc& loc) try {
  trace::Scope scope;
  trace::check_array_size(shape, dtype, op, loc);
  return trace::broadcast(trace::constant(value, dtype, op, loc), shape, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory(op, loc);
}
}  // namespace

Array full(Shape shape, Scalar value, DType dtype, Loc loc) {
  return fill("full", std::move(shape), value, dtype, loc);
}
Array full(Shape shape, Scalar value, Loc loc) {
  const DType t = value.kind == Scalar::Kind::boolean   ? DType::bool_
                  : value.kind == Scalar::Kind::integer ? DType::i64
                                                        : DType::f32;
  return fill("full", std::move(shape), value, t, loc);
}
// A leaf with the value written (no kernel: aj::compile makes one per call
// for each scalar argument it passes as an array).
Array scalar(Scalar value, Loc loc) try {
  trace::Scope scope;
  if (value.above_int64) {
    user_error("scalar", trace::describe(value) + " is above the i64 range, which a weak integer array holds "
                         "(pass it as a double)", loc);
  }
  auto s = cpu::host_alloc(1, 8);
  DType t = DType::f64;
  switch (value.kind) {
    case Scalar::Kind::boolean: t = DType::bool_, *static_cast<bool*>(s->data) = value.i != 0; break;
    case Scalar::Kind::integer: t = DType::i64, *static_cast<std::int64_t*>(s->data) = value.i; break;
    case Scalar::Kind::floating: *static_cast<double*>(s->data) = value.f; break;
  }
  Array a = leaf(std::move(s), t, Shape{}, {}, loc);
  detail::set_weak(a, true);
  return a;
} catch (const std::bad_alloc&) {
  detail::out_of_memory("scalar", loc);
} catch (const detail::OutOfMemory& e) {
  detail::rethrow_out_of_memory(e, "scalar", loc);
}

Array zeros(Shape shape, DType dtype, Loc loc) { return fill("zeros", std::move(shape), 0, dtype, loc); }
Array ones(Shape shape, DType dtype, Loc loc) { return fill("ones", std::move(shape), 1, dtype, loc); }

Array arange(double start, double stop, double step, DType dtype, Loc loc) try {
  trace::Scope scope;
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(stop)) {
    user_error("arange", "start, stop and step must be finite and step non-zero", loc);
  }
  if (dtype == DType::bool_) user_error("arange", "does not make bool arrays", loc);
  double len = std::ceil((stop - start) / step);
  if (!(len < 0x1p63)) {  // also catches (stop - start) overflowing to inf
    user_error("arange", "[" + trace::describe(Scalar(start)) + ", " + trace::describe(Scalar(stop)) +
                             ") in steps of " + trace::describe(Scalar(step)) +
                             " has more elements than fit in int64", loc);
  }
  auto n = static_cast<std::int64_t>(len > 0 ? len : 0);
  trace::check_array_size(Shape{n}, dtype, "arange", loc);
  Node node;
  node.op = Op::Iota;
  node.dtype = dtype;
  node.shape = Shape{n};
  node.f0 = start;
  node.f1 = step;
  return trace::make(std::move(node), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("arange", loc);
}

Array arange(std::int64_t n, DType dtype, Loc loc) try {
  trace::Scope scope;
  if (n < 0) user_error("arange", "negative length " + std::to_string(n), loc);
  if (dtype == DType::bool_) user_error("arange", "does not make bool arrays", loc);
  trace::check_array_size(Shape{n}, dtype, "arange", loc);
  Node node;
  node.op = Op::Iota;
  node.dtype = dtype;
  node.shape = Shape{n};
  node.f0 = 0;
  node.f1 = 1;
  return trace::make(std::move(node), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("arange", loc);
}

Array linspace(double start, double stop, std::int64_t num, DType dtype, Loc loc) try {
  trace::Scope scope;
  if (num < 0) user_error("linspace", "negative number of samples " + std::to_string(num), loc);
  if (dtype == DType::bool_) user_error("linspace", "does not make bool arrays", loc);
  if (!std::isfinite(start) || !std::isfinite(stop)) {
    user_error("linspace", "start and stop must be finite, got " + trace::describe(Scalar(start)) +
                               " and " + trace::describe(Scalar(stop)), loc);
  }
  trace::check_array_size(Shape{num}, dtype, "linspace", loc);
  Node node;
  node.op = Op::Linspace;
  node.dtype = dtype;
  node.shape = Shape{num};
  node.f0 = start;
  node.f1 = stop;
  return trace::make(std::move(node), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("linspace", loc);
}

Array eye(std::int64_t n, std::optional<std::int64_t> m, std::int64_t k, DType dtype, Loc loc) try {
  trace::Scope scope;
  std::int64_t cols = m.value_or(n);
  trace::check_array_size(Shape{n, cols}, dtype, "eye", loc);
  Node node;
  node.op = Op::Eye;
  node.dtype = dtype;
  node.shape = Shape{n, cols};
  node.i0 = k;
  return trace::make(std::move(node), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("eye", loc);
}

template <class T>
Array from_vector(const std::vector<T>& data, Shape shape, Loc loc) try {
  trace::Scope scope;
  std::int64_t n = trace::checked_numel(shape.dims(), "from_vector", loc);
  if (static_cast<std::int64_t>(data.size()) != n) {
    user_error("from_vector", std::to_string(data.size()) + " values do not fill shape " +
                                  shape.str() + " (" + std::to_string(n) + " elements)", loc);
  }
  constexpr DType t = dtype_of<T>;
  auto s = cpu::host_alloc(n, sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    auto* dst = static_cast<bool*>(s->data);
    for (std::int64_t i = 0; i < n; ++i) dst[i] = data[static_cast<std::size_t>(i)];
  } else if (n > 0) {
    std::memcpy(s->data, data.data(), static_cast<std::size_t>(n) * sizeof(T));
  }
  auto strides = contiguous_strides(shape);
  return leaf(std::move(s), t, std::move(shape), std::move(strides), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("from_vector", loc);
} catch (const detail::OutOfMemory& e) {
  detail::rethrow_out_of_memory(e, "from_vector", loc);
}

namespace {
// borrow and lend: caller memory as a leaf (lent: arrayjit may write it).
template <class T>
Array caller_memory(T* ptr, Shape shape, std::vector<std::int64_t> strides, bool lent, const char* op,
                    const Loc& loc) try {
  trace::Scope scope;
  if (strides.empty()) strides = contiguous_strides(shape);
  const detail::ForeignSpan span =
      detail::check_foreign_layout(ptr, dtype_of<std::remove_const_t<T>>, shape, strides, op, loc);
  // Negative strides walk below ptr: the storage starts at the lowest address.
  auto s = cpu::host_borrow(span.bytes ? const_cast<std::remove_const_t<T>*>(ptr) + span.lo
                                       : const_cast<std::remove_const_t<T>*>(ptr),
                            span.bytes);
  s->lent = lent;
  return leaf(std::move(s), dtype_of<std::remove_const_t<T>>, std::move(shape), std::move(strides),
              loc, -span.lo);
} catch (const std::bad_alloc&) {
  detail::out_of_memory(op, loc);
}
}  // namespace

template <class T>
Array borrow(T* ptr, Shape shape, std::vector<std::int64_t> strides, Loc loc) {
  return caller_memory(ptr, std::move(shape), std::move(strides), false, "borrow", loc);
}

template <class T>
Array lend(T* ptr, Shape shape, Loc loc) {
  return caller_memory(ptr, std::move(shape), {}, true, "lend", loc);
}

#define AJ_INSTANTIATE(T)                                                              \
  template Array from_vector<T>(const std::vector<T>&, Shape, Loc);                    \
  template Array lend<T>(T*, Shape, Loc);                                              \
  template Array borrow<T>(T*, Shape, std::vector<std::int64_t>, Loc);                 \
  template Array borrow<const T>(const T*, Shape, std::vector<std::int64_t>, Loc);
#define AJ_INSTANTIATE_DTYPE(e, name, bytes, cpp, cuda, kind, digits, fmt) AJ_INSTANTIATE(cpp)
AJ_DTYPES(AJ_INSTANTIATE_DTYPE)
#undef AJ_INSTANTIATE_DTYPE
#undef AJ_INSTANTIATE

namespace random {

namespace {
// Per thread (docs/semantics.md, "Threads"): seed() sets the calling thread's
// stream; every thread starts at the same default seed.
thread_local std::uint64_t g_seed = 0x5eed;
thread_local std::uint64_t g_counter = 0;

// Each random array gets its own key: the seed mixed with a counter.
std::int64_t next_key() { return static_cast<std::int64_t>(g_seed * 0x9e3779b97f4a7c15ull + (++g_counter)); }

Array rand_node(Op op, Shape shape, double a, double b, DType dtype, const char* name, const Loc& loc) try {
  trace::Scope scope;
  if (!is_float(dtype)) {
    user_error(name, std::string("makes floating point arrays, not ") + dtype_name(dtype) +
                         " (use astype after)", loc);
  }
  trace::check_array_size(shape, dtype, name, loc);
  Node n;
  n.op = op;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.i0 = next_key();
  n.f0 = a;
  n.f1 = b;
  return trace::make(std::move(n), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory(name, loc);
}

}  // namespace

namespace {
// Parameters must be finite in the dtype made: an infinite one (or a range
// wider than the largest double) gives inf - inf = NaN values.
void check_finite(const char* op, const char* what, double v, DType dtype, const Loc& loc) {
  const double max = dtype == DType::f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  if (!(std::fabs(v) <= max)) {
    user_error(op, std::string(what) + " must be finite in " + dtype_name(dtype) + ", got " +
                       trace::describe(Scalar(v)), loc);
  }
}
}  // namespace

void check_uniform(const char* op, double lo, double hi, DType dtype, const Loc& loc) {
  check_finite(op, "lo", lo, dtype, loc);
  check_finite(op, "hi", hi, dtype, loc);
  check_finite(op, "hi - lo", hi - lo, DType::f64, loc);
  if (!(lo <= hi)) user_error(op, "needs lo <= hi", loc);
}

void check_normal(const char* op, double mean, double stddev, DType dtype, const Loc& loc) {
  check_finite(op, "mean", mean, dtype, loc);
  check_finite(op, "stddev", stddev, dtype, loc);
  if (!(stddev >= 0)) user_error(op, "needs stddev >= 0", loc);
}

void check_probability(const char* op, double p, const Loc& loc) {
  if (!(p >= 0.0 && p <= 1.0)) {
    user_error(op, "needs a probability 0 <= p <= 1, got " + trace::describe(Scalar(p)), loc);
  }
}

void seed(std::uint64_t s) {
  g_seed = s;
  g_counter = 0;
}

Array uniform(Shape shape, double lo, double hi, DType dtype, Loc loc) {
  check_uniform("random::uniform", lo, hi, dtype, loc);
  return rand_node(Op::RandUniform, std::move(shape), lo, hi, dtype, "random::uniform", loc);
}

Array normal(Shape shape, double mean, double stddev, DType dtype, Loc loc) {
  check_normal("random::normal", mean, stddev, dtype, loc);
  return rand_node(Op::RandNormal, std::move(shape), mean, stddev, dtype, "random::normal", loc);
}

// ---- integers, permutations, coin flips --------------------------------

namespace {
// 64 random bits (i64) per element: the generator the ones below build on.
Array random_bits(Shape shape, const char* name, const Loc& loc) {
  trace::check_array_size(shape, DType::i64, name, loc);
  Node n;
  n.op = Op::RandBits;
  n.dtype = DType::i64;
  n.shape = std::move(shape);
  n.i0 = next_key();
  return trace::make(std::move(n), loc);
}
}  // namespace

Array randint(Shape shape, std::int64_t lo, std::int64_t hi, DType dtype, Loc loc) try {
  trace::Scope scope;
  const char* name = "random::randint";
  if (!is_integer(dtype)) {
    user_error(name, std::string("makes integer arrays, not ") + dtype_name(dtype) + " (use astype after)", loc);
  }
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
  if (!(lo < hi)) user_error(name, "needs lo < hi, got the empty range " + range, loc);
  if (!trace::fits(Scalar(lo), dtype) || !trace::fits(Scalar(hi - 1), dtype)) {  // (lo < hi: no overflow)
    user_error(name, "range " + range + " does not fit " + dtype_name(dtype), loc);
  }
  std::int64_t span = 0;
  if (__builtin_sub_overflow(hi, lo, &span)) {
    user_error(name, "range " + range + " is 2^63 or more integers wide (hi - lo must fit i64)", loc);
  }
  trace::check_array_size(shape, dtype, name, loc);
  // bits mod span lies in [0, span) (the sign of the divisor); lo + that in
  // [lo, hi). The modulo bias is below span / 2^64.
  const Array bits = random_bits(std::move(shape), name, loc);
  const Array r = add(Operand(mod(Operand(bits, loc), Operand(span, loc)), loc), Operand(lo, loc));
  return trace::cast(r, dtype, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("random::randint", loc);
}

Array permutation(std::int64_t n, Loc loc) try {
  trace::Scope scope;
  if (n < 0) user_error("random::permutation", "negative length " + std::to_string(n), loc);
  return argsort(random_bits(Shape{n}, "random::permutation", loc), 0, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("random::permutation", loc);
}

Array bernoulli(Shape shape, double p, Loc loc) try {
  const char* name = "random::bernoulli";
  check_probability(name, p, loc);
  trace::check_array_size(shape, DType::f64, name, loc);  // the uniform numbers it compares
  const Array u = rand_node(Op::RandUniform, std::move(shape), 0.0, 1.0, DType::f64, name, loc);
  return Operand(u, loc) < Operand(p, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("random::bernoulli", loc);
}

}  // namespace random

// ---- fills of another array's shape --------------------------------

Array zeros_like(const Array& a, std::optional<DType> dtype, Loc loc) {
  const Node& n = trace::own_node(a, "zeros_like", loc);  // (not a.shape(): a read aj::compile would count)
  return fill("zeros_like", Shape(n.shape), 0, dtype.value_or(n.dtype), loc);
}
Array ones_like(const Array& a, std::optional<DType> dtype, Loc loc) {
  const Node& n = trace::own_node(a, "ones_like", loc);  // (not a.shape(): a read aj::compile would count)
  return fill("ones_like", Shape(n.shape), 1, dtype.value_or(n.dtype), loc);
}
Array full_like(const Array& a, Scalar value, std::optional<DType> dtype, Loc loc) {
  const Node& n = trace::own_node(a, "full_like", loc);  // (not a.shape(): a read aj::compile would count)
  return fill("full_like", Shape(n.shape), value, dtype.value_or(n.dtype), loc);
}

}  // namespace aj
