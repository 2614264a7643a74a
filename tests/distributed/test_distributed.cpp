// Collectives across processes (arrayjit/distributed.hpp), run by ctest as
// `mpirun -np 2` and `-np 4` (CMakeLists.txt). Every rank draws every
// rank's data from the same seeds, so each computes what the collective must
// give the way one process would, and compares.
//
//   mpirun -np 4 --oversubscribe build/aj_distributed_tests [doctest options]
//   mpirun -np 2 build/aj_distributed_tests --early-exit   (rank 1's program ends;
//                                  rank 0 must get an aj::Error saying so, at once)
//   mpirun -np 2 build/aj_distributed_tests --early-crash  (rank 1 dies without a
//                                  word; rank 0 must get an aj::Error at its timeout)
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using aj::Array;
using aj::DType;
using aj::Shape;
namespace dist = aj::distributed;
using dist::ReduceOp;

namespace {

int R = 0, P = 1;  // this rank, the world's size

const std::vector<DType> kAllDTypes = {DType::bool_, DType::i32, DType::i64, DType::f32, DType::f64,
                                       DType::f16,   DType::bf16, DType::u8, DType::i8,  DType::i16,
                                       DType::u16,   DType::u32,  DType::u64};

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t e : s) n *= e;
  return n;
}

// Rank r's values for test `seed`: small integers, exact in every dtype (bool:
// 0/1; unsigned: 0..3, so that a product over 4 ranks fits a u8).
std::vector<double> values(int r, int seed, std::int64_t n, DType t) {
  std::mt19937 gen(static_cast<unsigned>(seed * 1009 + r * 7919 + 17));
  const bool is_bool = t == DType::bool_;
  const bool is_unsigned = t == DType::u8 || t == DType::u16 || t == DType::u32 || t == DType::u64;
  std::uniform_int_distribution<int> d(is_bool ? 0 : is_unsigned ? 0 : -3, is_bool ? 1 : 3);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = d(gen);
  return v;
}

Array make(const std::vector<double>& v, const Shape& s, DType t) { return aj::from_vector<double>(v, s).astype(t); }
std::vector<double> read(const Array& a) { return a.astype(DType::f64).to_vector<double>(); }

double combine(ReduceOp op, DType t, double a, double b) {
  if (t == DType::bool_) {
    const bool x = a != 0, y = b != 0;
    return (op == ReduceOp::sum || op == ReduceOp::max) ? (x || y) : (x && y);
  }
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return a + b;
    case ReduceOp::max: return std::max(a, b);
    case ReduceOp::min: return std::min(a, b);
    case ReduceOp::prod: return a * b;
  }
  return 0;
}

// What one process computes for the reduction of every rank's values.
std::vector<double> reduced(ReduceOp op, DType t, int seed, std::int64_t n) {
  std::vector<double> acc = values(0, seed, n, t);
  for (int r = 1; r < P; ++r) {
    const std::vector<double> v = values(r, seed, n, t);
    for (std::int64_t i = 0; i < n; ++i) acc[i] = combine(op, t, acc[i], v[i]);
  }
  if (op == ReduceOp::mean) {
    for (double& x : acc) x /= P;
  }
  return acc;
}

const char* op_name(ReduceOp op) {
  const char* names[] = {"sum", "mean", "max", "min", "prod"};
  return names[static_cast<int>(op)];
}

const std::vector<Shape> kShapes = {Shape{}, Shape{0}, Shape{1}, Shape{7}, Shape{4, 3}, Shape{2, 3, 5}};

}  // namespace

TEST_CASE("all_reduce: every reduction, dtype and shape, against one process") {
  int seed = 0;
  for (DType t : kAllDTypes) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max, ReduceOp::min, ReduceOp::prod}) {
      if (op == ReduceOp::mean && !aj::is_float(t)) continue;
      for (const Shape& s : kShapes) {
        ++seed;
        CAPTURE(aj::dtype_name(t));
        CAPTURE(op_name(op));
        CAPTURE(s.ndim());
        const std::int64_t n = numel(s);
        Array x = make(values(R, seed, n, t), s, t);
        Array y = dist::all_reduce(x, op);
        CHECK(y.dtype() == t);
        CHECK(y.shape() == s);
        std::vector<double> want = reduced(op, t, seed, n);
        // mean of small integers over P ranks: exact in f32/f64, rounded in
        // the 16-bit floats.
        if (op == ReduceOp::mean && (t == DType::f16 || t == DType::bf16)) {
          const std::vector<double> got = read(y);
          for (std::int64_t i = 0; i < n; ++i) CHECK(std::abs(got[i] - want[i]) <= 0.01 * std::abs(want[i]) + 1e-3);
        } else {
          CHECK(read(y) == want);
        }
      }
    }
  }
}

TEST_CASE("mean on an integer array is refused where it is written") {
  Array x = make(values(R, 1, 4, DType::i32), Shape{4}, DType::i32);
  try {
    (void)dist::all_reduce(x, ReduceOp::mean);
    FAIL("no error");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("floating-point") != std::string::npos);
    CHECK(std::string(e.what()).find("test_distributed.cpp") != std::string::npos);
  }
}

TEST_CASE("all_gather and reduce_scatter: every dtype, odd and empty shapes") {
  int seed = 1000;
  for (DType t : kAllDTypes) {
    for (const Shape& s : kShapes) {
      ++seed;
      CAPTURE(aj::dtype_name(t));
      CAPTURE(s.ndim());
      const std::int64_t n = numel(s);
      Array x = make(values(R, seed, n, t), s, t);
      Array g = dist::all_gather(x);
      std::vector<std::int64_t> d = s.dims();
      if (d.empty()) d = {P};
      else d[0] *= P;
      CHECK(g.shape() == Shape(d));
      std::vector<double> want;
      for (int r = 0; r < P; ++r) {
        const std::vector<double> v = values(r, seed, n, t);
        want.insert(want.end(), v.begin(), v.end());
      }
      CHECK(read(g) == want);
    }
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::prod, ReduceOp::mean}) {
      if (op == ReduceOp::mean && !aj::is_float(t)) continue;
      for (const Shape& block : {Shape{0}, Shape{1}, Shape{3}, Shape{2, 5}}) {
        ++seed;
        CAPTURE(aj::dtype_name(t));
        CAPTURE(op_name(op));
        std::vector<std::int64_t> d = block.dims();
        d[0] *= P;
        const Shape s(d);
        const std::int64_t n = numel(s), m = numel(block);
        Array x = make(values(R, seed, n, t), s, t);
        Array y = dist::reduce_scatter(x, op);
        CHECK(y.shape() == block);
        const std::vector<double> all = reduced(op, t, seed, n);
        const std::vector<double> want(all.begin() + R * m, all.begin() + (R + 1) * m);
        const std::vector<double> got = read(y);
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 0.01 * std::abs(want[i]));
      }
    }
  }
}

TEST_CASE("reduce_scatter: an axis 0 that does not split is refused where it is written") {
  if (P == 1) return;
  Array x = make(values(R, 3, P + 1, DType::f32), Shape{P + 1}, DType::f32);
  try {
    (void)dist::reduce_scatter(x);
    FAIL("no error");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("equal blocks") != std::string::npos);
  }
}

TEST_CASE("broadcast from every root, every dtype") {
  int seed = 2000;
  for (int root = 0; root < P; ++root) {
    for (DType t : kAllDTypes) {
      for (const Shape& s : {Shape{}, Shape{0}, Shape{5}, Shape{3, 4}}) {
        ++seed;
        CAPTURE(root);
        CAPTURE(aj::dtype_name(t));
        const std::int64_t n = numel(s);
        Array y = dist::broadcast(make(values(R, seed, n, t), s, t), root);
        CHECK(read(y) == values(root, seed, n, t));
      }
    }
  }
}

TEST_CASE("send and recv around the ring, every dtype") {
  if (P == 1) return;
  const int next = (R + 1) % P, prev = (R + P - 1) % P;
  int seed = 3000;
  for (DType t : kAllDTypes) {
    for (const Shape& s : {Shape{}, Shape{0}, Shape{6}, Shape{2, 7}}) {
      ++seed;
      CAPTURE(aj::dtype_name(t));
      const std::int64_t n = numel(s);
      Array x = make(values(R, seed, n, t), s, t);
      // Even ranks send first, odd ranks receive first: a ring of blocking
      // exchanges that cannot wait on itself.
      Array sent, got;
      if (R % 2 == 0) {
        sent = dist::send(x, next);
        aj::eval({sent});
        got = dist::recv(s, t, prev);
        aj::eval({got});
      } else {
        got = dist::recv(s, t, prev);
        aj::eval({got});
        sent = dist::send(x, next);
        aj::eval({sent});
      }
      CHECK(read(sent) == values(R, seed, n, t));  // send's result: x's values
      CHECK(read(got) == values(prev, seed, n, t));
    }
  }
}

TEST_CASE("operands that are views: transposed, sliced and broadcast") {
  const int seed = 4000;
  Array base = make(values(R, seed, 24, DType::f32), Shape{4, 6}, DType::f32);
  Array t = base.transpose({1, 0});                                          // [6, 4], strided
  Array b = aj::broadcast_to(make(values(R, seed + 1, 3, DType::f32), Shape{3}, DType::f32), Shape{5, 3});
  Array y1 = dist::all_reduce(t), y2 = dist::all_gather(b), y3 = dist::broadcast(t, P - 1);
  std::vector<double> want1(24, 0.0), want2, want3;
  for (int r = 0; r < P; ++r) {
    const std::vector<double> v = values(r, seed, 24, DType::f32), w = values(r, seed + 1, 3, DType::f32);
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 4; ++j) {
        want1[i * 4 + j] += v[j * 6 + i];
        if (r == P - 1) want3.push_back(v[j * 6 + i]);
      }
    }
    for (int i = 0; i < 5; ++i) want2.insert(want2.end(), w.begin(), w.end());
  }
  CHECK(read(y1) == want1);
  CHECK(read(y2) == want2);
  CHECK(read(y3) == want3);
}

TEST_CASE("floats: sums of random values and NaN in max and min") {
  std::mt19937 gen(static_cast<unsigned>(77 + R));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> mine(1000);
  for (double& x : mine) x = u(gen);
  if (R == 0) mine[3] = std::numeric_limits<double>::quiet_NaN();
  for (DType t : {DType::f32, DType::f64}) {
    Array x = make(mine, Shape{1000}, t);
    std::vector<double> sum(1000, 0.0);
    for (int r = 0; r < P; ++r) {
      std::mt19937 g2(static_cast<unsigned>(77 + r));
      for (int i = 0; i < 1000; ++i) {
        double v = u(g2);
        if (t == DType::f32) v = static_cast<float>(v);
        sum[i] += v;
      }
    }
    const std::vector<double> got = read(dist::all_reduce(x, ReduceOp::sum));
    for (int i = 0; i < 1000; ++i) {
      if (i == 3) {
        CHECK(std::isnan(got[i]));
        continue;
      }
      CHECK(std::abs(got[i] - sum[i]) <= (t == DType::f32 ? 1e-5 : 1e-12));
    }
    const std::vector<double> mx = read(dist::all_reduce(x, ReduceOp::max));
    const std::vector<double> mn = read(dist::all_reduce(x, ReduceOp::min));
    CHECK(std::isnan(mx[3]));
    CHECK(std::isnan(mn[3]));
    CHECK_FALSE(std::isnan(mx[4]));
  }
}

TEST_CASE("the mean's scaling and the update after it are one kernel; independent kernels around the step") {
  const int seed = 5000;
  Array w = make(values(R, seed, 64, DType::f32), Shape{64}, DType::f32);
  Array g = make(values(R, seed + 1, 64, DType::f32), Shape{64}, DType::f32);
  Array other = make(values(R, seed + 2, 64, DType::f32), Shape{64}, DType::f32);
  aj::eval({w, g, other});
  Array avg = dist::all_reduce(g * 2.0f, ReduceOp::mean);
  Array w2 = w - 0.5f * avg;
  Array side = aj::exp(other) + 1.0f;  // independent of the exchange
  const std::string plan = aj::explain({w2, side});
  CAPTURE(plan);
  const auto count = [&](const std::string& what) {
    int c = 0;
    for (std::size_t at = plan.find(what); at != std::string::npos; at = plan.find(what, at + 1)) ++c;
    return c;
  };
  // g * 2 before the exchange; after it one kernel: w - 0.5 * (sum * 1/P)
  // and the independent exp(other) + 1 beside it.
  if (P > 1) {
    CHECK(count(": library ") == 1);
    CHECK(count("collective all_reduce mean group=0") == 1);  // (it exchanges the sum)
    CHECK(plan.find("3 steps, 2 kernels") != std::string::npos);
  }
  aj::eval({w2, side});
  const std::vector<double> sum = reduced(ReduceOp::sum, DType::f32, seed + 1, 64);
  const std::vector<double> wv = values(R, seed, 64, DType::f32), ov = values(R, seed + 2, 64, DType::f32);
  const std::vector<double> got = read(w2), got_side = read(side);
  for (int i = 0; i < 64; ++i) {
    CHECK(std::abs(got[i] - (wv[i] - 0.5 * 2.0 * sum[i] / P)) <= 1e-5);
    CHECK(std::abs(got_side[i] - (std::exp(ov[i]) + 1.0)) <= 1e-4 * std::exp(ov[i]));
  }
}

TEST_CASE("exchanges overlap the kernels after them: several in flight, their buffers kept until they end") {
  // all_reduce(g * 3), then a reduction that does not read it, then both
  // combined: the exchange is started and the reduction runs meanwhile; g * 3
  // is dead after the exchange starts, and no later step may take its buffer.
  // The same with overlap off: each exchange runs where the plan puts it.
  for (int rep = 0; rep < 4; ++rep) {
    dist::set_overlap(rep == 3 ? dist::Overlap::off : dist::Overlap::on);
    CHECK(dist::overlap() == (rep != 3));
    const int seed = 5500 + 10 * rep;
    Array g = make(values(R, seed, 4096, DType::f32), Shape{4096}, DType::f32);
    Array other = make(values(R, seed + 1, 4096, DType::f32), Shape{4096}, DType::f32);
    Array p2 = make(values(R, seed + 2, 6, DType::i32), Shape{6}, DType::i32);
    Array p3 = make(values(R, seed + 3, 5, DType::f64), Shape{5}, DType::f64);
    aj::eval({g, other, p2, p3});
    Array a = dist::all_reduce(g * 3.0f);
    Array b = aj::sum(aj::exp(other * 0.1f));
    Array c = a + b;
    Array x2 = dist::all_gather(p2 + 1), x3 = dist::broadcast(p3 * 2.0, P - 1);
    Array s2 = aj::sum(x2), s3 = aj::sum(x3);
    if (P > 1 && rep == 0) {
      // The schedule starts both exchanges before the sums that read them.
      const std::string plan = aj::explain({c, s2, s3});
      CAPTURE(plan);
      const std::size_t gather = plan.find("collective all_gather"), bcast = plan.find("collective broadcast"),
                        sum2 = plan.find("over [" + std::to_string(6 * P) + "] reducing");
      CHECK(gather < bcast);
      CHECK(bcast < sum2);
      CHECK(sum2 != std::string::npos);
    }
    aj::eval({c, s2, s3});
    const std::vector<double> sum = reduced(ReduceOp::sum, DType::f32, seed, 4096), ov = values(R, seed + 1, 4096, DType::f32);
    double bsum = 0;
    for (double v : ov) bsum += std::exp(v * 0.1);
    const std::vector<double> got = read(c);
    for (int i = 0; i < 4096; ++i) CHECK(std::abs(got[i] - (3 * sum[i] + bsum)) <= 1e-4 * std::abs(bsum));
    double want2 = 0, want3 = 0;
    for (int r = 0; r < P; ++r) {
      for (double v : values(r, seed + 2, 6, DType::i32)) want2 += v + 1;
    }
    for (double v : values(P - 1, seed + 3, 5, DType::f64)) want3 += 2 * v;
    CHECK(read(s2)[0] == want2);
    CHECK(read(s3)[0] == doctest::Approx(want3));
  }
  dist::set_overlap(dist::Overlap::on);
  // A disagreement found while kernels ran on: the evaluation throws it.
  if (P > 1) {
    Array x = make(values(R, 5600, R == 0 ? 3 : 4, DType::f32), Shape{R == 0 ? 3 : 4}, DType::f32);
    Array other = make(values(R, 5601, 64, DType::f32), Shape{64}, DType::f32);
    Array y = dist::all_reduce(x * 2.0f);
    Array z = aj::sum(aj::exp(other));
    CHECK_THROWS_WITH_AS(aj::eval({aj::sum(y) + z}), doctest::Contains("disagree"), aj::Error);
  }
}

TEST_CASE("mismatched shapes are a located error on every rank, and the next collective works") {
  if (P == 1) return;
  const std::int64_t n = R == 0 ? 3 : 4;
  Array x = make(values(R, 6000, n, DType::f32), Shape{n}, DType::f32);
  try {
    aj::eval({dist::all_reduce(x)});
    FAIL("no error");
  } catch (const aj::Error& e) {
    const std::string m = e.what();
    CAPTURE(m);
    CHECK(m.find("all_reduce") != std::string::npos);
    CHECK(m.find("disagree") != std::string::npos);
    CHECK(m.find("rank 0 runs all_reduce(sum) of f32 [3]") != std::string::npos);
    CHECK(m.find("rank 1 runs all_reduce(sum) of f32 [4]") != std::string::npos);
    CHECK(m.find("test_distributed.cpp") != std::string::npos);
  }
  // A dtype mismatch, a kind mismatch.
  try {
    aj::eval({dist::all_reduce(make(values(R, 6001, 4, DType::f32), Shape{4}, R == 0 ? DType::f64 : DType::f32))});
    FAIL("no error");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("disagree") != std::string::npos);
  }
  try {
    Array y = make(values(R, 6002, 4, DType::f32), Shape{4}, DType::f32);
    aj::eval({R == 0 ? dist::all_reduce(y) : dist::broadcast(y, 0)});
    FAIL("no error");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("broadcast of f32 [4] from root 0") != std::string::npos);
  }
  Array ok = dist::all_reduce(make(values(R, 6003, 5, DType::i32), Shape{5}, DType::i32));
  CHECK(read(ok) == reduced(ReduceOp::sum, DType::i32, 6003, 5));
}

TEST_CASE("mismatched send and recv fail on both ranks") {
  if (P == 1) return;
  if (R > 1) return;  // ranks 0 and 1
  try {
    if (R == 0) aj::eval({dist::send(make(values(R, 7000, 3, DType::f32), Shape{3}, DType::f32), 1)});
    else aj::eval({dist::recv(Shape{4}, DType::f32, 0)});
    FAIL("no error");
  } catch (const aj::Error& e) {
    const std::string m = e.what();
    CAPTURE(m);
    CHECK(m.find("sends f32 [3], the receiving rank expects f32 [4]") != std::string::npos);
  }
}

TEST_CASE("split: groups by parity reduce among themselves") {
  dist::Group world = dist::world();
  dist::Group half = world.split(R % 2);
  CHECK(half.size() == (P + 1 - R % 2) / 2);
  CHECK(half.rank() == R / 2);
  Array x = make(values(R, 8000, 6, DType::i64), Shape{6}, DType::i64);
  std::vector<double> want(6, 0.0);
  for (int r = R % 2; r < P; r += 2) {
    const std::vector<double> v = values(r, 8000, 6, DType::i64);
    for (int i = 0; i < 6; ++i) want[i] += v[i];
  }
  CHECK(read(dist::all_reduce(x, ReduceOp::sum, half)) == want);
  dist::Group none = world.split(R == 0 ? -1 : 1);
  CHECK(none.valid() == (R != 0));
  if (R == 0) {
    CHECK_THROWS_AS((void)dist::all_reduce(x, ReduceOp::sum, none), aj::Error);
  } else {
    CHECK(none.size() == P - 1);
  }
}

TEST_CASE("derivatives: each collective's transpose") {
  const int seed = 9000;
  Array x = make(values(R, seed, 6, DType::f64), Shape{6}, DType::f64);
  Array c = aj::arange(std::int64_t{6} * P, DType::f64);  // the same on every rank
  // d/dx sum(all_reduce(x * x)) = all_reduce(1) * 2x = P * 2x
  auto [v1, g1] = aj::value_and_grad([](const Array& a) { return aj::sum(dist::all_reduce(a * a)); })(x);
  // d/dx sum(all_gather(x) * c) = reduce_scatter(c) = P * c[R * 6 .. R * 6 + 6]
  Array g2 = aj::grad([&](const Array& a) { return aj::sum(dist::all_gather(a) * c); })(x);
  // d/dx sum(reduce_scatter(concat(x, x, ...)) * k) with k the same everywhere
  Array k = aj::arange(std::int64_t{6}, DType::f64) + 1.0;
  Array g3 = aj::grad([&](const Array& a) {
    std::vector<Array> parts(static_cast<std::size_t>(P), a);
    return aj::sum(dist::reduce_scatter(aj::concatenate(parts, 0), ReduceOp::mean) * k);
  })(x);
  // d/dx sum(broadcast(x, root) * k): the root gets P * k, the others 0
  Array g4 = aj::grad([&](const Array& a) { return aj::sum(dist::broadcast(a, P - 1) * k); })(x);
  const std::vector<double> xv = values(R, seed, 6, DType::f64);
  const std::vector<double> r1 = read(g1), r2 = read(g2), r3 = read(g3), r4 = read(g4);
  for (int i = 0; i < 6; ++i) {
    CHECK(r1[i] == doctest::Approx(P * 2.0 * xv[i]));
    CHECK(r2[i] == doctest::Approx(P * (R * 6.0 + i)));
    // the cotangent k on each rank's block; all_gather puts rank r's k at
    // block r, each of the P copies of x collects every block: sum_r k / P * ... = sum of k over ranks / P
    CHECK(r3[i] == doctest::Approx(static_cast<double>(P) * (i + 1.0) / P));
    CHECK(r4[i] == doctest::Approx(R == P - 1 ? P * (i + 1.0) : 0.0));
  }
  (void)v1;
  // Forward mode: the tangent goes through the same collective.
  Array t = make(values(R, seed + 1, 6, DType::f64), Shape{6}, DType::f64);
  auto [outs, tangents] = aj::jvp([](const std::vector<Array>& a) { return dist::all_gather(a[0] * 3.0); },
                                  std::vector<Array>{x}, std::vector<Array>{t});
  std::vector<double> want_t;
  for (int r = 0; r < P; ++r) {
    for (double v : values(r, seed + 1, 6, DType::f64)) want_t.push_back(3 * v);
  }
  CHECK(read(tangents[0]) == want_t);
  // No derivative: max, min, prod and send/recv, an error naming the collective.
  if (P > 1) {
    CHECK_THROWS_WITH_AS(aj::grad([](const Array& a) { return aj::sum(dist::all_reduce(a, ReduceOp::max)); })(x),
                         doctest::Contains("all_reduce has no derivative for max, min or prod"), aj::Error);
  }
}

TEST_CASE("a compiled step with an all_reduce replays the exchange") {
  auto step = aj::compile([](const Array& w, const Array& g) {
    return w - 0.25f * dist::all_reduce(g, ReduceOp::mean);
  });
  Array w = make(values(R, 9100, 16, DType::f32), Shape{16}, DType::f32);
  for (int it = 0; it < 4; ++it) {
    Array g = make(values(R, 9200 + it, 16, DType::f32), Shape{16}, DType::f32);
    const std::vector<double> before = read(w), sum = reduced(ReduceOp::sum, DType::f32, 9200 + it, 16);
    w = step(w, g);
    const std::vector<double> got = read(w);
    for (int i = 0; i < 16; ++i) CHECK(std::abs(got[i] - (before[i] - 0.25 * sum[i] / P)) <= 1e-5);
  }
  CHECK(step.counts().replays >= 3);
  // New extents: the kept trace at 24 elements (or a new trace), the same exchange.
  for (std::int64_t n : {24, 7, 24}) {
    Array w2 = make(values(R, 9300, n, DType::f32), Shape{n}, DType::f32);
    Array g = make(values(R, 9301, n, DType::f32), Shape{n}, DType::f32);
    const std::vector<double> got = read(step(w2, g)), before = read(w2),
                              sum = reduced(ReduceOp::sum, DType::f32, 9301, n);
    for (std::int64_t i = 0; i < n; ++i) CHECK(std::abs(got[i] - (before[i] - 0.25 * sum[i] / P)) <= 1e-5);
  }
  // all_gather at new extents: axis 0 grows by the group's size.
  auto gather = aj::compile([](const Array& x) { return dist::all_gather(x * 2.0f); });
  for (std::int64_t n : {3, 5, 3}) {
    const std::vector<double> got = read(gather(make(values(R, 9400 + n, n * 2, DType::f32), Shape{n, 2}, DType::f32)));
    std::vector<double> want;
    for (int r = 0; r < P; ++r) {
      for (double v : values(r, 9400 + n, n * 2, DType::f32)) want.push_back(2 * v);
    }
    CHECK(got == want);
  }
}

TEST_CASE("average_gradients: the mean of every rank's gradients, in buckets by dtype, the last first") {
  // Computed gradients (kernels write them into their bucket) of two dtypes
  // and odd shapes, with buckets of every size: one per gradient, several,
  // one per dtype. The bucket counts are worked out by hand from the rule
  // (filled from the last gradient; a bucket closes when the next would pass
  // bucket_bytes; a larger gradient is a bucket by itself).
  const std::vector<Shape> shapes = {Shape{4, 3}, Shape{}, Shape{7}, Shape{0}, Shape{33, 5}, Shape{2, 3, 5}};
  const std::vector<DType> types = {DType::f32, DType::f64, DType::f32, DType::f32, DType::f64, DType::f32};
  const std::vector<std::pair<std::int64_t, int>> buckets = {{1, 6}, {64, 5}, {1000, 3}, {1 << 20, 2}};
  for (const auto& [bytes, expected] : buckets) {
    CAPTURE(bytes);
    const int seed = 9600 + static_cast<int>(bytes % 97);
    std::vector<Array> grads;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      grads.push_back(make(values(R, seed + static_cast<int>(i), numel(shapes[i]), types[i]), shapes[i], types[i]) *
                      2.0);
    }
    const std::vector<Array> avg = dist::average_gradients(grads, bytes);
    REQUIRE(avg.size() == grads.size());
    if (P > 1) {
      const std::string plan = aj::explain(avg);
      CAPTURE(plan);
      int exchanges = 0;
      for (std::size_t at = plan.find("collective all_reduce mean"); at != std::string::npos;
           at = plan.find("collective all_reduce mean", at + 1)) {
        ++exchanges;
      }
      // (64: the size-0 gradient shares a bucket with the [7] after it)
      CHECK(exchanges == expected);
    }
    aj::eval(avg);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      CAPTURE(i);
      CHECK(avg[i].shape() == shapes[i]);
      CHECK(avg[i].dtype() == types[i]);
      const std::vector<double> want = reduced(ReduceOp::mean, types[i], seed + static_cast<int>(i), numel(shapes[i]));
      const std::vector<double> got = read(avg[i]);
      REQUIRE(got.size() == want.size());
      for (std::size_t j = 0; j < got.size(); ++j) CHECK(std::abs(got[j] - 2 * want[j]) <= 1e-6);
    }
  }
  CHECK(dist::average_gradients({}).empty());
  // Bad input: located errors, on every rank alike (nothing is exchanged).
  Array g = make(values(R, 9700, 4, DType::f32), Shape{4}, DType::f32);
  Array k = make(values(R, 9701, 4, DType::i32), Shape{4}, DType::i32);
  CHECK_THROWS_WITH_AS(dist::average_gradients({g}, 0), doctest::Contains("bucket_bytes 0 is not positive"), aj::Error);
  CHECK_THROWS_WITH_AS(dist::average_gradients({g, k}), doctest::Contains("gradient 1 is i32"), aj::Error);
  CHECK_THROWS_WITH_AS(dist::average_gradients({g, Array()}), doctest::Contains("average_gradients"), aj::Error);
}

TEST_CASE("average_gradients in a compiled training step: the whole batch's step, no allocation after the first") {
  // A 2-layer network; rank R holds rows [R * 8, R * 8 + 8) of a batch of
  // 8 * P rows. Each rank also takes the whole batch's step by itself (every
  // rank's rows come from the same seeds) and compares.
  constexpr std::int64_t kIn = 5, kHid = 6, kOut = 3, kRows = 8;
  const auto loss_of = [](const std::vector<Array>& p, const Array& X, const Array& Y) {
    Array h = aj::tanh(aj::matmul(X, p[0]) + p[1]);
    return aj::mean(aj::square(aj::matmul(h, p[2]) + p[3] - Y));
  };
  const auto rows = [&](int r, int seed, std::int64_t cols) {
    std::vector<double> v = values(r, seed, kRows * cols, DType::f64);
    for (double& x : v) x *= 0.3;
    return v;
  };
  std::vector<double> xall, yall;
  for (int r = 0; r < P; ++r) {
    for (double v : rows(r, 9800, kIn)) xall.push_back(v);
    for (double v : rows(r, 9801, kOut)) yall.push_back(v);
  }
  const Array Xall = aj::from_vector(xall, Shape{kRows * P, kIn}), Yall = aj::from_vector(yall, Shape{kRows * P, kOut});
  const Array X = aj::from_vector(rows(R, 9800, kIn), Shape{kRows, kIn});
  const Array Y = aj::from_vector(rows(R, 9801, kOut), Shape{kRows, kOut});
  const std::vector<Shape> shapes = {Shape{kIn, kHid}, Shape{kHid}, Shape{kHid, kOut}, Shape{kOut}};
  std::vector<Array> params, reference;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::vector<double> v = values(0, 9810 + static_cast<int>(i), numel(shapes[i]), DType::f64);
    for (double& x : v) x *= 0.25;
    params.push_back(aj::from_vector(v, shapes[i]));
    reference.push_back(aj::from_vector(v, shapes[i]));
  }
  // 200-byte buckets: {b2, W2} (24 + 144 bytes, packed), b1 (48 more would
  // pass 200), W1 (240 bytes, a bucket by itself).
  auto step = aj::compile(
      [&](std::vector<Array> p, const Array& x, const Array& y) {
        auto [loss, g] = aj::value_and_grad([&](const std::vector<Array>& q) { return loss_of(q, x, y); },
                                            {0, 1, 2, 3})(p);
        g = dist::average_gradients(g, 200);
        std::vector<Array> out;
        for (std::size_t i = 0; i < p.size(); ++i) out.push_back(p[i] - 0.2 * g[i]);
        out.push_back(dist::all_reduce(loss, ReduceOp::mean));
        return out;
      },
      aj::CompileOptions{.max_allocations = 0});
  auto whole = aj::value_and_grad([&](const std::vector<Array>& q) { return loss_of(q, Xall, Yall); }, {0, 1, 2, 3});
  std::int64_t replay_allocs = 0;  // system allocations made by the replays
  for (int it = 0; it < 6; ++it) {
    const std::int64_t before = aj::stats().system_allocs;
    std::vector<Array> out = step(std::move(params), X, Y);
    if (it > 0) replay_allocs += aj::stats().system_allocs - before;
    auto [loss, g] = whole(reference);
    for (std::size_t i = 0; i < reference.size(); ++i) reference[i] = reference[i] - 0.2 * g[i];
    aj::eval(reference);
    CHECK(out.back().item<double>() == doctest::Approx(loss.item<double>()).epsilon(1e-12));
    for (std::size_t i = 0; i < reference.size(); ++i) {
      const std::vector<double> got = read(out[i]), want = read(reference[i]);
      for (std::size_t j = 0; j < got.size(); ++j) CHECK(std::abs(got[j] - want[j]) <= 1e-12);
    }
    out.pop_back();
    params = std::move(out);
  }
  CHECK(step.counts().replays == 5);
  CHECK(replay_allocs == 0);  // (and max_allocations = 0 held every replay)
  if (P > 1) {
    // The plan: three exchanges, the first ({b2, W2}) started before the
    // backward pass's last matmul (W1's gradient, X^T times the hidden layer's).
    auto [loss, g] = aj::value_and_grad([&](const std::vector<Array>& q) { return loss_of(q, X, Y); },
                                        {0, 1, 2, 3})(params);
    const std::string plan = aj::explain(dist::average_gradients(g, 200));
    CAPTURE(plan);
    int exchanges = 0;
    for (std::size_t at = plan.find("collective all_reduce"); at != std::string::npos;
         at = plan.find("collective all_reduce", at + 1)) {
      ++exchanges;
    }
    CHECK(exchanges == 3);
    const std::size_t first = plan.find("collective all_reduce"), last_matmul = plan.rfind("matmul");
    CHECK(first != std::string::npos);
    CHECK(last_matmul != std::string::npos);
    CHECK(first < last_matmul);
  }
}

int main(int argc, char** argv) {
  bool early_exit = false, early_crash = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--early-exit") == 0) early_exit = true;
    else if (std::strcmp(argv[i], "--early-crash") == 0) early_crash = true;
    else args.push_back(argv[i]);
  }
  dist::init(/*strict=*/true);
  R = dist::rank();
  P = dist::size();
  if (early_exit || early_crash) {
    // Rank 1 leaves without taking part: its program ends (its exit handler
    // says goodbye: rank 0 must fail at once, long before its 60 s timeout),
    // or it dies without a word (_exit: rank 0 must fail at its 3 s timeout).
    // Never a hang.
    if (R != 0) {
      if (early_crash) std::_Exit(0);
      return 0;
    }
    dist::set_timeout(early_exit ? 60.0 : 3.0);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      aj::eval({dist::all_reduce(aj::ones(Shape{8}))});
      std::printf("early-exit: rank 0 got no error\n");
      return 1;
    } catch (const aj::Error& e) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const bool said = early_exit ? std::string(e.what()).find("rank 1 ended its program") != std::string::npos &&
                                         waited < 30
                                   : std::string(e.what()).find("waited 3 s") != std::string::npos;
      std::printf("early-exit: rank 0 got %s after %.1f s: %s\n", said ? "the error" : "another error", waited,
                  e.what());
      std::fflush(stdout);
      return said ? 0 : 1;
    }
  }
  dist::set_timeout(120.0);
  // Exchanges started early on the communication thread, whatever this
  // machine's cores (the automatic choice); the overlap test runs both ways.
  dist::set_overlap(dist::Overlap::on);
  doctest::Context context(static_cast<int>(args.size()), args.data());
  if (R != 0) context.setOption("minimal", true);
  const int rc = context.run();
  std::printf("rank %d of %d: %s\n", R, P, rc == 0 ? "passed" : "FAILED");
  return rc;
}
