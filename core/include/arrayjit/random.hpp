// More random distributions (NumPy / JAX names), composed of
// aj::random::uniform, randint and permutation (arrayjit/array.hpp) and
// elementwise ops: counter-based like them, so each gives the same draws
// on every backend (the uniform bits identical, the functions of them, log
// or ndtri, within their few ulps); docs/semantics.md, "Random numbers",
// has their definitions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj::random {

// Exponential with mean `scale` (NumPy's): -log(1 - u) * scale.
Array exponential(Shape shape, double scale = 1.0, DType dtype = DType::f32, Loc loc = Loc::current());
// Gumbel (NumPy's loc and scale): loc - scale log(-log(u)), u in (0, 1).
Array gumbel(Shape shape, double mu = 0.0, double scale = 1.0, DType dtype = DType::f32, Loc loc = Loc::current());
// Standard normal restricted to [lower, upper] (JAX's truncated_normal),
// by the inverse CDF: ndtri of a uniform between the bounds' CDFs (on the
// side of 0 where the CDF keeps its digits), clamped into the bounds.
Array truncated_normal(Shape shape, double lower, double upper, DType dtype = DType::f32, Loc loc = Loc::current());

// Gamma with shape alpha > 0 and `scale` (NumPy's): Marsaglia and Tsang's
// rejection (gamma(alpha + 1) u^(1/alpha) below 1). Beta(a, b): X / (X + Y)
// of two gammas. Poisson with mean lam (0 <= lam <= 1e15), i64: inversion
// up to lam = 64, Hörmann's transformed rejection (NumPy's) above. The
// rejections run a fixed number of rounds (docs/semantics.md).
Array gamma(Shape shape, double alpha, double scale = 1.0, DType dtype = DType::f32, Loc loc = Loc::current());
Array beta(Shape shape, double a, double b, DType dtype = DType::f32, Loc loc = Loc::current());
Array poisson(Shape shape, double lam, Loc loc = Loc::current());

// Indices (i64) drawn along `axis` of `logits` with probabilities
// softmax(logits): argmax(logits + gumbel) (JAX's categorical). The result
// has logits' shape without the axis. -inf logits are never drawn.
Array categorical(const Array& logits, int axis = -1, Loc loc = Loc::current());
// NumPy's multinomial: the counts (i64) of n draws from the categories of
// `pvals` (its last axis, batched over the others; they are normalized).
Array multinomial(std::int64_t n, const Array& pvals, Loc loc = Loc::current());

// `count` draws from 0 .. n-1 (i64): uniform, or with probabilities `p`
// (1-d, n long, normalized); with replacement, or without (count <= n: a
// random order of distinct values; with p, Gumbel top-k: the successive
// draws of NumPy's choice).
Array choice(std::int64_t n, std::int64_t count, bool replace = true, const std::optional<Array>& p = std::nullopt,
             Loc loc = Loc::current());
// The same draws, of the elements of `a` along axis 0.
Array choice(const Array& a, std::int64_t count, bool replace = true, const std::optional<Array>& p = std::nullopt,
             Loc loc = Loc::current());
// `a` with its slices along `axis` in a random order (NumPy's shuffle and
// permutation of an array; a new array, `a` is unchanged).
Array shuffle(const Array& a, int axis = 0, Loc loc = Loc::current());

// ---- random numbers from a key that is an array (JAX's style) ----
// The functions above take their key from the thread's seed when they are
// traced: inside aj::compile every replay draws the same numbers. These take
// it from an array, so a key that is an argument of a compiled function (a
// step counter, a seed the caller draws) gives new numbers at every call
// without tracing again: dropout's mask in a compiled training step. The
// same key gives the same numbers on every backend; fold_in derives
// independent keys (one per use) from one.
class Key {
 public:
  // A rank-0 integer (or bool) array; its value is the key.
  explicit Key(const Array& key, Loc loc = Loc::current());
  explicit Key(std::int64_t seed, Loc loc = Loc::current());
  const Array& array() const { return key_; }  // i64, rank 0

 private:
  Array key_;
};
// JAX's names: key(seed) is Key(seed); split(key, n) gives n keys
// independent of each other and of `key` (fold_in(key, 0 .. n-1)).
Key key(std::int64_t seed, Loc loc = Loc::current());
std::vector<Key> split(const Key& key, int n, Loc loc = Loc::current());
// Another key, independent of `key` for each `data` (JAX's fold_in): the
// generators' hash of (key, data).
Key fold_in(const Key& key, std::int64_t data, Loc loc = Loc::current());
// 64 random bits per element (i64), element i the hash of (key, i).
Array bits(const Key& key, Shape shape, Loc loc = Loc::current());
// Uniform in [lo, hi) (f32 or f64: 53 random bits scaled; a value that
// rounds to hi is the largest below it), normal (Box-Muller on two uniforms
// per element), and true with probability p.
Array uniform(const Key& key, Shape shape, double lo = 0.0, double hi = 1.0, DType dtype = DType::f32,
              Loc loc = Loc::current());
Array normal(const Key& key, Shape shape, double mean = 0.0, double stddev = 1.0, DType dtype = DType::f32,
             Loc loc = Loc::current());
Array bernoulli(const Key& key, Shape shape, double p = 0.5, Loc loc = Loc::current());

}  // namespace aj::random
