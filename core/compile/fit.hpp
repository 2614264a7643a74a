// Fitted programs (docs/extent-replays.md, "programs fitted from plans"):
// one program of aj::compile that serves every call at new extents of its
// signature without tracing and without planning.
//
// A program (exec/program.hpp) is a plan with its numbers fixed: kernel
// shapes, strides and offsets, buffer sizes, library call shapes, result
// layouts, and kernel scalars made from extents (mean's 1/n, a pad's
// bounds). Two programs that aj::compile planned for one function at two
// argument points (every argument's extents and offset) are compared: when
// everything but those numbers is the same, each number is fitted to one
// expression over the argument numbers that changed (a constant, a
// constant times a monomial, the same plus a constant where no plain one
// fits, an offset plus a constant, a scalar argument, a count or its
// reciprocal). A number with no expression, or with two,
// refuses the fit.
//
// A fitted program is trusted only after it reproduces, number for number,
// a third plan made at a point whose every generalized number differs from
// both points it was fitted at. From then on a call at new extents gets the
// program's numbers evaluated at its point, its kernels prepared, and runs:
// no function call, no graph, no plan.
//
// What a plan decided from its extents stays decided: the fitted program
// serves only points where every equality between two argument numbers
// holds or fails as at both fit points (a reshape that was an identity, two
// operands of one extent), the arguments are contiguous, and the scalar
// arguments that did not change keep their values. Size thresholds of the
// planner (the work rule, a matmul's blockwise epilogue) may choose
// otherwise at far-away extents; the program stays correct there (every
// choice the planner makes is valid at every extent), only not retuned.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "arrayjit/array.hpp"
#include "exec/program.hpp"

namespace aj::detail::fit {

// The numbers of one call that a program depends on: each array argument's
// extents and offset, in order, and the scalar arguments whose values may
// change (aj::compile's non-structural scalars), in order.
struct Point {
  std::vector<std::int64_t> nums;
  std::vector<bool> is_offset;  // per entry of nums: an offset, not an extent
  std::vector<bool> implied;    // per entry (or empty: none): a constant times a later entry, never a class of its own
  std::vector<Scalar> scalars;
};

// A program planned at a point.
struct Sample {
  std::shared_ptr<const exec::Program> program;
  Point at;
};

struct Fitted;

// A kernel scalar that follows a scalar argument: (step, slot) of the
// program, and the index of the argument among Point::scalars.
struct Binding {
  int step = 0, scalar = 0, arg = 0;
};

// The program of `a` and `b` with each number an expression; null, with the
// reason, when they differ in more than numbers or a number has not exactly
// one expression.
std::shared_ptr<const Fitted> fit(const Sample& a, const Sample& b, std::string* why);

// Whether `f` may serve point `p`: the same count of numbers, the numbers
// that were fixed unchanged, every equality between two numbers as at the
// fit points, the scalar arguments that were fixed unchanged.
bool applies(const Fitted& f, const Point& p, std::string* why);
// Whether `p` has other numbers than the fit points, or changes one that
// did not change between them (the fit can never serve such points: a new
// fit is due).
bool outgrown(const Fitted& f, const Point& p);
// Whether some scalar argument had one value at both fit points (the fit
// serves only that value; its bindings do not cover it).
bool fixes_scalars(const Fitted& f);
// Whether every number that was generalized differs at `p` from both fit
// points (what a checking sample needs).
bool differs(const Fitted& f, const Point& p);

// The program at `p` (unprepared), its kernel scalars that follow scalar
// arguments set from p's and listed in *bindings; null when a number comes
// out negative or too large.
std::unique_ptr<exec::Program> make(const Fitted& f, const Point& p, std::vector<Binding>* bindings);

// Whether make(f, s.at) is s.program: each step, each number, each kernel
// scalar. (The check that trusts a fit.)
bool check(const Fitted& f, const Sample& s, std::string* why);

// The kernel scalar a C++ scalar becomes in a slot of dtype t (as
// trace::constant stores it).
KScalar as_kernel_scalar(const Scalar& s, DType t);
// Whether two kernel scalars are the same, bit for bit.
bool same_kernel_scalar(const KScalar& a, const KScalar& b);

}  // namespace aj::detail::fit
