// Random numbers from a key that is an array (arrayjit/random.hpp, Key;
// C API 1.6 aj_random_bits, aj_random_key_*, aj_random_fold_in): the same
// key gives the same numbers, other keys other numbers; the bits are the
// generators' hash (base/semantics.hpp) of (key, index), computed here by
// hand; the distributions' moments; a key that is an argument of
// aj::compile draws new numbers at every replay without tracing again.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace {

using aj::Array;
using aj::DType;
namespace random = aj::random;

// The generators' hash, written out again (base/semantics.hpp).
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
std::uint64_t hand_bits(std::uint64_t key, std::uint64_t index) { return splitmix64(key ^ splitmix64(index * 2)); }

Array key_of(std::int64_t v) { return aj::full({}, v, DType::i64); }

}  // namespace

TEST_CASE("random keys: bits are the hash of (key, index); fold_in is the hash of (key, data)") {
  for (std::int64_t k : {std::int64_t{0}, std::int64_t{7}, std::int64_t{-123456789012345}}) {
    const std::vector<std::int64_t> got = random::bits(random::Key(key_of(k)), {3, 5}).to_vector<std::int64_t>();
    REQUIRE(got.size() == 15);
    for (std::size_t i = 0; i < got.size(); ++i) {
      CHECK(static_cast<std::uint64_t>(got[i]) == hand_bits(static_cast<std::uint64_t>(k), i));
    }
    const std::int64_t folded = random::fold_in(random::Key(k), 42).array().item<std::int64_t>();
    CHECK(static_cast<std::uint64_t>(folded) == hand_bits(static_cast<std::uint64_t>(k), 42));
  }
  // An i32 or bool key is the same key as the i64 of its value.
  const auto a = random::bits(random::Key(aj::full({}, 5, DType::i32)), {4}).to_vector<std::int64_t>();
  const auto b = random::bits(random::Key(5), {4}).to_vector<std::int64_t>();
  CHECK(a == b);
}

TEST_CASE("random keys: uniform, normal and bernoulli have their moments and ranges; keys are independent") {
  const std::int64_t n = 200000;
  for (DType t : {DType::f32, DType::f64}) {
    const std::vector<double> u = random::uniform(random::Key(11), {n}, -2.0, 3.0, t).astype(DType::f64).to_vector<double>();
    double mean = 0, lo = 1e9, hi = -1e9;
    for (double v : u) {
      mean += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    mean /= static_cast<double>(n);
    CHECK(mean == doctest::Approx(0.5).epsilon(0.02));
    CHECK(lo >= -2.0);
    CHECK(hi < 3.0);
    const std::vector<double> z = random::normal(random::Key(12), {n}, 1.0, 2.0, t).astype(DType::f64).to_vector<double>();
    double m = 0, v2 = 0;
    for (double x : z) m += x;
    m /= static_cast<double>(n);
    for (double x : z) v2 += (x - m) * (x - m);
    v2 /= static_cast<double>(n);
    CHECK(m == doctest::Approx(1.0).epsilon(0.02));
    CHECK(std::sqrt(v2) == doctest::Approx(2.0).epsilon(0.02));
  }
  const std::vector<bool> coin = [&] {
    const auto v = random::bernoulli(random::Key(13), {n}, 0.3).astype(DType::i32).to_vector<std::int32_t>();
    return std::vector<bool>(v.begin(), v.end());
  }();
  double ones = 0;
  for (bool c : coin) ones += c;
  CHECK(ones / static_cast<double>(n) == doctest::Approx(0.3).epsilon(0.03));
  // Two keys (and two folds of one key) agree on about 1/2 of the signs of
  // their uniforms minus 0.5, as independent streams do.
  auto signs = [&](const random::Key& k) {
    return (random::uniform(k, {4096}, 0.0, 1.0, DType::f64) > 0.5).astype(DType::i32).to_vector<std::int32_t>();
  };
  const random::Key base(99);
  for (auto [x, y] : {std::pair{random::Key(99), random::Key(100)}, std::pair{random::fold_in(base, 1), random::fold_in(base, 2)}}) {
    const auto sx = signs(x), sy = signs(y);
    int same = 0;
    for (std::size_t i = 0; i < sx.size(); ++i) same += sx[i] == sy[i];
    CHECK(same > 1800);
    CHECK(same < 2300);
  }
}

TEST_CASE("random keys: a key argument of aj::compile draws new numbers at every replay") {
  auto dropout = aj::compile([](const Array& x, const Array& key) {
    const Array keep = random::bernoulli(random::Key(key), x.shape(), 0.5);
    return aj::where(keep, x * 2.0f, 0.0f);
  });
  const Array x = aj::ones({256}, DType::f32);
  std::set<std::vector<float>> masks;
  for (std::int64_t step = 0; step < 5; ++step) {
    const std::vector<float> y = dropout(x, key_of(step)).to_vector<float>();
    // The same as outside aj::compile with that key.
    const std::vector<float> want =
        aj::where(random::bernoulli(random::Key(step), {256}, 0.5), x * 2.0f, 0.0f).to_vector<float>();
    CHECK(y == want);
    masks.insert(y);
  }
  CHECK(masks.size() == 5);
  CHECK(dropout.counts().traces == 1);
  CHECK(dropout.counts().replays == 4);
}

TEST_CASE("random keys: bad keys and arguments are clear errors") {
  CHECK_THROWS_WITH_AS(random::Key(aj::ones({2}, DType::i64)), doctest::Contains("rank-0 integer"), aj::Error);
  CHECK_THROWS_WITH_AS(random::Key(aj::full({}, 1.5, DType::f32)), doctest::Contains("integer"), aj::Error);
  CHECK_THROWS_WITH_AS(random::uniform(random::Key(1), {3}, 0.0, 1.0, DType::i32), doctest::Contains("f32 or f64"), aj::Error);
  CHECK_THROWS_WITH_AS(random::uniform(random::Key(1), {3}, 2.0, 1.0), doctest::Contains("lo <= hi"), aj::Error);
  CHECK_THROWS_WITH_AS(random::bernoulli(random::Key(1), {3}, 1.5), doctest::Contains("probability"), aj::Error);
  CHECK_THROWS_WITH_AS(random::normal(random::Key(1), {3}, 0.0, -1.0), doctest::Contains("stddev"), aj::Error);
}

TEST_CASE("c api 1.6: aj_random_bits, aj_random_key_* and aj_random_fold_in are the C++ functions") {
  const aj_array key = aj::to_c(key_of(21));
  const int64_t shape[] = {2, 3};
  aj_array b{0}, u{0}, z{0}, c{0}, f{0};
  REQUIRE(aj_random_bits(key, shape, 2, &b) == AJ_OK);
  REQUIRE(aj_random_key_uniform(key, shape, 2, 0.0, 1.0, AJ_F64, &u) == AJ_OK);
  REQUIRE(aj_random_key_normal(key, shape, 2, 0.0, 1.0, AJ_F32, &z) == AJ_OK);
  REQUIRE(aj_random_key_bernoulli(key, shape, 2, 0.5, &c) == AJ_OK);
  REQUIRE(aj_random_fold_in(key, 3, &f) == AJ_OK);
  const random::Key k(21);
  CHECK(aj::from_c(b).to_vector<std::int64_t>() == random::bits(k, {2, 3}).to_vector<std::int64_t>());
  CHECK(aj::from_c(u).to_vector<double>() == random::uniform(k, {2, 3}, 0.0, 1.0, DType::f64).to_vector<double>());
  CHECK(aj::from_c(z).to_vector<float>() == random::normal(k, {2, 3}).to_vector<float>());
  CHECK(aj::from_c(c).astype(DType::i32).to_vector<std::int32_t>() ==
        random::bernoulli(k, {2, 3}, 0.5).astype(DType::i32).to_vector<std::int32_t>());
  CHECK(aj::from_c(f).item<std::int64_t>() == random::fold_in(k, 3).array().item<std::int64_t>());
  aj_array bad{0};
  const aj_array fkey = aj::to_c(aj::full({}, 1.0, DType::f64));
  CHECK(aj_random_bits(fkey, shape, 2, &bad) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("integer") != std::string::npos);
  for (aj_array h : {key, b, u, z, c, f, fkey}) CHECK(aj_array_release(h) == AJ_OK);
}

TEST_CASE("random keys: key(seed) and split(key, n), in C++ and C") {
  const random::Key k = random::key(4);
  CHECK(k.array().item<std::int64_t>() == 4);
  const std::vector<random::Key> ks = random::split(k, 3);
  REQUIRE(ks.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(ks[static_cast<std::size_t>(i)].array().item<std::int64_t>() == random::fold_in(k, i).array().item<std::int64_t>());
  }
  CHECK(ks[0].array().item<std::int64_t>() != ks[1].array().item<std::int64_t>());
  CHECK_THROWS_WITH_AS(random::split(k, -1), doctest::Contains("negative"), aj::Error);
  aj_array key{0};
  REQUIRE(aj_random_key(4, &key) == AJ_OK);
  aj_array outs[3] = {};
  REQUIRE(aj_random_split(key, 3, outs) == AJ_OK);
  for (int i = 0; i < 3; ++i) {
    CHECK(aj::from_c(outs[i]).item<std::int64_t>() == ks[static_cast<std::size_t>(i)].array().item<std::int64_t>());
    CHECK(aj_array_release(outs[i]) == AJ_OK);
  }
  CHECK(aj_random_split(key, -2, outs) == AJ_ERROR_USER);
  CHECK(aj_array_release(key) == AJ_OK);
}
