// einsum (arrayjit/einsum.hpp) against a generic index loop written here:
// every assignment of every letter's value enumerated, the operands'
// elements multiplied and added into the output element (extent-1 axes read
// at index 0, NumPy's broadcasting). Random values, f32 f64 i32 i64 and
// bool, on the JIT and the interpreter; contiguous, strided (sliced) and
// transposed inputs; size-0, size-1 and rank-0 operands. Also: the
// contraction order is the cheap one, a pair contraction reaches matmul,
// gradients against finite differences, the C function, and the errors.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.h>
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/c_handle.hpp>
#include <arrayjit/einsum.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/autodiff_check.hpp"
#include "tests/jit_switch.hpp"

namespace {

using aj::Array;
using aj::DType;
using aj::Shape;
using Dims = std::vector<std::int64_t>;

using ajtest::on_both;

std::int64_t numel(const Dims& d) { return std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>()); }

// The reference. `spec` is explicit ("ij,jk->ik"), letters only (the tests
// spell out what "..." stands for). Returns the output's dims, values and,
// per output element, the sum of |products| (for the float tolerance).
// `logical`: products are ands and sums ors (bool).
struct Ref {
  Dims dims;
  std::vector<double> values, magnitude;
};
Ref reference(const std::string& spec, const std::vector<Dims>& dims, const std::vector<std::vector<double>>& vals,
              bool logical = false) {
  const std::size_t arrow = spec.find("->");
  std::vector<std::string> terms(1);
  for (char c : spec.substr(0, arrow)) {
    if (c == ',') {
      terms.emplace_back();
    } else {
      terms.back() += c;
    }
  }
  const std::string out = spec.substr(arrow + 2);
  REQUIRE(terms.size() == dims.size());
  std::map<char, std::int64_t> extent;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    REQUIRE(terms[k].size() == dims[k].size());
    for (std::size_t i = 0; i < terms[k].size(); ++i) {
      std::int64_t& e = extent.try_emplace(terms[k][i], 1).first->second;
      if (dims[k][i] != 1) e = dims[k][i];
    }
  }
  std::string letters;
  for (const auto& [c, e] : extent) letters += c;
  Ref r;
  for (char c : out) r.dims.push_back(extent.at(c));
  r.values.assign(static_cast<std::size_t>(numel(r.dims)), 0.0);
  r.magnitude = r.values;
  std::map<char, std::int64_t> at;
  for (char c : letters) at[c] = 0;
  std::int64_t total = 1;
  for (char c : letters) total *= extent.at(c);
  for (std::int64_t step = 0; step < total; ++step) {
    std::int64_t rest = step;
    for (std::size_t i = letters.size(); i-- > 0;) {
      at[letters[i]] = rest % extent.at(letters[i]);
      rest /= extent.at(letters[i]);
    }
    double p = 1;
    for (std::size_t k = 0; k < terms.size(); ++k) {
      std::int64_t flat = 0;
      for (std::size_t i = 0; i < terms[k].size(); ++i) {
        flat = flat * dims[k][i] + (dims[k][i] == 1 ? 0 : at[terms[k][i]]);
      }
      const double v = vals[k][static_cast<std::size_t>(flat)];
      p = logical ? (p != 0 && v != 0 ? 1 : 0) : p * v;
    }
    std::int64_t o = 0;
    for (std::size_t i = 0; i < out.size(); ++i) o = o * r.dims[i] + at[out[i]];
    double& acc = r.values[static_cast<std::size_t>(o)];
    acc = logical ? (acc != 0 || p != 0 ? 1 : 0) : acc + p;
    r.magnitude[static_cast<std::size_t>(o)] += std::fabs(p);
  }
  return r;
}

// Random values: floats in [-1, 1] away from 0, integers in [-3, 3], bools.
std::vector<double> random_values(std::int64_t n, DType t, std::mt19937_64& rng) {
  std::vector<double> v;
  std::uniform_real_distribution<double> f(-1, 1);
  std::uniform_int_distribution<int> i(-3, 3), b(0, 1);
  while (static_cast<std::int64_t>(v.size()) < n) {
    if (t == DType::bool_) {
      v.push_back(b(rng));
    } else if (t == DType::i32 || t == DType::i64) {
      v.push_back(i(rng));
    } else {
      const double x = f(rng);
      if (std::fabs(x) > 0.05) v.push_back(x);
    }
  }
  return v;
}

// An operand of dtype t holding v (row-major for d): contiguous (layout 0),
// every other element of a wider last axis (1), or the transpose of an
// array of the reversed dims (2).
Array make(const std::vector<double>& v, const Dims& d, DType t, int layout) {
  if (d.empty() || layout == 0) return aj::from_vector(v, Shape(d)).astype(t);
  std::vector<std::int64_t> idx(d.size());
  if (layout == 1) {
    Dims wide = d;
    wide.back() *= 2;
    std::vector<double> w(static_cast<std::size_t>(numel(wide)), 99.0);
    for (std::int64_t i = 0; i < numel(d); ++i) {
      std::int64_t rest = i, flat = 0, stride = 1;
      for (std::size_t k = d.size(); k-- > 0;) {
        const std::int64_t x = rest % std::max<std::int64_t>(d[k], 1);
        rest /= std::max<std::int64_t>(d[k], 1);
        flat += (k + 1 == d.size() ? 2 * x : x) * stride;
        stride *= wide[k];
      }
      w[static_cast<std::size_t>(flat)] = v[static_cast<std::size_t>(i)];
    }
    const Array a = aj::from_vector(w, Shape(wide)).astype(t);
    return aj::slice(a, static_cast<int>(d.size()) - 1, 0, std::nullopt, 2);
  }
  Dims rev(d.rbegin(), d.rend());
  std::vector<double> w(v.size());
  for (std::int64_t i = 0; i < numel(d); ++i) {
    // element i of d sits at the reversed index in rev
    std::int64_t rest = i, flat = 0, stride = 1;
    std::vector<std::int64_t> at(d.size());
    for (std::size_t k = d.size(); k-- > 0;) {
      at[k] = rest % d[k];
      rest /= d[k];
    }
    for (std::size_t k = 0; k < d.size(); ++k) {
      flat += at[k] * stride;  // rev's last axis is d's first
      stride *= d[k];
    }
    w[static_cast<std::size_t>(flat)] = v[static_cast<std::size_t>(i)];
  }
  return aj::transpose(aj::from_vector(w, Shape(rev)).astype(t));
}

struct Case {
  std::string subscripts;  // given to einsum
  std::string spec;        // the reference's explicit, letters-only form
  std::vector<Dims> dims;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}},                   // matmul
      {"ij,jk", "ij,jk->ik", {{2, 3}, {3, 4}}},                       // implicit
      {" i j , j k -> i k ", "ij,jk->ik", {{2, 3}, {3, 2}}},          // spaces
      {"...ij,...jk->...ik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},  // batched
      {"...ij,...jk", "abij,bjk->abik", {{2, 1, 3, 4}, {3, 4, 2}}},   // batch broadcast
      {"bij,bjk->bik", "bij,bjk->bik", {{3, 2, 4}, {1, 4, 3}}},       // batch letter broadcast
      {"ii", "ii->", {{4, 4}}},                                       // trace
      {"ii->i", "ii->i", {{4, 4}}},                                   // diagonal
      {"iij->j", "iij->j", {{3, 3, 2}}},
      {"iii->i", "iii->i", {{3, 3, 3}}},
      {"ij->ji", "ij->ji", {{3, 5}}},                                 // transpose
      {"ij", "ij->ij", {{3, 5}}},
      {"ba", "ba->ab", {{3, 4}}},                                     // implicit: alphabetical
      {"Ab,bC", "Ab,bC->AC", {{2, 3}, {3, 4}}},                       // A-Z before a-z
      {"bA", "bA->Ab", {{2, 3}}},
      {"i,j->ij", "i,j->ij", {{3}, {4}}},                             // outer
      {"i,j", "i,j->ij", {{3}, {4}}},
      {"ij->", "ij->", {{3, 4}}},                                     // full sum
      {"ij->i", "ij->i", {{3, 4}}},
      {"ij,ij->", "ij,ij->", {{3, 4}, {3, 4}}},                       // dot (multiply and sum)
      {"bi,bi->b", "bi,bi->b", {{3, 4}, {3, 4}}},                     // batched dot
      {"ij,ij->ij", "ij,ij->ij", {{1, 3}, {2, 3}}},                   // extent-1 broadcast
      {"ij,jk->ik", "ij,jk->ik", {{2, 1}, {3, 4}}},                   // a broadcast summed letter
      {"ij,k->i", "ij,k->i", {{2, 3}, {4}}},                          // letters of one operand summed
      {"ijk,jil->kl", "ijk,jil->kl", {{2, 3, 4}, {3, 2, 5}}},
      {"bn,anm,bm->ba", "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},  // bilinear
      {"ij,jk,kl->il", "ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},     // 3-chain
      {"ij,jk,k->i", "ij,jk,k->i", {{3, 4}, {4, 5}, {5}}},
      {"ab,bc,cd,de->ae", "ab,bc,cd,de->ae", {{2, 3}, {3, 4}, {4, 2}, {2, 3}}},  // 4-chain
      {"ab,ab,ab->ab", "ab,ab,ab->ab", {{2, 3}, {2, 3}, {1, 3}}},
      {"a,b,c", "a,b,c->abc", {{2}, {3}, {2}}},
      {"ab,bc,cd,de,ef,fg->ag", "ab,bc,cd,de,ef,fg->ag", {{2, 3}, {3, 2}, {2, 3}, {3, 2}, {2, 3}, {3, 2}}},  // greedy
      {"ij,jk->ik", "ij,jk->ik", {{2, 0}, {0, 3}}},                   // size 0
      {"ij,jk->ik", "ij,jk->ik", {{0, 3}, {3, 2}}},
      {"i,i->", "i,i->", {{0}, {0}}},
      {"ii", "ii->", {{0, 0}}},
      {"ij,jk->ik", "ij,jk->ik", {{1, 1}, {1, 1}}},                   // size 1
      {",ij->ij", ",ij->ij", {{}, {2, 3}}},                           // rank 0
      {",", ",->", {{}, {}}},
      {"->", "->", {{}}},
      {"i...,...", "ia,a->ai", {{2, 3}, {3}}},                        // implicit: "..." first
      {"...,...->...", "a,a->a", {{3}, {1}}},
      {"i...i->...", "iai->a", {{3, 2, 3}}},
      {"ii,i->i", "ii,i->i", {{3, 3}, {3}}},                          // a diagonal meets another operand
      {"ij,jj->i", "ij,jj->i", {{2, 3}, {3, 3}}},
      {"ibj,bjk->bik", "ibj,bjk->bik", {{2, 3, 4}, {3, 4, 2}}},       // batch letters not leading
      {"ijkl,jlm->ikm", "ijkl,jlm->ikm", {{2, 3, 2, 2}, {3, 2, 3}}},  // two summed letters, merged
  };
  return c;
}

void check_case(const Case& c, DType t, int layout, std::mt19937_64& rng) {
  CAPTURE(c.subscripts);
  CAPTURE(t);
  CAPTURE(layout);
  std::vector<std::vector<double>> vals;
  std::vector<Array> ops;
  for (const Dims& d : c.dims) {
    vals.push_back(random_values(numel(d), t, rng));
    ops.push_back(make(vals.back(), d, t, layout));
  }
  const Ref want = reference(c.spec, c.dims, vals, t == DType::bool_);
  const Array got = aj::einsum(c.subscripts, ops);
  REQUIRE(got.shape() == Shape(want.dims));
  CHECK(got.dtype() == t);
  const std::vector<double> g = got.astype(DType::f64).to_vector<double>();
  const double tol = t == DType::f32 ? 1e-5 : t == DType::f64 ? 1e-13 : t == DType::f16 ? 4e-3 : t == DType::bf16 ? 3e-2 : 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(g[i] - want.values[i]) <= tol * (1 + want.magnitude[i]));
  }
}

}  // namespace

TEST_CASE("einsum: every case against the index loop, float dtypes, three layouts, JIT and interpreter") {
  on_both([] {
    std::mt19937_64 rng(11);
    for (const Case& c : cases()) {
      for (DType t : {DType::f32, DType::f64}) {
        for (int layout : {0, 1, 2}) check_case(c, t, layout, rng);
      }
    }
  });
}

TEST_CASE("einsum: integer and bool dtypes against the index loop (sums in the operands' dtype, bool as or of ands)") {
  on_both([] {
    std::mt19937_64 rng(12);
    for (const Case& c : cases()) {
      for (DType t : {DType::i32, DType::i64, DType::bool_}) check_case(c, t, 0, rng);
    }
  });
}

TEST_CASE("einsum: half precision (stored in f16 and bf16, computed in f32) against the index loop") {
  on_both([] {
    std::mt19937_64 rng(13);
    for (const Case& c : cases()) {
      for (DType t : {DType::f16, DType::bf16}) check_case(c, t, 0, rng);
    }
  });
}

namespace {

// A random einsum: 1-4 operands of 0-3 letters from "abcAB" (repeats within
// an operand included), extent-1 axes broadcast against the letter's
// extent, "..." of 0-2 axes in some operands, the output explicit (a random
// subset, shuffled) or implicit.
struct RandomCase {
  std::string subscripts;
  std::vector<Dims> dims;
};
RandomCase random_case(std::mt19937_64& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  const std::string pool = "abcAB";
  std::map<char, std::int64_t> ext;
  for (char c : pool) ext[c] = 1 + pick(3);
  const std::int64_t ell[2] = {1 + pick(3), 1 + pick(3)};
  RandomCase rc;
  std::string letters_seen;
  bool any_ellipsis = false;
  const int n = 1 + pick(4);
  for (int k = 0; k < n; ++k) {
    std::string term;
    Dims d;
    std::map<char, std::int64_t> here;
    for (int i = pick(4); i > 0; --i) {
      const char c = pool[static_cast<std::size_t>(pick(static_cast<int>(pool.size())))];
      if (!here.count(c)) here[c] = pick(5) == 0 ? 1 : ext[c];
      term += c;
      d.push_back(here[c]);
      letters_seen += c;
    }
    if (pick(3) == 0) {
      any_ellipsis = true;
      const int e = pick(3);
      const std::size_t at = static_cast<std::size_t>(pick(static_cast<int>(term.size()) + 1));
      Dims ed;
      for (int j = 0; j < e; ++j) ed.push_back(pick(5) == 0 ? 1 : ell[2 - e + j]);
      term.insert(at, "...");
      d.insert(d.begin() + static_cast<std::ptrdiff_t>(at), ed.begin(), ed.end());
    }
    rc.subscripts += (k ? "," : "") + term;
    rc.dims.push_back(d);
  }
  if (pick(2) == 0) {
    std::string out;
    for (char c : pool) {
      if (letters_seen.find(c) != std::string::npos && pick(2) == 0) out += c;
    }
    std::shuffle(out.begin(), out.end(), rng);
    if (any_ellipsis) out.insert(static_cast<std::size_t>(pick(static_cast<int>(out.size()) + 1)), "...");
    rc.subscripts += "->" + out;
  }
  return rc;
}

// Recomputes every case of the file with np.einsum and prints the
// disagreements, then "checked N".
constexpr const char* kNumpyScript = R"(
import sys
import numpy as np
bad, n = 0, 0
lines = open(sys.argv[1]).read().split('\n')
i = 0
def arr(line):
    f = line.split()
    nd = int(f[0])
    dims = tuple(int(x) for x in f[1:1 + nd])
    return np.array([float(x) for x in f[1 + nd:]], dtype=np.float64).reshape(dims)
while i < len(lines) and lines[i]:
    subs, k = lines[i].split('|')
    ops = [arr(lines[i + 1 + j]) for j in range(int(k))]
    got = arr(lines[i + 1 + int(k)])
    i += 2 + int(k)
    n += 1
    want = np.einsum(subs, *ops)
    if want.shape != got.shape or not np.allclose(want, got, rtol=1e-12, atol=1e-12):
        bad += 1
        print('MISMATCH', repr(subs), [o.shape for o in ops], want.shape, got.shape)
print('checked', n, 'bad', bad)
)";

bool have_numpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("einsum: random subscripts against NumPy's np.einsum (one python process)") {
  if (!have_numpy()) {
    MESSAGE("skipped: /usr/bin/python3 has no NumPy");
    return;
  }
  namespace fs = std::filesystem;
  const std::string tag = std::to_string(::getpid());
  const fs::path data = fs::temp_directory_path() / ("aj_einsum_" + tag + ".txt");
  const fs::path script = fs::temp_directory_path() / ("aj_einsum_" + tag + ".py");
  std::ofstream(script) << kNumpyScript;
  std::mt19937_64 rng(77);
  int cases_written = 0;
  {
    std::ofstream f(data);
    f.precision(17);
    auto put = [&](const Array& a) {
      f << a.ndim();
      for (int i = 0; i < a.ndim(); ++i) f << ' ' << a.shape()[i];
      for (double v : a.to_vector<double>()) f << ' ' << v;
      f << '\n';
    };
    for (int c = 0; c < 400; ++c) {
      const RandomCase rc = random_case(rng);
      CAPTURE(rc.subscripts);
      std::vector<Array> ops;
      for (const Dims& d : rc.dims) ops.push_back(aj::from_vector(random_values(numel(d), DType::f64, rng), Shape(d)));
      const Array got = aj::einsum(rc.subscripts, ops);
      f << rc.subscripts << '|' << ops.size() << '\n';
      for (const Array& a : ops) put(a);
      put(got);
      ++cases_written;
    }
  }
  const std::string cmd = "/usr/bin/python3 " + script.string() + " " + data.string() + " 2>&1";
  FILE* py = ::popen(cmd.c_str(), "r");
  REQUIRE(py != nullptr);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, py)) out += buf;
  CHECK(::pclose(py) == 0);
  fs::remove(data);
  fs::remove(script);
  INFO(out);
  CHECK(out.find("checked " + std::to_string(cases_written) + " bad 0") != std::string::npos);
}

TEST_CASE("einsum: operands of different dtypes promote as multiply does") {
  const Array a = aj::from_vector(std::vector<std::int32_t>{1, 2, 3, 4}, Shape{2, 2});
  const Array b = aj::from_vector(std::vector<float>{0.5f, 1.5f}, Shape{2});
  const Array r = aj::einsum("ij,j->i", {a, b});
  CHECK(r.dtype() == aj::promote_types(DType::i32, DType::f32));
  CHECK(r.to_vector<double>() == std::vector<double>{3.5, 7.5});
  const Array s = aj::einsum("ij->", {a});
  CHECK(s.dtype() == DType::i32);  // NumPy's einsum keeps i32 (sum would give i64)
  CHECK(s.item<std::int64_t>() == 10);
}

TEST_CASE("einsum: the contraction order is the cheap one, and einsum_path says so") {
  // ij,jk,k->i with i = j = k = 1000: (ij,jk) first costs 1e9 multiply-adds,
  // (jk,k) first then (ij,j) 2e6.
  const aj::EinsumPath p = aj::einsum_path("ij,jk,k->i", {Shape{1000, 1000}, Shape{1000, 1000}, Shape{1000}});
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0] == std::pair<int, int>{1, 2});
  CHECK(p.step_subscripts[0] == "jk,k->j");
  CHECK(p.steps[1] == std::pair<int, int>{0, 1});
  CHECK(p.step_subscripts[1] == "ij,j->i");
  CHECK(p.flops == 2e6);
  CHECK(p.naive_flops == 2e9);
  CHECK(p.str().find("jk,k->j") != std::string::npos);
  // The other way round: k,jk first again, whatever the operands' order.
  const aj::EinsumPath q = aj::einsum_path("k,ij,jk->i", {Shape{1000}, Shape{1000, 1000}, Shape{1000, 1000}});
  CHECK(q.steps[0] == std::pair<int, int>{0, 2});
  CHECK(q.flops == 2e6);
  // Greedy (7 operands): a long chain ending in a vector is contracted from
  // the vector end, never through a 100x100x100 product.
  const std::vector<Shape> chain(6, Shape{100, 100});
  std::vector<Shape> shapes = chain;
  shapes.push_back(Shape{100});
  const aj::EinsumPath g = aj::einsum_path("ab,bc,cd,de,ef,fg,g->a", shapes);
  REQUIRE(g.steps.size() == 6);
  CHECK(g.flops == 6e4);
  // And the values follow that order (small extents, against the loop).
  std::mt19937_64 rng(3);
  std::vector<Dims> dims(6, Dims{3, 3});
  dims.push_back(Dims{3});
  std::vector<std::vector<double>> vals;
  std::vector<Array> ops;
  for (const Dims& d : dims) {
    vals.push_back(random_values(numel(d), DType::f64, rng));
    ops.push_back(aj::from_vector(vals.back(), Shape(d)));
  }
  const Ref want = reference("ab,bc,cd,de,ef,fg,g->a", dims, vals);
  const std::vector<double> got = aj::einsum("ab,bc,cd,de,ef,fg,g->a", ops).to_vector<double>();
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want.values[i]).epsilon(1e-12));
}

TEST_CASE("einsum: a pair contraction is a matmul node (the BLAS), an outer product an elementwise multiply") {
  const Array a = aj::random::normal({8, 6}), b = aj::random::normal({6, 5}), c = aj::random::normal({4, 8, 6});
  CHECK(aj::dump({aj::einsum("ij,jk->ik", {a, b})}).find("matmul") != std::string::npos);
  CHECK(aj::dump({aj::einsum("bij,jk->bik", {c, b})}).find("matmul") != std::string::npos);
  CHECK(aj::dump({aj::einsum("bij,bkj->bik", {c, c})}).find("matmul") != std::string::npos);
  CHECK(aj::dump({aj::einsum("i,j->ij", {aj::random::normal({3}), aj::random::normal({4})})}).find("matmul") ==
        std::string::npos);
  // The same values as matmul itself.
  CHECK(aj::einsum("ij,jk->ik", {a, b}).to_vector<float>() == aj::matmul(a, b).to_vector<float>());
}

TEST_CASE("einsum: gradients against central differences") {
  using ajtest::arg;
  std::mt19937_64 rng(21);
  struct G {
    std::string subscripts;
    std::vector<Dims> dims;
  };
  const std::vector<G> gs = {
      {"ij,jk->ik", {{2, 3}, {3, 4}}},
      {"bn,anm,bm->ba", {{2, 3}, {2, 3, 2}, {2, 2}}},
      {"ii->i", {{3, 3}}},
      {"iij->j", {{2, 2, 3}}},
      {"...ij,...jk", {{2, 1, 2, 3}, {2, 3, 2}}},
      {"ij,ij->j", {{1, 3}, {2, 3}}},
      {"ij,jk,k->i", {{2, 3}, {3, 2}, {2}}},
      {",i->i", {{}, {3}}},
  };
  for (const G& g : gs) {
    std::vector<ajtest::Arg> args;
    for (std::size_t k = 0; k < g.dims.size(); ++k) args.push_back(arg(g.dims[k], rng, -2, 2, k % 2 == 1));
    ajtest::check_gradient("einsum " + g.subscripts, [s = g.subscripts](const std::vector<Array>& x) {
      return std::vector<Array>{aj::einsum(s, x)};
    }, args, rng());
  }
}

TEST_CASE("einsum: the C function computes what the C++ one does") {
  const Array a = aj::random::normal({3, 4}, 0, 1, DType::f64), b = aj::random::normal({4, 2}, 0, 1, DType::f64);
  aj_array hs[2] = {aj::to_c(a), aj::to_c(b)}, out{0};
  REQUIRE(aj_einsum("ij,jk->ik", hs, 2, &out) == AJ_OK);
  const Array got = aj::from_c(out);
  CHECK(got.shape() == Shape{3, 2});
  CHECK(got.to_vector<double>() == aj::einsum("ij,jk->ik", {a, b}).to_vector<double>());
  aj_array_release(out);
  // A wrong operand count: an error naming aj_einsum and einsum, nothing written.
  out = aj_array{7};
  CHECK(aj_einsum("ij,jk->ik", hs, 1, &out) == AJ_ERROR_USER);
  CHECK(out._id == 0);
  const std::string e = aj_last_error();
  CHECK(e.find("aj_einsum") != std::string::npos);
  CHECK(e.find("2 operands") != std::string::npos);
  CHECK(aj_einsum(nullptr, hs, 2, &out) == AJ_ERROR_USER);
  CHECK(aj_einsum("ij", nullptr, 1, &out) == AJ_ERROR_USER);
  aj_array_release(hs[0]);
  aj_array_release(hs[1]);
}

TEST_CASE("einsum: bad subscripts and shapes are located errors naming einsum; the operands stay as they were") {
  const Array a = aj::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Array b = aj::from_vector(std::vector<double>{1, 2, 3, 4}, Shape{4});
  const Array sq = aj::from_vector(std::vector<double>{1, 2, 3, 4}, Shape{2, 2});
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), sv = sq.to_vector<double>();
  auto fails = [&](const std::string& subscripts, const std::vector<Array>& ops, const std::string& says) {
    CAPTURE(subscripts);
    try {
      (void)aj::einsum(subscripts, ops);
      FAIL("no error");
    } catch (const aj::Error& e) {
      const std::string m = e.what();
      CAPTURE(m);
      CHECK(e.kind() == aj::Error::Kind::user);
      CHECK(m.find("einsum") != std::string::npos);
      CHECK(m.find("test_einsum.cpp") != std::string::npos);
      CHECK(m.find(says) != std::string::npos);
    }
    CHECK(a.to_vector<double>() == av);
    CHECK(b.to_vector<double>() == bv);
    CHECK(sq.to_vector<double>() == sv);
  };
  fails("ij,j->i", {a}, "name 2 operands, got 1");
  fails("ij", {a, b}, "name 1 operand, got 2");
  fails("ij", {}, "at least one operand");
  fails("i1", {a}, "invalid character '1'");
  fails("i-j", {a}, "invalid character '-'");
  fails("ij>i", {a}, "invalid character '>'");
  fails("ij->i->i", {a}, "'->' appears more than once");
  fails("ij->k", {a}, "output letter 'k' is in no operand");
  fails("ij->ii", {a}, "output letter 'i' repeats");
  fails("ij,j->i,j", {a, b}, "',' in the output");
  fails("ij,j->i", {a, b}, "letter 'j' has extent 3 in operand 0");
  fails("ijk", {a}, "name 3 axes");
  fails("i", {a}, "no '...' stands for the rest");
  fails("i..j", {a}, "not part of an ellipsis");
  fails("...i...", {a}, "more than one ellipsis");
  fails("...i->i", {a}, "has no '...'");
  fails("ij->....", {a}, "not part of an ellipsis");
  fails("ii", {a}, "letter 'i' repeats in operand 0");
  fails("...j,...j->j", {a, aj::ones({4, 3}, DType::f64)}, "an axis under '...' has extent 2");
  fails("ij,j", {a, Array()}, "operand 1 is an empty Array handle");
  // einsum_path checks the same way.
  CHECK_THROWS_WITH_AS(aj::einsum_path("ij,jk", {Shape{2, 3}, Shape{4, 5}}), doctest::Contains("letter 'j'"),
                       aj::Error);
}
