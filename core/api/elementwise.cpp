// Elementwise ops: dtype resolution (NumPy promotion, weak scalars),
// broadcasting, and the checks that make bad calls fail at trace time.
#include <cmath>
#include <initializer_list>
#include <new>
#include <span>
#include <string>

#include "core/api/trace.hpp"

namespace aj {

namespace {

using trace::describe;

// bool < integer < floating, the category NumPy's weak scalars compare
// (signed and unsigned integers are one: NEP 50 keeps u8 + 1 in u8).
int category(DType t) {
  switch (dtype_kind(t)) {
    case DTypeKind::Bool: return 0;
    case DTypeKind::Unsigned:
    case DTypeKind::Signed: return 1;
    case DTypeKind::Float: return 2;
  }
  internal_error(std::string("category: dtype ") + dtype_name(t));
}
int category(const Scalar& s) {
  return s.kind == Scalar::Kind::boolean ? 0 : s.kind == Scalar::Kind::integer ? 1 : 2;
}
// A category's default dtype (a scalar's, a weak array's): bool, i64, f64.
DType category_default(int c) { return c == 0 ? DType::bool_ : c == 1 ? DType::i64 : DType::f64; }
DType default_dtype(const Scalar& s) { return category_default(category(s)); }

std::string describe(const Operand& o) {
  return o.is_scalar ? "scalar " + describe(o.scalar) : describe(*o.array);
}

std::string describe_all(std::span<const Operand* const> ops) {
  std::string s;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (i) s += ", ";
    s += describe(*ops[i]);
  }
  return s;
}

// A weak array (Array::is_weak, aj::scalar) counts as the C++ scalar it
// holds: its category, and that category's default dtype.
bool weak(const Operand& o) { return o.is_scalar || o.array->is_weak(); }
int weak_category(const Operand& o) { return o.is_scalar ? category(o.scalar) : category(o.array->dtype()); }

// The dtype several operands meet at: arrays promote as NumPy; a scalar (or
// weak array) only moves the result to another category (bool -> integer ->
// float), and then to that category's default (i64 / f64), as NumPy 2
// (NEP 50) does.
DType result_dtype(std::span<const Operand* const> ops) {
  bool have_array = false;
  DType t = DType::bool_;
  for (auto* o : ops) {
    if (weak(*o)) continue;
    t = have_array ? promote_types(t, o->array->dtype()) : o->array->dtype();
    have_array = true;
  }
  for (auto* o : ops) {
    if (!weak(*o)) continue;
    if (!have_array) {
      t = category_default(weak_category(*o));
      have_array = true;  // the first scalar sets the type, the rest are weak against it
    } else if (weak_category(*o) > category(t)) {
      t = category_default(weak_category(*o));
    }
  }
  return t;
}

// Whether an op's result is weak: a weak array among its operands and no
// ordinary one (C++ scalars alone make an ordinary array, as always).
bool weak_result(std::span<const Operand* const> ops) {
  bool any = false;
  for (auto* o : ops) {
    if (!weak(*o)) return false;
    any |= !o->is_scalar;
  }
  return any;
}
Array weakened(Array a, bool weak) {
  detail::set_weak(a, weak);
  return a;
}

// Operand `o` in dtype `t`: an array cast to it, or a scalar as a constant
// of the op's result shape (graph/graph.hpp: no Broadcast node for it).
Array as_array(const char* op, const Operand& o, DType t, const Shape& shape) {
  if (o.is_scalar) return trace::constant(o.scalar, t, op, o.loc, shape);  // checks that it fits
  return trace::cast(trace::local(*o.array, op, o.loc), t, o.loc);
}

// An elementwise op's operand as its node reads it: the caller's own array
// when it has the op's dtype and shape (no handle copied: a copy and its
// release are two atomic operations, and an op has up to three operands),
// else the constant, cast or Broadcast view made for it, held here until the
// op's node takes its use. Casts and constants are made first, then the
// Broadcast views (make_elementwise), in operand order.
class Input {
 public:
  Input(const char* op, const Operand& o, DType t, const Shape& shape) {
    if (o.is_scalar) {
      made_ = trace::constant(o.scalar, t, op, o.loc, shape);  // checks that it fits
      return;
    }
    const Array& a = trace::local(*o.array, op, o.loc);
    if (trace::node(a).dtype == t) own_ = &a;
    else made_ = trace::cast(a, t, o.loc);
  }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  const Array& array() const { return own_ ? *own_ : made_; }
  void broadcast_to(const Shape& shape, const Loc& loc) {
    if (trace::node(array()).shape == shape) return;
    made_ = trace::broadcast(array(), shape, loc);
    own_ = nullptr;
  }

 private:
  const Array* own_ = nullptr;
  Array made_;
};

// Make the node `op` of `shape` (check_shapes' result) over its operands;
// those of other shapes get Broadcast views.
Array make_elementwise(Op op, DType out, const Shape& shape, std::initializer_list<Input*> ins, const Loc& loc) {
  for (Input* in : ins) in->broadcast_to(shape, loc);
  Node& n = trace::scratch_node();
  n.op = op;
  n.dtype = out;
  n.shape = shape;
  for (const Input* in : ins) n.inputs.push_back(in->array().node_id());
  return trace::make(std::move(n), loc);
}

// Broadcast the operands' shapes as the user wrote them, before any cast:
// an error names each operand with its own dtype (i32[3, 4] and f64[5]).
// Then the result must fit in memory in the widest dtype the op makes
// (its casts and broadcasts are no larger), checked here under the op's name.
// Returns the result's shape (rank 0 when every operand is a scalar): an
// operand's own when all have one (no copy per traced op), else the
// broadcast, kept in `broadcast`.
const Shape& check_shapes(const char* op, std::span<const Operand* const> ops, DType widest, const Loc& loc,
                          Shape& broadcast) {
  const Shape* first = nullptr;  // fast path: all array operands of one shape cannot fail
  bool same = true;
  for (auto* o : ops) {
    if (o->is_scalar) continue;
    const Shape& s = o->array->shape();
    if (first && *first != s) same = false;
    first = &s;
  }
  if (same) {
    if (!first) return broadcast;  // empty: rank 0
    trace::check_array_size(*first, widest, op, loc);
    return *first;
  }
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (auto* o : ops) {
    if (o->is_scalar) continue;
    shapes.push_back(o->array->shape());
    dtypes.push_back(o->array->dtype());
  }
  std::vector<const Shape*> ptrs;
  for (const Shape& s : shapes) ptrs.push_back(&s);
  broadcast = trace::broadcast_shapes(ptrs, dtypes, op, loc);
  trace::check_array_size(broadcast, widest, op, loc);
  return broadcast;
}

DType widest(DType a, DType b) { return itemsize(a) >= itemsize(b) ? a : b; }

void check_any_array(const char* op, std::span<const Operand* const> ops) {
  for (auto* o : ops) {
    if (!o->is_scalar) trace::own_node(*o->array, op, o->loc);
  }
}

Array binary(Op op, const Operand& a, const Operand& b) try {
  trace::Scope scope;
  const char* name = op_name(op);
  const Loc& loc = a.is_scalar ? b.loc : a.loc;
  const Operand* ops[] = {&a, &b};  // no allocation per traced op
  check_any_array(name, ops);
  DType t = result_dtype(ops);
  if (op_has(op, opflag::Logical)) {
    for (auto* o : ops) {
      bool ok = o->is_scalar ? o->scalar.kind == Scalar::Kind::boolean
                             : o->array->dtype() == DType::bool_;
      if (!ok) {
        user_error(name, "needs bool operands, got " + describe_all(ops) +
                             " (compare first, e.g. x != 0, or use astype(DType::bool_))", loc);
      }
    }
  } else if (op_has(op, opflag::IntegerOnly)) {
    if (is_float(t)) {
      bool integers = true;  // of integer dtypes that meet at a float (i64 with u64: f64)
      for (auto* o : ops) integers &= o->is_scalar ? o->scalar.kind != Scalar::Kind::floating : !is_float(o->array->dtype());
      user_error(name, "needs integer or bool operands, got " + describe_all(ops) +
                           (integers ? " (they promote to " + std::string(dtype_name(t)) +
                                           ", as NumPy's; astype() one to the other's dtype first)"
                                     : std::string(" (bit operations are defined on integers; astype() first)")),
                 loc);
    }
    // NumPy: bools are logic for and/or/xor; shifts, gcd and lcm of bools
    // are of int8 (True << 1 is 2).
    if (t == DType::bool_ && op != Op::BitAnd && op != Op::BitOr && op != Op::BitXor) t = DType::i8;
  } else if (t == DType::bool_ && !is_compare(op) && op != Op::Max && op != Op::Min) {
    user_error(name, "does not accept bool operands (" + describe_all(ops) +
                         "); use && / || for logic or astype() to a number type", loc);
  }
  if (op_has(op, opflag::FloatOnly) && !is_float(t)) t = DType::f64;  // NumPy: ints give f64
  if (op == Op::Nextafter && itemsize(t) < 4) {
    // Halves compute in f32, whose next value rounds back to the operand.
    user_error(name, "of " + std::string(dtype_name(t)) + " is not supported (" + describe_all(ops) +
                         "): the step is the half's own ulp, which f32 arithmetic cannot give; use f32",
               loc);
  }
  DType out = is_compare(op) ? DType::bool_ : t;
  Shape broadcast;
  const Shape& shape = check_shapes(name, ops, widest(t, out), loc, broadcast);
  Input x(name, a, t, shape), y(name, b, t, shape);
  return weakened(make_elementwise(op, out, shape, {&x, &y}, loc), weak_result(ops));
} catch (const std::bad_alloc&) {
  detail::out_of_memory(op_name(op), a.is_scalar ? b.loc : a.loc);
}

Array unary(Op op, const Operand& a) try {
  trace::Scope scope;
  const char* name = op_name(op);
  const Operand* ops[] = {&a};
  check_any_array(name, ops);
  DType t = result_dtype(ops);
  if (op_has(op, opflag::Logical)) {
    if (t != DType::bool_) {
      user_error(name, "needs a bool operand, got " + describe(a) + " (compare first, e.g. x == 0)",
                 a.loc);
    }
  } else if (op_has(op, opflag::IntegerOnly)) {
    if (is_float(t)) {
      user_error(name, "needs an integer or bool operand, got " + describe(a) +
                           " (bit operations are defined on integers; astype() first)", a.loc);
    }
  } else if (t == DType::bool_) {
    user_error(name, "does not accept bool (" + describe(a) + "); use ! for logic or astype() first",
               a.loc);
  }
  if (op_has(op, opflag::FloatOnly) && !is_float(t)) t = DType::f64;  // NumPy: ints give f64
  Shape broadcast;
  const Shape& shape = check_shapes(name, ops, t, a.loc, broadcast);
  Input x(name, a, t, shape);
  return weakened(make_elementwise(op, t, shape, {&x}, a.loc), weak_result(ops));
} catch (const std::bad_alloc&) {
  detail::out_of_memory(op_name(op), a.loc);
}

}  // namespace

// The functions of arrayjit/array.hpp's lists: each is its op.
#define AJ_DEFINE_UNARY(function, op) \
  Array function(const Operand& a) { return unary(Op::op, a); }
#define AJ_DEFINE_BINARY(function, op) \
  Array function(const Operand& a, const Operand& b) { return binary(Op::op, a, b); }
AJ_UNARY_FUNCTIONS(AJ_DEFINE_UNARY)
AJ_BINARY_FUNCTIONS(AJ_DEFINE_BINARY)
#undef AJ_DEFINE_UNARY
#undef AJ_DEFINE_BINARY

Array true_divide(const Operand& a, const Operand& b) try {
  trace::Scope scope;
  const Operand* ops[] = {&a, &b};
  const Loc& loc = a.is_scalar ? b.loc : a.loc;
  check_any_array("true_divide", ops);
  DType t = result_dtype(ops);
  if (t == DType::bool_) {
    user_error("true_divide", "does not accept bool operands (" + describe_all(ops) + ")", loc);
  }
  Shape broadcast;
  const Shape& shape = check_shapes("true_divide", ops, is_float(t) ? t : DType::f64, loc, broadcast);  // named so, before any cast
  if (is_float(t)) return binary(Op::Div, a, b);
  const bool w = weak_result(ops);  // (weak integers divide as weak floats)
  Array x = weakened(as_array("true_divide", a, DType::f64, shape), w);
  Array y = weakened(as_array("true_divide", b, DType::f64, shape), w);
  return binary(Op::Div, Operand(x, loc), Operand(y, loc));
} catch (const std::bad_alloc&) {
  detail::out_of_memory("true_divide", a.is_scalar ? b.loc : a.loc);
}

Array floor_divide(const Operand& a, const Operand& b) {
  Array q = binary(Op::Div, a, b);
  if (is_float(q.dtype())) return floor(Operand(q, a.is_scalar ? b.loc : a.loc));
  return q;
}

Array operator+(const Operand& a, const Operand& b) { return add(a, b); }
Array operator-(const Operand& a, const Operand& b) { return subtract(a, b); }
Array operator*(const Operand& a, const Operand& b) { return multiply(a, b); }
Array operator/(const Operand& a, const Operand& b) { return divide(a, b); }
Array operator%(const Operand& a, const Operand& b) { return mod(a, b); }
Array operator-(const Operand& a) { return unary(Op::Neg, a); }
Array operator==(const Operand& a, const Operand& b) { return binary(Op::Eq, a, b); }
Array operator!=(const Operand& a, const Operand& b) { return binary(Op::Ne, a, b); }
Array operator<(const Operand& a, const Operand& b) { return binary(Op::Lt, a, b); }
Array operator<=(const Operand& a, const Operand& b) { return binary(Op::Le, a, b); }
Array operator>(const Operand& a, const Operand& b) { return binary(Op::Gt, a, b); }
Array operator>=(const Operand& a, const Operand& b) { return binary(Op::Ge, a, b); }
Array operator&&(const Operand& a, const Operand& b) { return binary(Op::And, a, b); }
Array operator||(const Operand& a, const Operand& b) { return binary(Op::Or, a, b); }
Array operator&(const Operand& a, const Operand& b) { return bitwise_and(a, b); }
Array operator|(const Operand& a, const Operand& b) { return bitwise_or(a, b); }
Array operator^(const Operand& a, const Operand& b) { return bitwise_xor(a, b); }
Array operator~(const Operand& a) { return bitwise_invert(a); }
Array operator<<(const Operand& a, const Operand& b) { return left_shift(a, b); }
Array operator>>(const Operand& a, const Operand& b) { return right_shift(a, b); }
Array operator!(const Operand& a) { return unary(Op::Not, a); }


Array where(const Operand& cond, const Operand& a, const Operand& b) try {
  trace::Scope scope;
  const Loc& loc = cond.loc;
  std::vector<const Operand*> all{&cond, &a, &b};
  check_any_array("where", all);
  bool cond_ok = cond.is_scalar ? cond.scalar.kind == Scalar::Kind::boolean
                                : cond.array->dtype() == DType::bool_;
  if (!cond_ok) {
    user_error("where", "condition must be bool, got " + describe(cond) +
                            " (compare first, e.g. x > 0)", loc);
  }
  std::vector<const Operand*> vals{&a, &b};
  DType t = result_dtype(vals);
  Shape broadcast;
  const Shape& shape = check_shapes("where", all, t, loc, broadcast);
  Input c("where", cond, DType::bool_, shape), x("where", a, t, shape), y("where", b, t, shape);
  return weakened(make_elementwise(Op::Where, t, shape, {&c, &x, &y}, loc), weak_result(all));
} catch (const std::bad_alloc&) {
  detail::out_of_memory("where", cond.loc);
}

Array clip(const Operand& x, const Operand& lo, const Operand& hi) {
  Array m = maximum(x, lo);
  return minimum(Operand(m, x.loc), hi);
}

// ---- functions composed of the ops above ---------------------------------------------------

Array trace::operand_array(const Operand& x, const char* op) {
  if (x.is_scalar) return full(Shape{}, x.scalar, default_dtype(x.scalar), x.loc);
  const Operand* ops[] = {&x};
  check_any_array(op, ops);
  return *x.array;
}

namespace {

// The largest finite value of a float dtype.
double largest_finite(DType t) {
  switch (t) {
    case DType::f16: return 65504.0;
    case DType::bf16: return 3.3895313892515355e38;
    case DType::f32: return 3.4028234663852886e38;
    default: return 1.7976931348623157e308;
  }
}

}  // namespace

Array isnan(const Operand& x) {
  const Array a = trace::operand_array(x, "isnan");
  if (!is_float(a.dtype())) return full_like(a, false, DType::bool_, x.loc);
  return binary(Op::Ne, Operand(a, x.loc), Operand(a, x.loc));
}

Array isinf(const Operand& x) {
  const Array a = trace::operand_array(x, "isinf");
  if (!is_float(a.dtype())) return full_like(a, false, DType::bool_, x.loc);
  return binary(Op::Eq, Operand(unary(Op::Abs, Operand(a, x.loc)), x.loc), Operand(INFINITY, x.loc));
}

Array isfinite(const Operand& x) {
  const Array a = trace::operand_array(x, "isfinite");
  if (!is_float(a.dtype())) return full_like(a, true, DType::bool_, x.loc);
  return binary(Op::Lt, Operand(unary(Op::Abs, Operand(a, x.loc)), x.loc), Operand(INFINITY, x.loc));
}

Array signbit(const Operand& x) {
  const Array a = trace::operand_array(x, "signbit");
  if (a.dtype() == DType::bool_) return full_like(a, false, DType::bool_, x.loc);
  if (!is_float(a.dtype())) return binary(Op::Lt, Operand(a, x.loc), Operand(0, x.loc));
  // copysign reads the sign bit itself: -0.0 and negative NaNs count.
  Array s = binary(Op::Copysign, Operand(1.0, x.loc), Operand(a, x.loc));
  return binary(Op::Lt, Operand(s, x.loc), Operand(0.0, x.loc));
}

Array nan_to_num(const Operand& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  const Array a = trace::operand_array(x, "nan_to_num");
  const DType t = a.dtype();
  if (!is_float(t)) return a;
  const Loc& loc = x.loc;
  const double big = largest_finite(t);
  Array r = where(Operand(binary(Op::Eq, Operand(a, loc), Operand(-INFINITY, loc)), loc),
                  Operand(neginf.value_or(-big), loc), Operand(a, loc));
  r = where(Operand(binary(Op::Eq, Operand(a, loc), Operand(INFINITY, loc)), loc), Operand(posinf.value_or(big), loc),
            Operand(r, loc));
  return where(Operand(isnan(Operand(a, loc)), loc), Operand(nan, loc), Operand(r, loc));
}

Array square(const Operand& x) {
  const Array a = trace::operand_array(x, "square");
  if (a.dtype() == DType::bool_) return a;  // NumPy: x and x
  return binary(Op::Mul, Operand(a, x.loc), Operand(a, x.loc));
}

Array reciprocal(const Operand& x) {
  const Array a = trace::operand_array(x, "reciprocal");
  const Loc& loc = x.loc;
  if (a.dtype() == DType::bool_) {
    user_error("reciprocal", "does not accept bool (" + describe(a) + "); use astype() to a number type first", loc);
  }
  if (is_float(a.dtype())) return binary(Op::Div, Operand(1.0, loc), Operand(a, loc));
  // C's truncating 1 / x: +-1 at +-1, 0 elsewhere (NumPy's 0 at x = 0 is undefined).
  Array one = binary(Op::Eq, Operand(unary(Op::Abs, Operand(a, loc)), loc), Operand(1, loc));
  return where(Operand(one, loc), Operand(a, loc), Operand(0, loc));
}

Array logical_xor(const Operand& a, const Operand& b) try {
  const Operand* ops[] = {&a, &b};
  check_any_array("logical_xor", ops);
  const Loc& loc = a.is_scalar ? b.loc : a.loc;
  for (auto* o : ops) {
    const bool ok = o->is_scalar ? o->scalar.kind == Scalar::Kind::boolean : o->array->dtype() == DType::bool_;
    if (!ok) {
      user_error("logical_xor", "needs bool operands, got " + describe_all(ops) +
                                    " (compare first, e.g. x != 0, or use astype(DType::bool_))",
                 loc);
    }
  }
  return binary(Op::Ne, a, b);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("logical_xor", a.is_scalar ? b.loc : a.loc);
}

}  // namespace aj
