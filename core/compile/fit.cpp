// Fitted programs: see compile/fit.hpp and docs/extent-replays.md.
#include "core/compile/fit.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "core/compile/extents.hpp"

namespace aj::detail::fit {

namespace {

using extents::same_scalar;

// Every field of a program, in one order: structure words (compared whole),
// numbers (extents, strides, offsets, sizes) and kernel scalars. One walk
// serves reading, fitting, checking and writing, so a field added to
// exec::Program needs its line here and nowhere else.
template <class V>
void walk(exec::Program& p, V& v) {
  auto list = [&](const std::vector<int>& xs) {
    v.word(xs.size());
    for (int x : xs) v.word(static_cast<std::uint64_t>(static_cast<std::int64_t>(x)));
  };
  auto nums = [&](std::vector<std::int64_t>& xs) {
    v.word(xs.size());
    for (std::int64_t& x : xs) v.num(x);
  };
  auto strides = [&](std::vector<std::int64_t>& xs) {  // the kind of a stride is structure (codegen specializes on it)
    v.word(xs.size());
    for (std::int64_t& x : xs) {
      v.word(static_cast<std::uint64_t>(stride_kind(x)));
      v.num(x);
    }
  };
  auto stream = [&](KStream& s) {
    v.word(static_cast<std::uint64_t>(s.dtype) | std::uint64_t{s.index_only} << 8 | std::uint64_t{s.gathered} << 9);
    strides(s.strides);
    v.num(s.offset);
  };
  v.word(static_cast<std::uint64_t>(p.bound));
  v.word(p.captured.size());
  for (const auto& c : p.captured) v.word(reinterpret_cast<std::uintptr_t>(c.get()));
  v.word(static_cast<std::uint64_t>(p.values));
  v.word(p.steps.size());
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    exec::ProgramStep& st = p.steps[k];
    v.word(static_cast<std::uint64_t>(st.kind) | std::uint64_t{st.then} << 8);
    Kernel& kn = st.kernel;
    nums(kn.shape);
    v.word(kn.reduce_axes.size());
    for (std::int64_t a : kn.reduce_axes) v.word(static_cast<std::uint64_t>(a));
    v.word(kn.inputs.size());
    for (KStream& s : kn.inputs) stream(s);
    v.word(kn.instrs.size());
    for (const KInstr& in : kn.instrs) {
      v.word(static_cast<std::uint64_t>(in.kind) | static_cast<std::uint64_t>(in.op) << 8 |
             static_cast<std::uint64_t>(in.dtype) << 24 | std::uint64_t{in.phase} << 32);
      v.word(static_cast<std::uint32_t>(in.a) | static_cast<std::uint64_t>(static_cast<std::uint32_t>(in.b)) << 32);
      v.word(static_cast<std::uint32_t>(in.c) | static_cast<std::uint64_t>(static_cast<std::uint32_t>(in.arg)) << 32);
    }
    v.word(kn.outputs.size());
    for (KOutput& o : kn.outputs) {
      v.word(static_cast<std::uint32_t>(o.value) | std::uint64_t{o.phase} << 32);
      stream(o.stream);
    }
    v.word(kn.scalars.size());
    for (std::size_t j = 0; j < kn.scalars.size(); ++j) {
      v.word(static_cast<std::uint64_t>(kn.scalars[j].dtype));
      v.scalar(kn.scalars[j], static_cast<int>(k), static_cast<int>(j));
    }
    list(st.inputs);
    list(st.outputs);
    list(st.donors);
    list(st.into);
    v.word(st.bytes.size());
    for (std::size_t& b : st.bytes) {
      std::int64_t x = static_cast<std::int64_t>(b);
      v.num(x);
      b = static_cast<std::size_t>(x);
    }
    v.word(st.layouts.size());
    for (Layout& l : st.layouts) {
      strides(l.strides);
      v.num(l.offset);
    }
    LibraryCall& c = st.call;
    v.word(static_cast<std::uint64_t>(c.op) | static_cast<std::uint64_t>(c.dtype) << 16);
    nums(c.shape);
    v.word(c.inputs.size());
    for (LibraryOperand& o : c.inputs) {
      v.word(static_cast<std::uint64_t>(o.dtype) | std::uint64_t{o.in_place} << 8);
      nums(o.shape);
      strides(o.strides);
      v.num(o.offset);
    }
    v.word(static_cast<std::uint64_t>(c.axis));
    v.num(c.k);
    list(st.release);
  }
  list(p.results);
  v.word(p.result_dtypes.size());
  for (DType t : p.result_dtypes) v.word(static_cast<std::uint64_t>(t));
  v.word(p.result_shapes.size());
  for (Shape& s : p.result_shapes) {
    v.word(static_cast<std::uint64_t>(s.ndim()));
    for (int d = 0; d < s.ndim(); ++d) v.num(s[d]);
  }
  v.word(p.result_layouts.size());
  for (auto& l : p.result_layouts) {
    strides(l.strides);
    v.num(l.offset);
  }
  v.word(static_cast<std::uint64_t>(p.device.kind) << 32 | static_cast<std::uint32_t>(p.device.index));
}

// A program read flat.
struct Flat {
  std::vector<std::uint64_t> words;
  std::vector<std::int64_t> nums;
  std::vector<KScalar> scalars;
  void word(std::uint64_t w) { words.push_back(w); }
  void num(std::int64_t& x) { nums.push_back(x); }
  void scalar(KScalar& s, int, int) { scalars.push_back(s); }
};

Flat flat(const exec::Program& p) {
  Flat f;
  walk(const_cast<exec::Program&>(p), f);  // reading only
  return f;
}

// An integer over the argument numbers.
struct Expr {
  enum class Kind : std::uint8_t { constant, monomial, shifted } kind = Kind::constant;
  std::int64_t c = 0;               // the constant, the coefficient, or the shift
  std::vector<std::uint8_t> power;  // monomial: per class (Fitted::reps)
  int num = -1;                     // shifted: the class's representative number
  std::int64_t d = 0;               // monomial: a constant added (4 * (n - 1) bytes: 4 * n - 4)
};

// A kernel scalar.
struct ScalarExpr {
  enum class Kind : std::uint8_t { constant, argument, count, reciprocal } kind = Kind::constant;
  KScalar value;  // constant
  int arg = -1;   // argument: the index among Point::scalars
  Expr of;        // count, reciprocal: the integer it is made from
};

// Equality of two numbers that held (or failed) at both fit points.
struct Pair {
  int a = 0, b = 0;
  bool equal = false;
};

std::int64_t pow_checked(std::int64_t base, int e, bool* ok) {
  __int128 r = 1;
  for (int i = 0; i < e; ++i) {
    r *= base;
    if (r > std::numeric_limits<std::int64_t>::max() || r < std::numeric_limits<std::int64_t>::min()) {
      *ok = false;
      return 0;
    }
  }
  return static_cast<std::int64_t>(r);
}

}  // namespace

struct Fitted {
  exec::Program base;                // the first sample's program (kernels not prepared)
  std::vector<std::uint64_t> words;  // its structure
  Point a, b;                        // the fit points
  std::vector<bool> generalized;     // per number of a point: changed between a and b
  std::vector<int> reps;             // one number per class of generalized numbers equal at both points
  std::vector<Pair> pairs;
  std::vector<bool> scalar_fixed;
  std::vector<Expr> nums;
  std::vector<ScalarExpr> scalars;
};

namespace {

// The value of `e` at the numbers `x` (nullopt: beyond int64).
std::optional<std::int64_t> eval(const Fitted& f, const Expr& e, const std::vector<std::int64_t>& x) {
  switch (e.kind) {
    case Expr::Kind::constant:
      return e.c;
    case Expr::Kind::shifted: {
      const __int128 r = static_cast<__int128>(x[static_cast<std::size_t>(e.num)]) + e.c;
      if (r > std::numeric_limits<std::int64_t>::max() || r < std::numeric_limits<std::int64_t>::min()) return std::nullopt;
      return static_cast<std::int64_t>(r);
    }
    case Expr::Kind::monomial: {
      __int128 r = e.c;
      for (std::size_t i = 0; i < e.power.size(); ++i) {
        if (!e.power[i]) continue;
        bool ok = true;
        r *= pow_checked(x[static_cast<std::size_t>(f.reps[i])], e.power[i], &ok);
        if (!ok || r > std::numeric_limits<std::int64_t>::max() || r < std::numeric_limits<std::int64_t>::min()) {
          return std::nullopt;
        }
      }
      r += e.d;
      if (r > std::numeric_limits<std::int64_t>::max() || r < std::numeric_limits<std::int64_t>::min()) return std::nullopt;
      return static_cast<std::int64_t>(r);
    }
  }
  return std::nullopt;
}

// The one expression giving `va` at point a and `vb` at point b; false when
// none or several do.
bool fit_int(const Fitted& f, std::int64_t va, std::int64_t vb, Expr* out) {
  if (va == vb) {
    *out = Expr{Expr::Kind::constant, va, {}, -1};
    return true;
  }
  int found = 0;
  for (int r : f.reps) {  // an offset (or an extent) plus a constant
    const auto i = static_cast<std::size_t>(r);
    // (No shift is the monomial below, except where the number is 0 at a
    // fit point: a minibatch view's offset from 0 to 96.)
    const bool zero = f.a.nums[i] == 0 || f.b.nums[i] == 0;
    if ((va != f.a.nums[i] || zero) && va - f.a.nums[i] == vb - f.b.nums[i]) {
      ++found;
      *out = Expr{Expr::Kind::shifted, va - f.a.nums[i], {}, r};
    }
  }
  // A constant times a monomial: powers 0..3 per class, degree 1..4 (fewer
  // when there are many classes).
  const std::size_t n = f.reps.size();
  const int max_degree = n <= 6 ? 4 : n <= 12 ? 3 : 2;
  std::vector<std::uint8_t> power(n, 0);
  bool affine = false;  // second round: c * monomial + d
  auto try_it = [&] {
    bool ok = true;
    __int128 ma = 1, mb = 1;
    for (std::size_t i = 0; i < n && ok; ++i) {
      if (!power[i]) continue;
      ma *= pow_checked(f.a.nums[static_cast<std::size_t>(f.reps[i])], power[i], &ok);
      mb *= pow_checked(f.b.nums[static_cast<std::size_t>(f.reps[i])], power[i], &ok);
      if (ma > (__int128{1} << 62) || mb > (__int128{1} << 62) || ma < -(__int128{1} << 62) || mb < -(__int128{1} << 62)) ok = false;
    }
    if (!ok || ma == 0 || mb == 0) return;
    if (affine) {
      if (ma == mb || (static_cast<__int128>(va) - vb) % (ma - mb) != 0) return;
      const __int128 c = (static_cast<__int128>(va) - vb) / (ma - mb), d = va - c * ma;
      if (c == 0 || d == 0 || c > INT64_MAX || c < INT64_MIN || d > INT64_MAX || d < INT64_MIN) return;
      ++found;
      *out = Expr{Expr::Kind::monomial, static_cast<std::int64_t>(c), power, -1, static_cast<std::int64_t>(d)};
      return;
    }
    if (va % ma != 0) return;
    const __int128 c = va / ma;
    if (c == 0 || c * mb != vb) return;
    ++found;
    *out = Expr{Expr::Kind::monomial, static_cast<std::int64_t>(c), power, -1};
  };
  // Every power vector with 1 <= degree <= max_degree.
  auto rec = [&](auto& self, std::size_t i, int left, bool any) -> void {
    if (found > 1) return;
    if (i == n) {
      if (any) try_it();
      return;
    }
    for (int e = 0; e <= std::min(3, left); ++e) {
      power[i] = static_cast<std::uint8_t>(e);
      self(self, i + 1, left - e, any || e > 0);
    }
    power[i] = 0;
  };
  rec(rec, 0, max_degree, false);
  if (found == 0) {  // then a constant times a monomial plus a constant (a slice's extent times strides)
    affine = true;
    rec(rec, 0, max_degree, false);
  }
  return found == 1;
}

KScalar from_count(std::int64_t n, DType t, bool reciprocal) {
  return as_kernel_scalar(reciprocal ? Scalar(1.0 / static_cast<double>(n)) : is_float(t) ? Scalar(static_cast<double>(n)) : Scalar(n), t);
}

bool fit_scalar(const Fitted& f, const KScalar& ka, const KScalar& kb, ScalarExpr* out) {
  if (same_kernel_scalar(ka, kb)) {
    out->kind = ScalarExpr::Kind::constant;
    out->value = ka;
    return true;
  }
  int found = 0;
  for (std::size_t j = 0; j < f.a.scalars.size(); ++j) {  // a scalar argument as it is
    if (f.scalar_fixed[j]) continue;
    if (same_kernel_scalar(as_kernel_scalar(f.a.scalars[j], ka.dtype), ka) && same_kernel_scalar(as_kernel_scalar(f.b.scalars[j], kb.dtype), kb)) {
      ++found;
      out->kind = ScalarExpr::Kind::argument;
      out->arg = static_cast<int>(j);
    }
  }
  // A count, or (floats) its reciprocal, made from the extents.
  auto count = [&](std::int64_t ca, std::int64_t cb, bool reciprocal) {
    Expr e;
    if (ca == 0 || cb == 0 || !fit_int(f, ca, cb, &e)) return;
    if (!same_kernel_scalar(from_count(ca, ka.dtype, reciprocal), ka) || !same_kernel_scalar(from_count(cb, kb.dtype, reciprocal), kb)) return;
    ++found;
    out->kind = reciprocal ? ScalarExpr::Kind::reciprocal : ScalarExpr::Kind::count;
    out->of = std::move(e);
  };
  constexpr double kExact = 9007199254740992.0;  // 2^53
  if (!is_float(ka.dtype)) {
    count(ka.i, kb.i, false);
  } else {
    if (std::fabs(ka.f) < kExact && std::fabs(kb.f) < kExact && ka.f == std::floor(ka.f) && kb.f == std::floor(kb.f)) {
      count(static_cast<std::int64_t>(ka.f), static_cast<std::int64_t>(kb.f), false);
    }
    if (ka.f != 0 && kb.f != 0 && std::fabs(1 / ka.f) < kExact && std::fabs(1 / kb.f) < kExact) {
      count(std::llround(1 / ka.f), std::llround(1 / kb.f), true);
    }
  }
  return found == 1;
}

// Writes each number and kernel scalar of a program from the fit at `x`.
struct Writer {
  const Fitted& f;
  const Point& at;
  std::vector<Binding>* bindings;
  std::size_t n = 0, s = 0;
  bool ok = true;
  void word(std::uint64_t) {}
  void num(std::int64_t& x) {
    const auto v = eval(f, f.nums[n++], at.nums);
    if (!v) ok = false;
    else x = *v;
  }
  void scalar(KScalar& k, int step, int slot) {
    const ScalarExpr& e = f.scalars[s++];
    switch (e.kind) {
      case ScalarExpr::Kind::constant:
        k = e.value;
        break;
      case ScalarExpr::Kind::argument:
        k = as_kernel_scalar(at.scalars[static_cast<std::size_t>(e.arg)], k.dtype);
        if (bindings) bindings->push_back({step, slot, e.arg});
        break;
      case ScalarExpr::Kind::count:
      case ScalarExpr::Kind::reciprocal: {
        const auto v = eval(f, e.of, at.nums);
        if (!v || *v == 0) ok = false;
        else k = from_count(*v, k.dtype, e.kind == ScalarExpr::Kind::reciprocal);
        break;
      }
    }
  }
};

}  // namespace

bool same_kernel_scalar(const KScalar& a, const KScalar& b) {
  return a.dtype == b.dtype && a.i == b.i && std::bit_cast<std::uint64_t>(a.f) == std::bit_cast<std::uint64_t>(b.f);
}

KScalar as_kernel_scalar(const Scalar& s, DType t) {
  KScalar k;
  k.dtype = t;
  if (is_float(t)) {
    const double v = s.kind == Scalar::Kind::floating ? s.f : static_cast<double>(s.i);
    k.f = t == DType::f32 ? static_cast<double>(static_cast<float>(v)) : v;
  } else {
    k.i = s.kind == Scalar::Kind::floating ? static_cast<std::int64_t>(s.f) : s.i;
  }
  return k;
}

std::shared_ptr<const Fitted> fit(const Sample& sa, const Sample& sb, std::string* why) {
  auto fail = [&](std::string w) {
    *why = std::move(w);
    return nullptr;
  };
  if (sa.at.nums.size() != sb.at.nums.size() || sa.at.scalars.size() != sb.at.scalars.size() ||
      sa.at.is_offset != sb.at.is_offset || sa.at.implied != sb.at.implied) {
    return fail("the arguments differ in number or rank");
  }
  Flat fa = flat(*sa.program), fb = flat(*sb.program);
  if (fa.words != fb.words || fa.nums.size() != fb.nums.size() || fa.scalars.size() != fb.scalars.size()) {
    return fail("the plans at two extents differ in more than their numbers (the planner decided otherwise)");
  }
  auto f = std::make_shared<Fitted>();
  f->a = sa.at, f->b = sb.at;
  const std::size_t n = sa.at.nums.size();
  f->generalized.assign(n, false);
  for (std::size_t i = 0; i < n; ++i) f->generalized[i] = sa.at.nums[i] != sb.at.nums[i];
  // Classes: generalized numbers equal to each other at both points are one.
  for (std::size_t i = 0; i < n; ++i) {
    if (!f->generalized[i] || (!sa.at.implied.empty() && sa.at.implied[i])) continue;
    bool seen = false;
    for (int r : f->reps) {
      const auto ri = static_cast<std::size_t>(r);
      seen |= sa.at.nums[ri] == sa.at.nums[i] && sb.at.nums[ri] == sb.at.nums[i];
    }
    if (!seen) f->reps.push_back(static_cast<int>(i));
  }
  if (f->reps.empty()) return fail("no argument extent or offset changed");
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      if (!f->generalized[i] && !f->generalized[j]) continue;  // fixed numbers are checked one by one
      const bool ea = sa.at.nums[i] == sa.at.nums[j], eb = sb.at.nums[i] == sb.at.nums[j];
      if (ea == eb) f->pairs.push_back({static_cast<int>(i), static_cast<int>(j), ea});
    }
  }
  f->scalar_fixed.resize(sa.at.scalars.size());
  for (std::size_t j = 0; j < sa.at.scalars.size(); ++j) f->scalar_fixed[j] = same_scalar(sa.at.scalars[j], sb.at.scalars[j]);
  f->nums.resize(fa.nums.size());
  for (std::size_t k = 0; k < fa.nums.size(); ++k) {
    if (!fit_int(*f, fa.nums[k], fb.nums[k], &f->nums[k])) {
      return fail("number " + std::to_string(k) + " of the plan (" + std::to_string(fa.nums[k]) + ", then " +
                  std::to_string(fb.nums[k]) + ") has no one expression over the arguments' extents");
    }
  }
  f->scalars.resize(fa.scalars.size());
  for (std::size_t k = 0; k < fa.scalars.size(); ++k) {
    if (!fit_scalar(*f, fa.scalars[k], fb.scalars[k], &f->scalars[k])) {
      return fail("kernel scalar " + std::to_string(k) + " of the plan changes and is not one scalar argument, count or reciprocal");
    }
  }
  f->words = std::move(fa.words);
  f->base = *sa.program;
  for (exec::ProgramStep& st : f->base.steps) st.prepared.reset();
  return f;
}

bool applies(const Fitted& f, const Point& p, std::string* why) {
  auto fail = [&](const char* w) {
    if (why) *why = w;
    return false;
  };
  if (p.nums.size() != f.a.nums.size() || p.is_offset != f.a.is_offset || p.implied != f.a.implied ||
      p.scalars.size() != f.a.scalars.size()) {
    return fail("the arguments differ in number or rank");
  }
  for (std::size_t i = 0; i < p.nums.size(); ++i) {
    if (!f.generalized[i] && p.nums[i] != f.a.nums[i]) return fail("an extent or offset that the fit kept fixed changed");
  }
  for (const Pair& q : f.pairs) {
    if ((p.nums[static_cast<std::size_t>(q.a)] == p.nums[static_cast<std::size_t>(q.b)]) != q.equal) {
      return fail("two extents are equal here and were not at the fit points, or the other way round");
    }
  }
  for (std::size_t j = 0; j < p.scalars.size(); ++j) {
    if (f.scalar_fixed[j] && !same_scalar(p.scalars[j], f.a.scalars[j])) return fail("a scalar argument the fit kept fixed changed");
  }
  return true;
}

bool outgrown(const Fitted& f, const Point& p) {
  if (p.nums.size() != f.a.nums.size() || p.is_offset != f.a.is_offset || p.implied != f.a.implied) return true;
  for (std::size_t i = 0; i < p.nums.size(); ++i) {
    if (!f.generalized[i] && p.nums[i] != f.a.nums[i]) return true;
  }
  return false;
}

bool fixes_scalars(const Fitted& f) {
  for (bool fixed : f.scalar_fixed) {
    if (fixed) return true;
  }
  return false;
}

bool differs(const Fitted& f, const Point& p) {
  for (std::size_t i = 0; i < p.nums.size(); ++i) {
    if (f.generalized[i] && (p.nums[i] == f.a.nums[i] || p.nums[i] == f.b.nums[i])) return false;
  }
  return true;
}

std::unique_ptr<exec::Program> make(const Fitted& f, const Point& p, std::vector<Binding>* bindings) {
  auto prog = std::make_unique<exec::Program>(f.base);
  Writer w{f, p, bindings};
  walk(*prog, w);
  if (!w.ok) return nullptr;
  for (const exec::ProgramStep& st : prog->steps) {  // sizes and extents are never negative
    for (std::size_t b : st.bytes) {
      if (static_cast<std::int64_t>(b) < 0) return nullptr;
    }
    for (std::int64_t d : st.kernel.shape) {
      if (d < 0) return nullptr;
    }
    for (std::int64_t d : st.call.shape) {
      if (d < 0) return nullptr;
    }
    for (const LibraryOperand& o : st.call.inputs) {
      for (std::int64_t d : o.shape) {
        if (d < 0) return nullptr;
      }
    }
  }
  for (const Shape& s : prog->result_shapes) {
    for (int d = 0; d < s.ndim(); ++d) {
      if (s[d] < 0) return nullptr;
    }
  }
  return prog;
}

bool check(const Fitted& f, const Sample& s, std::string* why) {
  const std::unique_ptr<exec::Program> mine = make(f, s.at, nullptr);
  if (!mine) {
    *why = "the fitted program's numbers do not evaluate at a new point";
    return false;
  }
  Flat a = flat(*mine), b = flat(*s.program);
  if (a.words != b.words) {
    *why = "the plan at a third point differs in more than its numbers";
    return false;
  }
  if (a.nums != b.nums) {
    for (std::size_t k = 0; k < a.nums.size() && k < b.nums.size(); ++k) {
      if (a.nums[k] != b.nums[k]) {
        *why = "number " + std::to_string(k) + " of the plan at a third point is " + std::to_string(b.nums[k]) +
               ", the fit says " + std::to_string(a.nums[k]);
        return false;
      }
    }
  }
  for (std::size_t k = 0; k < a.scalars.size(); ++k) {
    if (!same_kernel_scalar(a.scalars[k], b.scalars[k])) {
      *why = "kernel scalar " + std::to_string(k) + " of the plan at a third point is not what the fit says";
      return false;
    }
  }
  return a.nums.size() == b.nums.size() && a.scalars.size() == b.scalars.size();
}

}  // namespace aj::detail::fit
