// Random numbers from a key that is an array (arrayjit/random.hpp, "random
// numbers from a key"): Op::RandomBits hashes (key, counter) elementwise with
// the generators' own hash (base/semantics.hpp, random_bits), so the key is
// an operand of the kernel, not a constant traced into it, and a compiled
// function replays with the key its caller passes.
//
//   bits(key, shape)      = random_bits(key, i)                     element i, i64
//   uniform(key, shape)   = lo + (hi - lo) * (bits mod 2^53) * 2^-53   in f64, then dtype
//   normal(key, shape)    = Box-Muller on the uniforms of counters 2i and 2i + 1
//   fold_in(key, data)    = random_bits(key, data)                   a rank-0 key
//   split(key, n)         = fold_in(key, 0 .. n-1)
#include <cmath>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "arrayjit/random.hpp"
#include "core/api/random_checks.hpp"
#include "core/api/trace.hpp"

namespace aj::random {

namespace {

// RandomBits over a key broadcast to `shape` and the counters `counter`
// (i64 arrays; the key rank 0).
Array hash(const Array& key, const Array& counter, const Loc& loc) {
  const Shape& shape = trace::node(counter).shape;
  const Array k = trace::broadcast(key, shape, loc);
  Node n;
  n.op = Op::RandomBits;
  n.dtype = DType::i64;
  n.shape = shape;
  n.inputs = {k.node_id(), counter.node_id()};
  return trace::make(std::move(n), loc);
}

// 0, 1, ... in `shape`, times `scale` plus `offset` (i64).
Array counters(const Shape& shape, std::int64_t scale, std::int64_t offset, const Loc& loc) {
  Array c = reshape(arange(shape.numel(), DType::i64, loc), shape, loc);
  if (scale != 1) c = multiply(Operand(c, loc), Operand(scale, loc));
  if (offset != 0) c = add(Operand(c, loc), Operand(offset, loc));
  return c;
}

// Uniform in [0, 1) in f64 from 53 of the bits.
Array unit(const Array& bits, const Loc& loc) {
  const Array low = mod(Operand(bits, loc), Operand(std::int64_t{1} << 53, loc));  // [0, 2^53): divisor's sign
  return multiply(Operand(trace::cast(low, DType::f64, loc), loc), Operand(0x1.0p-53, loc));
}

void check_float(const char* name, DType dtype, const Loc& loc) {
  if (dtype != DType::f32 && dtype != DType::f64) {
    user_error(name, std::string("makes f32 or f64 arrays, not ") + dtype_name(dtype) + " (use astype after)", loc);
  }
}

}  // namespace

Key::Key(const Array& key, Loc loc) try {
  trace::Scope scope;
  const Array& k = trace::local(key, "random::Key", loc);
  const Node& n = trace::node(k);
  if (n.shape.ndim() != 0) {
    user_error("random::Key", "a key is a rank-0 integer array, got " + trace::describe(k) +
                                  " (one key for the whole array: fold_in makes more)", loc);
  }
  if (is_float(n.dtype)) {
    user_error("random::Key", "a key is an integer (or bool) array, got " + trace::describe(k), loc);
  }
  key_ = trace::cast(k, DType::i64, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("random::Key", loc);
}

Key::Key(std::int64_t seed, Loc loc) : Key(full({}, seed, DType::i64, loc), loc) {}

Key fold_in(const Key& key, std::int64_t data, Loc loc) try {
  trace::Scope scope;
  const Array& k = trace::local(key.array(), "random::fold_in", loc);
  return Key(hash(k, full({}, data, DType::i64, loc), loc), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("random::fold_in", loc);
}

Key key(std::int64_t seed, Loc loc) { return Key(seed, loc); }

std::vector<Key> split(const Key& key, int n, Loc loc) {
  if (n < 0) user_error("random::split", "negative count " + std::to_string(n), loc);
  std::vector<Key> keys;
  keys.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) keys.push_back(fold_in(key, i, loc));
  return keys;
}

Array bits(const Key& key, Shape shape, Loc loc) try {
  trace::Scope scope;
  trace::check_array_size(shape, DType::i64, "random::bits", loc);
  const Array& k = trace::local(key.array(), "random::bits", loc);
  return hash(k, counters(shape, 1, 0, loc), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("random::bits", loc);
}

Array uniform(const Key& key, Shape shape, double lo, double hi, DType dtype, Loc loc) try {
  trace::Scope scope;
  const char* name = "random::uniform";
  check_float(name, dtype, loc);
  check_uniform(name, lo, hi, dtype, loc);
  trace::check_array_size(shape, DType::f64, name, loc);
  const Array& k = trace::local(key.array(), name, loc);
  const Array u = unit(hash(k, counters(shape, 1, 0, loc), loc), loc);
  Array v = trace::cast(add(Operand(lo, loc), Operand(multiply(Operand(u, loc), Operand(hi - lo, loc)), loc)), dtype, loc);
  if (hi > lo) {  // [lo, hi): a value rounded up to hi is the largest below it
    const double below = dtype == DType::f32 ? static_cast<double>(std::nextafter(static_cast<float>(hi), -INFINITY))
                                             : std::nextafter(hi, -INFINITY);
    v = minimum(Operand(v, loc), Operand(below, loc));
  }
  return v;
} catch (const std::bad_alloc&) {
  detail::out_of_memory("random::uniform", loc);
}

Array normal(const Key& key, Shape shape, double mean, double stddev, DType dtype, Loc loc) try {
  trace::Scope scope;
  const char* name = "random::normal";
  check_float(name, dtype, loc);
  check_normal(name, mean, stddev, dtype, loc);
  trace::check_array_size(shape, DType::f64, name, loc);
  const Array& k = trace::local(key.array(), name, loc);
  // u1 in (0, 1] (its log is finite), u2 in [0, 1): counters 2i and 2i + 1.
  const Array u1 = subtract(Operand(1.0, loc), Operand(unit(hash(k, counters(shape, 2, 0, loc), loc), loc), loc));
  const Array u2 = unit(hash(k, counters(shape, 2, 1, loc), loc), loc);
  const Array r = sqrt(Operand(multiply(Operand(-2.0, loc), Operand(log(Operand(u1, loc)), loc)), loc));
  const Array z = multiply(Operand(r, loc), Operand(cos(Operand(multiply(Operand(6.283185307179586, loc), Operand(u2, loc)), loc)), loc));
  return trace::cast(add(Operand(mean, loc), Operand(multiply(Operand(z, loc), Operand(stddev, loc)), loc)), dtype, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("random::normal", loc);
}

Array bernoulli(const Key& key, Shape shape, double p, Loc loc) try {
  check_probability("random::bernoulli", p, loc);
  return Operand(uniform(key, std::move(shape), 0.0, 1.0, DType::f64, loc), loc) < Operand(p, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("random::bernoulli", loc);
}

}  // namespace aj::random
