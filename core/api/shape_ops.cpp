// Shape ops (views where possible), concatenation and matmul.
#include <algorithm>
#include <new>
#include <numeric>
#include <string>

#include "base/index_rules.hpp"
#include "core/api/observer.hpp"
#include "core/api/trace.hpp"

namespace aj {

namespace {

using trace::describe;

Array view_node(Op op, const Array& a, Shape shape, std::vector<std::int64_t> ints, const Loc& loc) {
  Node n;
  n.op = op;
  n.dtype = a.dtype();
  n.shape = std::move(shape);
  n.ints = std::move(ints);
  n.inputs = {a.node_id()};
  return trace::make(std::move(n), loc);
}

}  // namespace

Array reshape(const Array& a_in, Shape shape, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "reshape", loc);
  std::vector<std::int64_t> dims = shape.dims();
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer >= 0) user_error("reshape", "only one extent may be -1, got " + shape.str(), loc);
      infer = static_cast<int>(i);
    } else if (dims[i] < 0) {
      user_error("reshape", "negative extent in " + shape.str(), loc);
    } else if (__builtin_mul_overflow(known, dims[i], &known)) {
      user_error("reshape", "shape " + shape.str() + " has more elements than fit in int64", loc);
    }
  }
  if (infer >= 0) {
    if (known == 0 || a.size() % known != 0) {
      user_error("reshape", "cannot reshape " + describe(a) + " into " + shape.str() +
                                ": the -1 extent is not a whole number", loc);
    }
    dims[static_cast<std::size_t>(infer)] = a.size() / known;
  }
  Shape out(dims);
  trace::checked_numel(dims, "reshape", loc);
  if (out.numel() != a.size()) {
    user_error("reshape", "cannot reshape " + describe(a) + " (" + std::to_string(a.size()) +
                              " elements) into " + out.str() + " (" +
                              std::to_string(out.numel()) + " elements)", loc);
  }
  if (out == a.shape()) return a;
  return view_node(Op::Reshape, a, out, {}, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("reshape", loc);
}

Array transpose(const Array& a_in, std::vector<int> perm, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "transpose", loc);
  const int nd = a.ndim();
  if (perm.empty()) {
    perm.resize(static_cast<std::size_t>(nd));
    for (int i = 0; i < nd; ++i) perm[static_cast<std::size_t>(i)] = nd - 1 - i;
  }
  auto bad = [&] {
    std::string p = "(";
    for (std::size_t i = 0; i < perm.size(); ++i) p += (i ? ", " : "") + std::to_string(perm[i]);
    user_error("transpose", "axes " + p + ") are not a permutation of the axes of " + describe(a),
               loc);
  };
  if (static_cast<int>(perm.size()) != nd) bad();
  std::vector<bool> seen(static_cast<std::size_t>(nd), false);
  std::vector<std::int64_t> ints;
  std::vector<std::int64_t> dims;
  for (int p : perm) {
    if (p < -nd || p >= nd) bad();
    int q = p < 0 ? p + nd : p;
    if (seen[static_cast<std::size_t>(q)]) bad();
    seen[static_cast<std::size_t>(q)] = true;
    ints.push_back(q);
    dims.push_back(a.shape()[q]);
  }
  bool identity = true;
  for (int i = 0; i < nd; ++i) identity &= ints[static_cast<std::size_t>(i)] == i;
  if (identity) return a;
  return view_node(Op::Transpose, a, Shape(dims), ints, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("transpose", loc);
}

Array permute_dims(const Array& a, std::vector<int> axes, Loc loc) {
  if (static_cast<int>(axes.size()) != a.ndim(loc)) {
    user_error("permute_dims", "needs one axis per axis of " + describe(a) +
                                   ", got " + std::to_string(axes.size()),
               loc);
  }
  return transpose(a, std::move(axes), loc);
}

Array matrix_transpose(const Array& a, Loc loc) {
  const int nd = a.ndim(loc);
  if (nd < 2) {
    user_error("matrix_transpose", "needs at least 2 axes, got " + describe(a),
               loc);
  }
  std::vector<int> perm(static_cast<std::size_t>(nd));
  for (int i = 0; i < nd; ++i) perm[static_cast<std::size_t>(i)] = i;
  std::swap(perm[static_cast<std::size_t>(nd - 2)], perm[static_cast<std::size_t>(nd - 1)]);
  return transpose(a, std::move(perm), loc);
}

Array broadcast_to(const Array& a_in, Shape shape, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "broadcast_to", loc);
  trace::check_array_size(shape, a.dtype(), "broadcast_to", loc);
  const Shape& s = a.shape();
  bool ok = s.ndim() <= shape.ndim();
  for (int i = 0; ok && i < s.ndim(); ++i) {
    std::int64_t from = s[i], to = shape[shape.ndim() - s.ndim() + i];
    ok = from == to || from == 1;
  }
  if (!ok) {
    user_error("broadcast_to", "cannot broadcast " + describe(a) + " to " + shape.str(), loc);
  }
  return trace::broadcast(a, shape, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("broadcast_to", loc);
}

Array expand_dims(const Array& a_in, int axis, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "expand_dims", loc);
  const int nd = a.ndim() + 1;
  int ax = trace::normalize_axis(axis, nd, "expand_dims", a.shape(), a.dtype(), loc);
  std::vector<std::int64_t> dims = a.shape().dims();
  dims.insert(dims.begin() + ax, 1);
  return reshape(a, Shape(dims), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("expand_dims", loc);
}

Array squeeze(const Array& a_in, Axes axes, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "squeeze", loc);
  const Shape& s = a.shape();
  std::vector<bool> drop(static_cast<std::size_t>(s.ndim()), false);
  if (axes.is_all()) {
    for (int i = 0; i < s.ndim(); ++i) drop[static_cast<std::size_t>(i)] = s[i] == 1;
  } else {
    for (int ax : axes.list()) {
      int q = trace::normalize_axis(ax, s.ndim(), "squeeze", s, a.dtype(), loc);
      if (drop[static_cast<std::size_t>(q)]) {
        user_error("squeeze", "repeated axis " + std::to_string(ax) + " for " + describe(a), loc);
      }
      if (s[q] != 1) {
        user_error("squeeze", "axis " + std::to_string(ax) + " of " + describe(a) +
                                  " has extent " + std::to_string(s[q]) + ", not 1", loc);
      }
      drop[static_cast<std::size_t>(q)] = true;
    }
  }
  std::vector<std::int64_t> dims;
  for (int i = 0; i < s.ndim(); ++i) {
    if (!drop[static_cast<std::size_t>(i)]) dims.push_back(s[i]);
  }
  return reshape(a, Shape(dims), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("squeeze", loc);
}

Array slice(const Array& a_in, std::vector<Slice> slices, Loc loc) try {
  trace::Scope scope;
  const Array& a = trace::local(a_in, "slice", loc);
  const Shape& s = a.shape();
  if (static_cast<int>(slices.size()) > s.ndim()) {
    user_error("slice", std::to_string(slices.size()) + " slices given for " + describe(a), loc);
  }
  std::vector<std::int64_t> dims, ints;
  bool identity = true;
  for (int ax = 0; ax < s.ndim(); ++ax) {
    const std::int64_t n = s[ax];
    Slice sl = ax < static_cast<int>(slices.size()) ? slices[static_cast<std::size_t>(ax)] : Slice{};
    if (sl.step == 0) user_error("slice", "step 0 on axis " + std::to_string(ax), loc);
    auto range_error = [&](const char* what, std::int64_t v) {
      user_error("slice", std::string(what) + " " + std::to_string(v) + " is out of range for axis " +
                              std::to_string(ax) + " of " + describe(a) + " (extent " +
                              std::to_string(n) + ")", loc);
    };
    const idx::SliceAxis r = idx::slice_axis(sl.start, sl.stop, sl.step, n);
    if (r.error) range_error(r.error, r.bad);
    const std::int64_t start = r.start, len = r.len, step = r.step;
    dims.push_back(len);
    ints.push_back(start);
    ints.push_back(step);
    identity &= start == 0 && step == 1 && len == n;
  }
  if (identity) return a;
  Array v = view_node(Op::Slice, a, Shape(dims), ints, loc);
  // Under aj::compile, a bound given from the end (omitted or negative)
  // makes the slice's extent follow its input's: the slices as given.
  if (trace::observed()) trace::report_slice(v.node_id(), slices);
  return v;
} catch (const std::bad_alloc&) {
  detail::out_of_memory("slice", loc);
}

Array slice(const Array& a, int axis, std::optional<std::int64_t> start,
            std::optional<std::int64_t> stop, std::int64_t step, Loc loc) try {
  // The other slice() makes the node. (The node's shape, not a.shape(): a
  // read of the user's that aj::compile would count.)
  const Node& n = trace::own_node(a, "slice", loc);
  int ax = trace::normalize_axis(axis, n.shape.ndim(), "slice", n.shape, n.dtype, loc);
  std::vector<Slice> slices(static_cast<std::size_t>(ax + 1));
  slices[static_cast<std::size_t>(ax)] = Slice(start, stop, step);
  return slice(a, std::move(slices), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("slice", loc);
}

Array concatenate(const std::vector<Array>& arrays_in, int axis, Loc loc) try {
  trace::Scope scope;
  if (arrays_in.empty()) user_error("concatenate", "needs at least one array", loc);
  std::vector<Array> arrays;  // local handles (arrays of other threads imported)
  arrays.reserve(arrays_in.size());
  for (auto& a : arrays_in) arrays.push_back(trace::local(a, "concatenate", loc));
  const Array& first = arrays[0];
  if (first.ndim() == 0) {
    user_error("concatenate", "cannot concatenate rank-0 arrays (use stack)", loc);
  }
  int ax = trace::normalize_axis(axis, first.ndim(), "concatenate", first.shape(), first.dtype(), loc);
  DType t = first.dtype();
  std::vector<std::int64_t> dims = first.shape().dims();
  dims[static_cast<std::size_t>(ax)] = 0;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const Array& a = arrays[k];
    bool ok = a.ndim() == first.ndim();
    for (int i = 0; ok && i < a.ndim(); ++i) ok = i == ax || a.shape()[i] == first.shape()[i];
    if (!ok) {
      user_error("concatenate", "array " + std::to_string(k) + " is " + describe(a) +
                                    " but array 0 is " + describe(first) +
                                    "; all extents but axis " + std::to_string(ax) + " must match",
                 loc);
    }
    t = promote_types(t, a.dtype());
    if (__builtin_add_overflow(dims[static_cast<std::size_t>(ax)], a.shape()[ax],
                               &dims[static_cast<std::size_t>(ax)])) {
      user_error("concatenate", "result extent overflows int64", loc);
    }
  }
  trace::check_array_size(Shape(dims), t, "concatenate", loc);
  if (arrays.size() == 1) return first;
  std::vector<Array> ins;
  Node n;
  n.op = Op::Concat;
  n.dtype = t;
  n.shape = Shape(dims);
  n.i0 = ax;
  for (auto& a : arrays) {
    ins.push_back(trace::cast(a, t, loc));
    n.inputs.push_back(ins.back().node_id());
  }
  return trace::make(std::move(n), loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("concatenate", loc);
}

Array stack(const std::vector<Array>& arrays_in, int axis, Loc loc) try {
  trace::Scope scope;
  if (arrays_in.empty()) user_error("stack", "needs at least one array", loc);
  std::vector<Array> arrays;  // local handles (arrays of other threads imported)
  arrays.reserve(arrays_in.size());
  for (auto& a : arrays_in) arrays.push_back(trace::local(a, "stack", loc));
  for (std::size_t k = 1; k < arrays.size(); ++k) {
    if (arrays[k].shape() != arrays[0].shape()) {
      user_error("stack", "array " + std::to_string(k) + " is " + describe(arrays[k]) +
                              " but array 0 is " + describe(arrays[0]) + "; shapes must be equal",
                 loc);
    }
  }
  int ax = trace::normalize_axis(axis, arrays[0].ndim() + 1, "stack", arrays[0].shape(),
                                 arrays[0].dtype(), loc);
  std::vector<Array> expanded;
  for (auto& a : arrays) expanded.push_back(expand_dims(a, ax, loc));
  return concatenate(expanded, ax, loc);
} catch (const std::bad_alloc&) {
  detail::out_of_memory("stack", loc);
}

Array matmul(const Array& a_user, const Array& b_user, Loc loc) try {
  trace::Scope scope;
  const Array& a_in = trace::local(a_user, "matmul", loc);
  const Array& b_in = trace::local(b_user, "matmul", loc);
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    user_error("matmul", "operands must have rank >= 1, got " + describe(a_in) + " and " +
                             describe(b_in), loc);
  }
  DType t = promote_types(a_in.dtype(), b_in.dtype());
  if (t == DType::bool_) {
    user_error("matmul", "does not accept bool operands (" + describe(a_in) + ", " +
                             describe(b_in) + ")", loc);
  }
  const bool a_vec = a_in.ndim() == 1, b_vec = b_in.ndim() == 1;
  Array a = a_vec ? reshape(a_in, Shape{1, a_in.shape()[0]}, loc) : a_in;
  Array b = b_vec ? reshape(b_in, Shape{b_in.shape()[0], 1}, loc) : b_in;
  const std::int64_t n = a.shape()[a.ndim() - 2], k = a.shape()[a.ndim() - 1];
  const std::int64_t k2 = b.shape()[b.ndim() - 2], m = b.shape()[b.ndim() - 1];
  if (k != k2) {
    user_error("matmul", "inner extents differ: " + describe(a_in) + " @ " + describe(b_in) +
                             " (" + std::to_string(k) + " vs " + std::to_string(k2) + ")", loc);
  }
  std::vector<std::int64_t> ab(a.shape().begin(), a.shape().end() - 2);
  std::vector<std::int64_t> bb(b.shape().begin(), b.shape().end() - 2);
  Shape as(ab), bs(bb);
  // Batch axes broadcast as NumPy; the message names both whole operands.
  std::vector<std::int64_t> bd(std::max(ab.size(), bb.size()), 1);
  for (std::size_t i = 0; i < bd.size(); ++i) {
    const std::int64_t x = i < ab.size() ? ab[ab.size() - 1 - i] : 1;
    const std::int64_t y = i < bb.size() ? bb[bb.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) {
      user_error("matmul", "batch extents of " + describe(a_in) + " and " + describe(b_in) +
                               " cannot be broadcast together (" + as.str() + " vs " + bs.str() + ")",
                 loc);
    }
    bd[bd.size() - 1 - i] = x == 1 ? y : x;
  }
  Shape batch(bd);
  auto with = [&](std::int64_t r, std::int64_t c) {
    std::vector<std::int64_t> d = batch.dims();
    d.push_back(r);
    d.push_back(c);
    return Shape(d);
  };
  // The broadcast operands and the result, checked under matmul's name
  // before any of them is made.
  const Shape out = with(n, m), a_shape = with(n, k), b_shape = with(k, m);
  for (const Shape* s : {&a_shape, &b_shape, &out}) trace::check_array_size(*s, t, "matmul", loc);
  Array ac = trace::broadcast(trace::cast(a, t, loc), a_shape, loc);
  Array bc = trace::broadcast(trace::cast(b, t, loc), b_shape, loc);
  Node node;
  node.op = Op::MatMul;
  node.dtype = t;
  node.shape = out;
  node.inputs = {ac.node_id(), bc.node_id()};
  Array r = trace::make(std::move(node), loc);
  if (a_vec || b_vec) {
    std::vector<std::int64_t> d = batch.dims();
    if (!a_vec) d.push_back(n);
    if (!b_vec) d.push_back(m);
    r = reshape(r, Shape(d), loc);
  }
  return r;
} catch (const std::bad_alloc&) {
  detail::out_of_memory("matmul", loc);
}

}  // namespace aj
