#include "backends/reference/interpreter.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/host_comm.hpp"
#include "backends/cpu/host_memory.hpp"
#include "base/index_rules.hpp"
#include "base/semantics.hpp"
#include "graph/host_call.hpp"
#include "graph/library.hpp"
#include "graph/strided_walk.hpp"
#include "base/stats.hpp"

namespace aj::ref {

using namespace aj::sem;  // the scalar semantics

namespace {

// A strided view of an evaluated node.
struct View {
  char* base;
  std::vector<std::int64_t> strides;
  std::int64_t offset;
  DType dtype;
  template <class T> T* ptr() const { return reinterpret_cast<T*>(base); }
};

View view_of(const Node& n) {
  return {static_cast<char*>(n.storage->data), n.strides, n.offset, n.dtype};
}

std::shared_ptr<Storage> alloc_for(const Node& n) {
  return cpu::host_alloc(static_cast<std::size_t>(n.numel()) * itemsize(n.dtype));
}

void finish(NodeId id, std::shared_ptr<Storage> s) {
  Node& n = graph()[id];
  auto strides = contiguous_strides(n.shape);
  graph().set_result(id, std::move(s), std::move(strides), 0);
}

// Copy a strided view into a new contiguous buffer (of the view's own dtype).
std::shared_ptr<Storage> materialize(const Node& in) {
  auto s = cpu::host_alloc(static_cast<std::size_t>(in.numel()) * itemsize(in.dtype));
  visit_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    View v = view_of(in);
    T* out = static_cast<T*>(s->data);
    StridedWalk w(in.shape, {&v.strides}, {v.offset});
    for (std::int64_t k = 0; k < in.numel(); ++k, w.next()) out[k] = v.ptr<T>()[w.offset(0)];
  });
  return s;
}

void run_constant(NodeId id) {
  Node& n = graph()[id];
  // One value of any shape (graph/graph.hpp): one element, every stride 0,
  // as a broadcast of it would be.
  auto s = cpu::host_alloc(itemsize(n.dtype));
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    *static_cast<T*>(s->data) = is_float(n.dtype) ? static_cast<T>(n.f0) : static_cast<T>(n.i0);
  });
  graph().set_result(id, std::move(s), std::vector<std::int64_t>(static_cast<std::size_t>(n.shape.ndim()), 0), 0);
}

void run_generator(NodeId id) {
  Node& n = graph()[id];
  auto s = alloc_for(n);
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(s->data);
    const std::int64_t total = n.numel();
    const std::int64_t extra = n.op == Op::Eye ? n.shape[1] : total;
    for (std::int64_t i = 0; i < total; ++i) out[i] = generate_value<T>(n.op, n.f0, n.f1, n.i0, extra, i);
  });
  finish(id, std::move(s));
}

void run_elementwise(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  auto s = alloc_for(n);
  std::vector<View> in;
  std::vector<const std::vector<std::int64_t>*> strides;
  std::vector<std::int64_t> offsets;
  for (NodeId i : n.inputs) in.push_back(view_of(g[i]));
  for (auto& v : in) {
    strides.push_back(&v.strides);
    offsets.push_back(v.offset);
  }
  const std::int64_t total = n.numel();
  StridedWalk w(n.shape, strides, offsets);
  const Op op = n.op;
  const DType in_t = in.empty() ? n.dtype : in.back().dtype;  // Where: the values' dtype
  visit_dtype(in_t, [&](auto tag_in) {
    using I = decltype(tag_in);
    visit_dtype(n.dtype, [&](auto tag_out) {
      using O = decltype(tag_out);
      O* out = static_cast<O*>(s->data);
      for (std::int64_t k = 0; k < total; ++k, w.next()) {
        auto x = [&](std::size_t j) { return in[j].ptr<I>()[w.offset(j)]; };
        if (op == Op::Cast) {
          out[k] = convert<O>(x(0));
        } else if (op == Op::Where) {
          bool c = in[0].ptr<bool>()[w.offset(0)];
          out[k] = convert<O>(c ? x(1) : x(2));
        } else if (is_compare(op)) {
          out[k] = static_cast<O>(compare(op, x(0), x(1)));
        } else if (op_category(op) == OpCategory::Binary) {
          out[k] = convert<O>(binary(op, x(0), x(1)));
        } else {
          out[k] = convert<O>(unary(op, x(0)));
        }
      }
    });
  });
  finish(id, std::move(s));
}

void run_reduce(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& src = g[n.inputs[0]];
  auto s = alloc_for(n);
  View v = view_of(src);
  // Output offsets as the input is walked: contiguous output strides, 0 on reduced axes.
  std::vector<std::int64_t> out_strides(static_cast<std::size_t>(src.shape.ndim()), 0);
  {
    auto cs = contiguous_strides(n.shape);
    std::size_t j = 0;
    for (int d = 0; d < src.shape.ndim(); ++d) {
      bool reduced = std::find(n.ints.begin(), n.ints.end(), d) != n.ints.end();
      if (!reduced) out_strides[static_cast<std::size_t>(d)] = cs[j++];
    }
  }
  const Op op = n.op;
  const std::int64_t total_in = src.numel(), total_out = n.numel();
  visit_dtype(src.dtype, [&](auto tag) {
    using T = decltype(tag);
    StridedWalk w(src.shape, {&v.strides, &out_strides}, {v.offset, 0});
    if (op == Op::ArgMax || op == Op::ArgMin) {
      auto* out = static_cast<std::int64_t*>(s->data);
      // (std::vector<bool> has no T&: keep the best values in a plain array)
      std::unique_ptr<T[]> best(new T[static_cast<std::size_t>(total_out)]());
      std::vector<bool> seen(static_cast<std::size_t>(total_out), false);
      const auto axis = static_cast<std::size_t>(n.ints[0]);
      for (std::int64_t k = 0; k < total_in; ++k, w.next()) {
        T x = v.ptr<T>()[w.offset(0)];
        auto o = static_cast<std::size_t>(w.offset(1));
        if (!seen[o] || arg_better(op, x, best[o])) {
          best[o] = x;
          out[o] = w.index()[axis];
          seen[o] = true;
        }
      }
    } else if constexpr (std::is_same_v<acc_t<T>, T>) {
      T* out = static_cast<T*>(s->data);
      for (std::int64_t o = 0; o < total_out; ++o) out[o] = reduce_identity<T>(op);
      for (std::int64_t k = 0; k < total_in; ++k, w.next()) {
        T& acc = out[w.offset(1)];
        acc = reduce_combine(op, acc, v.ptr<T>()[w.offset(0)]);
      }
    } else {
      // Halves: accumulate in acc_t<T> (f32), round once at the end.
      using A = acc_t<T>;
      std::vector<A> acc(static_cast<std::size_t>(total_out), reduce_identity<A>(op));
      for (std::int64_t k = 0; k < total_in; ++k, w.next()) {
        A& a = acc[static_cast<std::size_t>(w.offset(1))];
        a = reduce_combine(op, a, convert<A>(v.ptr<T>()[w.offset(0)]));
      }
      T* out = static_cast<T*>(s->data);
      for (std::int64_t o = 0; o < total_out; ++o) out[o] = convert<T>(acc[static_cast<std::size_t>(o)]);
    }
  });
  finish(id, std::move(s));
}

// A running reduction along one axis: each element combines the one before
// it along the axis (sem::scan_identity before the first).
void run_scan(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& src = g[n.inputs[0]];
  auto s = alloc_for(n);
  View v = view_of(src);
  const auto axis = static_cast<std::size_t>(n.ints[0]);
  const auto out_strides = contiguous_strides(n.shape);
  const Op combiner = scan_combiner(n.op);
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;  // the running value: f32 for halves, each output rounded once
    T* out = static_cast<T*>(s->data);
    std::vector<A> running(static_cast<std::size_t>(n.numel()));
    StridedWalk w(src.shape, {&v.strides, &out_strides}, {v.offset, 0});
    for (std::int64_t k = 0; k < src.numel(); ++k, w.next()) {
      const std::int64_t o = w.offset(1);
      const A before = w.index()[axis] == 0 ? scan_identity<A>(combiner)
                                            : running[static_cast<std::size_t>(o - out_strides[axis])];
      const A now = scan_combine(combiner, before, convert<A>(v.ptr<T>()[w.offset(0)]));
      running[static_cast<std::size_t>(o)] = now;
      out[o] = convert<T>(now);
    }
  });
  finish(id, std::move(s));
}

// Sort, argsort, topk: each line along the axis, by std::stable_sort with
// the order of docs/semantics.md written out plainly (NaN after every
// number, -0.0 equal to +0.0; topk: descending, NaN first, ties by index).
void run_sort(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& src = g[n.inputs[0]];
  auto s = alloc_for(n);
  View v = view_of(src);
  const int axis = static_cast<int>(n.i0);
  const bool top = n.op == Op::TopK || n.op == Op::ArgTopK;
  const bool indices = n.op == Op::ArgSort || n.op == Op::ArgTopK;
  const std::int64_t len = src.shape[axis], keep = n.shape[axis];
  // Lines: the input's shape with the axis taken out (extent 1).
  std::vector<std::int64_t> lines_dims = src.shape.dims();
  lines_dims[static_cast<std::size_t>(axis)] = 1;
  const Shape lines(lines_dims);
  const auto out_strides = contiguous_strides(n.shape);
  visit_dtype(src.dtype, [&](auto tag) {
    using T = decltype(tag);
    auto less = [](T a, T b) {
      if constexpr (is_half_type<T>) {
        return sem::compare(Op::Lt, a, b) || (!math::isnan(static_cast<float>(a)) && math::isnan(static_cast<float>(b)));
      } else {
        if constexpr (is_fp<T>) {
          if (std::isnan(a)) return false;
          if (std::isnan(b)) return true;
        }
        return a < b;
      }
    };
    StridedWalk w(lines, {&v.strides, &out_strides}, {v.offset, 0});
    std::vector<std::int64_t> order(static_cast<std::size_t>(len));
    for (std::int64_t line = 0; line < lines.numel(); ++line, w.next()) {
      const T* x = v.ptr<T>() + w.offset(0);
      const std::int64_t xs = v.strides[static_cast<std::size_t>(axis)];
      for (std::int64_t i = 0; i < len; ++i) order[static_cast<std::size_t>(i)] = i;
      std::stable_sort(order.begin(), order.end(), [&](std::int64_t i, std::int64_t j) {
        return top ? less(x[j * xs], x[i * xs]) : less(x[i * xs], x[j * xs]);
      });
      for (std::int64_t i = 0; i < keep; ++i) {
        const std::int64_t at = w.offset(1) + i * out_strides[static_cast<std::size_t>(axis)];
        const std::int64_t from = order[static_cast<std::size_t>(i)];
        if (indices) static_cast<std::int64_t*>(s->data)[at] = from;
        else static_cast<T*>(s->data)[at] = x[from * xs];
      }
    }
  });
  finish(id, std::move(s));
}

void run_view(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& src = g[n.inputs[0]];
  std::shared_ptr<Storage> storage = src.storage;
  std::vector<std::int64_t> st;
  std::int64_t off = src.offset;
  switch (n.op) {
    case Op::Reshape:
      if (!is_contiguous(src.shape, src.strides)) {
        storage = materialize(src);
        off = 0;
      }
      st = contiguous_strides(n.shape);
      break;
    case Op::Transpose:
      for (auto p : n.ints) st.push_back(src.strides[static_cast<std::size_t>(p)]);
      break;
    case Op::Broadcast: {
      const int lead = n.shape.ndim() - src.shape.ndim();
      for (int d = 0; d < n.shape.ndim(); ++d) {
        int sd = d - lead;
        st.push_back(sd < 0 || src.shape[sd] == 1 ? 0 : src.strides[static_cast<std::size_t>(sd)]);
      }
      break;
    }
    case Op::Slice:
      for (int d = 0; d < n.shape.ndim(); ++d) {
        auto du = static_cast<std::size_t>(d);
        std::int64_t start = n.ints[2 * du], step = n.ints[2 * du + 1];
        off += start * src.strides[du];
        st.push_back(src.strides[du] * step);
      }
      break;
    AJ_CASES_OUTSIDE(View) internal_error(std::string("run_view: ") + op_name(n.op));
  }
  graph().set_result(id, std::move(storage), std::move(st), off);
}

void run_concat(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  auto s = alloc_for(n);
  const auto axis = static_cast<std::size_t>(n.i0);
  auto out_strides = contiguous_strides(n.shape);
  std::int64_t base = 0;  // offset of the current piece along the axis
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(s->data);
    for (NodeId i : n.inputs) {
      const Node& in = g[i];
      View v = view_of(in);
      StridedWalk w(in.shape, {&v.strides, &out_strides}, {v.offset, base * out_strides[axis]});
      for (std::int64_t k = 0; k < in.numel(); ++k, w.next()) out[w.offset(1)] = v.ptr<T>()[w.offset(0)];
      base += in.shape[static_cast<int>(axis)];
    }
  });
  finish(id, std::move(s));
}

// Conv's index arithmetic: the spatial multi-index of flat point q of a
// shape's spatial axes, and the input element output point p's tap t reads.
struct ConvIndex {
  const ConvGeometry& geo;
  const Shape& x;
  int d;
  void unflat(std::int64_t q, const Shape& s, std::vector<std::int64_t>& idx) const {
    for (int a = d; a-- > 0;) {
      idx[static_cast<std::size_t>(a)] = q % s[a + 2];
      q /= s[a + 2];
    }
  }
  // False where the tap falls outside x (its padding); else *at is the
  // offset among x's spatial points.
  bool input_at(const std::vector<std::int64_t>& p, const std::vector<std::int64_t>& t, std::int64_t* at) const {
    bool inside = true;
    for (int a = 0; a < d; ++a) {
      const auto u = static_cast<std::size_t>(a);
      const std::int64_t e = p[u] * geo.stride[u] + t[u] * geo.dilation[u] - geo.lo[u];
      inside = inside && e >= 0 && e < x[a + 2];
      *at = *at * x[a + 2] + e;
    }
    return inside;
  }
};

// Conv's weight gradient: graph/library.hpp's definition in loops, summed in
// the dtype over (image, point) in row-major order.
void run_conv_weight_grad(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& x = g[n.inputs[0]];
  const Node& gy = g[n.inputs[1]];
  ConvGeometry geo;
  if (!geo.unpack(n.ints)) internal_error("reference conv: a malformed geometry");
  const int d = static_cast<int>(geo.dims());
  auto xs = materialize(x), gs = materialize(gy);
  auto s = alloc_for(n);
  const std::int64_t N = x.shape[0], C = x.shape[1], O = n.shape[0], I = n.shape[1], og = O / n.i0;
  std::int64_t in_pts = 1, taps = 1, out_pts = 1;
  for (int a = 2; a < d + 2; ++a) {
    in_pts *= x.shape[a];
    taps *= n.shape[a];
    out_pts *= gy.shape[a];
  }
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* X = static_cast<const T*>(xs->data);
      const T* G = static_cast<const T*>(gs->data);
      T* W = static_cast<T*>(s->data);
      std::vector<std::int64_t> p(static_cast<std::size_t>(d)), t(static_cast<std::size_t>(d));
      const ConvIndex ix{geo, x.shape, d};
      for (std::int64_t o = 0; o < O; ++o) {
        const std::int64_t c0 = (o / og) * I;
        for (std::int64_t c = 0; c < I; ++c) {
          for (std::int64_t k = 0; k < taps; ++k) {
            ix.unflat(k, n.shape, t);
            T acc = 0;
            for (std::int64_t b = 0; b < N; ++b) {
              for (std::int64_t q = 0; q < out_pts; ++q) {
                ix.unflat(q, gy.shape, p);
                std::int64_t at = 0;
                if (ix.input_at(p, t, &at)) acc += G[(b * O + o) * out_pts + q] * X[(b * C + c0 + c) * in_pts + at];
              }
            }
            W[(o * I + c) * taps + k] = acc;
          }
        }
      }
    } else {
      internal_error("reference conv: not a f32/f64 node");
    }
  });
  finish(id, std::move(s));
}

// Conv: graph/library.hpp's definition in loops, summed in the dtype over
// (input feature, tap) in row-major order.
void run_conv(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  if (n.i1 == kConvWeightGrad) return run_conv_weight_grad(id);
  const Node& x = g[n.inputs[0]];
  const Node& w = g[n.inputs[1]];
  ConvGeometry geo;
  if (!geo.unpack(n.ints)) internal_error("reference conv: a malformed geometry");
  const int d = static_cast<int>(geo.dims());
  auto xs = materialize(x), ws = materialize(w);
  auto s = alloc_for(n);
  const std::int64_t N = x.shape[0], C = x.shape[1], O = w.shape[0], I = w.shape[1], groups = n.i0, og = O / groups;
  std::int64_t in_pts = 1, taps = 1, out_pts = 1;
  for (int a = 2; a < d + 2; ++a) {
    in_pts *= x.shape[a];
    taps *= w.shape[a];
    out_pts *= n.shape[a];
  }
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* X = static_cast<const T*>(xs->data);
      const T* W = static_cast<const T*>(ws->data);
      T* Y = static_cast<T*>(s->data);
      std::vector<std::int64_t> p(static_cast<std::size_t>(d)), t(static_cast<std::size_t>(d));
      const ConvIndex ix{geo, x.shape, d};
      for (std::int64_t b = 0; b < N; ++b) {
        for (std::int64_t o = 0; o < O; ++o) {
          const std::int64_t c0 = (o / og) * I;
          for (std::int64_t q = 0; q < out_pts; ++q) {
            ix.unflat(q, n.shape, p);
            T acc = 0;
            for (std::int64_t c = 0; c < I; ++c) {
              for (std::int64_t k = 0; k < taps; ++k) {
                ix.unflat(k, w.shape, t);
                std::int64_t at = 0;
                if (ix.input_at(p, t, &at)) acc += W[(o * I + c) * taps + k] * X[(b * C + c0 + c) * in_pts + at];
              }
            }
            Y[(b * O + o) * out_pts + q] = acc;
          }
        }
      }
    } else {
      internal_error("reference conv: not a f32/f64 node");
    }
  });
  finish(id, std::move(s));
}

void run_matmul(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& a = g[n.inputs[0]];
  const Node& b = g[n.inputs[1]];
  const int nd = n.shape.ndim();
  const std::int64_t rows = a.shape[nd - 2], inner = a.shape[nd - 1], cols = b.shape[nd - 1];
  auto as = materialize(a), bs = materialize(b);
  auto s = alloc_for(n);
  const std::int64_t batches = rows * cols == 0 ? 0 : n.numel() / (rows * cols);
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* A = static_cast<const T*>(as->data);
    const T* B = static_cast<const T*>(bs->data);
    T* C = static_cast<T*>(s->data);
    for (std::int64_t bi = 0; bi < batches; ++bi) {
      const T* Ab = A + bi * rows * inner;
      const T* Bb = B + bi * inner * cols;
      T* Cb = C + bi * rows * cols;
      if constexpr (is_half_type<T>) {
        // Products and sums in f32 in k order, one rounding at the end.
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t c = 0; c < cols; ++c) {
            float acc = 0;
            for (std::int64_t k = 0; k < inner; ++k) {
              acc += static_cast<float>(Ab[r * inner + k]) * static_cast<float>(Bb[k * cols + c]);
            }
            Cb[r * cols + c] = T(acc);
          }
        }
      } else if constexpr (std::is_floating_point_v<T>) {
        using M = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        Eigen::Map<const M> ma(Ab, rows, inner);
        Eigen::Map<const M> mb(Bb, inner, cols);
        Eigen::Map<M> mc(Cb, rows, cols);
        mc.noalias() = ma * mb;
      } else {
        // Integers: wrapping arithmetic, no undefined behaviour on overflow.
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t c = 0; c < cols; ++c) {
            T acc = 0;
            for (std::int64_t k = 0; k < inner; ++k) {
              acc = binary(Op::Add, acc, binary(Op::Mul, Ab[r * inner + k], Bb[k * cols + c]));
            }
            Cb[r * cols + c] = acc;
          }
        }
      }
    }
  });
  finish(id, std::move(s));
}

// out[p] = a[p with p[axis] := the clamped index idx[p]].
void run_gather(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& a = g[n.inputs[0]];
  const Node& ix = g[n.inputs[1]];
  auto s = alloc_for(n);
  const auto axis = static_cast<std::size_t>(n.i0);
  const std::int64_t extent = a.shape[static_cast<int>(axis)];
  // Walk the result with a's strides off the axis (0 on it) and idx's.
  std::vector<std::int64_t> as = a.strides;
  as[axis] = 0;
  StridedWalk w(n.shape, {&as, &ix.strides}, {a.offset, ix.offset});
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(s->data);
    const T* src = static_cast<const T*>(a.storage->data);
    for (std::int64_t k = 0; k < n.numel(); ++k, w.next()) {
      const std::int64_t i = ix.dtype == DType::i32 ? static_cast<const std::int32_t*>(ix.storage->data)[w.offset(1)]
                                                     : static_cast<const std::int64_t*>(ix.storage->data)[w.offset(1)];
      out[k] = src[w.offset(0) + idx::gather(i, extent) * a.strides[axis]];
    }
  });
  finish(id, std::move(s));
}

// out[start + step * i] = x[i] per axis, fill (of out's shape) elsewhere.
void run_pad(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& x = g[n.inputs[0]];
  auto s = materialize(g[n.inputs[1]]);
  const auto out_strides = contiguous_strides(n.shape);
  std::vector<std::int64_t> placed(out_strides.size());
  std::int64_t base = 0;
  for (std::size_t d = 0; d < placed.size(); ++d) {
    base += n.ints[2 * d] * out_strides[d];
    placed[d] = n.ints[2 * d + 1] * out_strides[d];
  }
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(s->data);
    const T* src = static_cast<const T*>(x.storage->data);
    StridedWalk w(x.shape, {&x.strides, &placed}, {x.offset, base});
    for (std::int64_t k = 0; k < x.numel(); ++k, w.next()) out[w.offset(1)] = src[w.offset(0)];
  });
  finish(id, std::move(s));
}

// out = a; then over the updates in row-major order, out[p with p[axis] :=
// idx[p]] (+)= upd[p], dropping out-of-range indices (bool adds are or).
void run_scatter(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& ix = g[n.inputs[1]];
  const Node& up = g[n.inputs[2]];
  auto s = materialize(g[n.inputs[0]]);
  const auto axis = static_cast<std::size_t>(n.i0);
  const std::int64_t extent = n.shape[static_cast<int>(axis)];
  std::vector<std::int64_t> os = contiguous_strides(n.shape);
  const std::int64_t axis_stride = os[axis];
  os[axis] = 0;
  StridedWalk w(up.shape, {&os, &ix.strides, &up.strides}, {0, ix.offset, up.offset});
  const bool add = n.op == Op::ScatterAdd;
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(s->data);
    const T* u = static_cast<const T*>(up.storage->data);
    for (std::int64_t k = 0; k < up.numel(); ++k, w.next()) {
      const std::int64_t i = ix.dtype == DType::i32 ? static_cast<const std::int32_t*>(ix.storage->data)[w.offset(1)]
                                                     : static_cast<const std::int64_t*>(ix.storage->data)[w.offset(1)];
      const std::int64_t at = idx::scatter(i, extent);
      if (at < 0) continue;
      T& o = out[w.offset(0) + at * axis_stride];
      const T v = u[w.offset(2)];
      if (!add) o = v;
      else if constexpr (std::is_same_v<T, bool>) o = o || v;
      else o = binary(Op::Add, o, v);
    }
  });
  finish(id, std::move(s));
}

}  // namespace

namespace {

// The decompositions Eigen computes (QR, SVD, eigh), in f64 for both
// dtypes: an f32 node's factors are f64's rounded once, a reference at
// least as accurate as LAPACK's f32 routines that the tests bound by f32's
// epsilon, and Eigen's decompositions are instantiated once (they were a
// third of this file's compile time per dtype). Writes `out` as
// linalg_matrix's put() does, through `put(matrix, first row)` and
// `value(index, v)`.
using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;
void eigen_decomposition(const Node& n, const MatrixD& A, const std::function<void(const MatrixD&, std::int64_t)>& put,
                         const std::function<void(std::int64_t, double)>& value) {
  using namespace linalg_flag;
  using M = MatrixD;
  const std::int64_t m = A.rows(), k = std::min(A.rows(), A.cols());
  switch (static_cast<LinalgKind>(n.i0)) {
    case LinalgKind::qr: {
      const std::int64_t q = (n.i1 & kComplete) ? m : k;
      Eigen::HouseholderQR<M> qr(A);
      M Q = qr.householderQ() * M::Identity(m, q);
      M R = M(qr.matrixQR().triangularView<Eigen::Upper>()).topRows(q);
      put(Q, 0);
      return put(R, m);
    }
    case LinalgKind::svd: {
      const bool full = n.i1 & kFull;
      if (!(n.i1 & kVectors)) {
        Eigen::JacobiSVD<M> svd(A);
        for (std::int64_t p = 0; p < k; ++p) value(p, svd.singularValues()(p));
        return;
      }
      Eigen::JacobiSVD<M> svd(A, full ? (Eigen::ComputeFullU | Eigen::ComputeFullV)
                                      : (Eigen::ComputeThinU | Eigen::ComputeThinV));
      put(svd.matrixU(), 0);
      const std::int64_t width = n.shape[n.shape.ndim() - 1];
      for (std::int64_t p = 0; p < k; ++p) value(m * width + p, svd.singularValues()(p));
      return put(M(svd.matrixV().transpose()), m + 1);
    }
    case LinalgKind::eigh: {
      M S = (n.i1 & kUpper) ? M(A.selfadjointView<Eigen::Upper>()) : M(A.selfadjointView<Eigen::Lower>());
      Eigen::SelfAdjointEigenSolver<M> es(S, (n.i1 & kVectors) ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
      for (std::int64_t p = 0; p < m; ++p) value(p, es.eigenvalues()(p));
      if (n.i1 & kVectors) put(es.eigenvectors(), 1);
      return;
    }
    default:
      internal_error("reference linalg: eigen_decomposition of another routine");
  }
}

// Linalg: the routines of graph/library.hpp, written out plainly (LU with
// partial pivoting, substitutions) in the node's dtype, or with Eigen (QR,
// SVD, eigh; above), per matrix of the batch. Vectors of QR, SVD and eigh
// are unique up to sign: tests compare them so, not bit for bit.
template <class T>
void linalg_matrix(const Node& n, const T* a, const T* b, T* out) {
  using namespace linalg_flag;
  using M = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const Graph& g = graph();
  const Shape& as = g[n.inputs[0]].shape;
  const std::int64_t m = as[as.ndim() - 2], cols = as[as.ndim() - 1], k = std::min(m, cols);
  const std::int64_t width = n.shape[n.shape.ndim() - 1];
  M A(m, cols);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) A(i, j) = a[i * cols + j];
  }
  auto put = [&](const M& x, std::int64_t row0) {
    for (std::int64_t i = 0; i < x.rows(); ++i) {
      for (std::int64_t j = 0; j < x.cols(); ++j) out[(row0 + i) * width + j] = x(i, j);
    }
  };
  auto refuse = [&](const std::string& what) {
    user_error(linalg_op_name(static_cast<LinalgKind>(n.i0), n.i1), what, n.loc);
  };
  // LU with partial pivoting (the first largest magnitude), in place in A.
  auto lu = [&](M& x, std::vector<std::int64_t>& piv) -> std::int64_t {  // first zero pivot + 1, or 0
    std::int64_t zero = 0;
    for (std::int64_t c = 0; c < std::min(x.rows(), x.cols()); ++c) {
      std::int64_t p = c;
      for (std::int64_t r = c + 1; r < x.rows(); ++r) {
        if (std::abs(x(r, c)) > std::abs(x(p, c))) p = r;
      }
      piv.push_back(p);
      x.row(c).swap(x.row(p));
      if (x(c, c) == T(0)) {
        if (zero == 0) zero = c + 1;
        continue;
      }
      for (std::int64_t r = c + 1; r < x.rows(); ++r) {
        x(r, c) /= x(c, c);
        for (std::int64_t j = c + 1; j < x.cols(); ++j) x(r, j) -= x(r, c) * x(c, j);
      }
    }
    return zero;
  };
  auto rhs = [&]() {
    const Shape& bs = g[n.inputs[1]].shape;
    const std::int64_t r = bs[bs.ndim() - 2], c = bs[bs.ndim() - 1];
    M B(r, c);
    for (std::int64_t i = 0; i < r; ++i) {
      for (std::int64_t j = 0; j < c; ++j) B(i, j) = b[i * c + j];
    }
    return B;
  };
  switch (static_cast<LinalgKind>(n.i0)) {
    case LinalgKind::cholesky: {
      M L = M::Zero(m, m);
      for (std::int64_t j = 0; j < m; ++j) {
        T d = A(j, j);
        for (std::int64_t p = 0; p < j; ++p) d -= L(j, p) * L(j, p);
        if (!(d > T(0))) refuse("the matrix is not positive definite (its leading minor of order " + std::to_string(j + 1) + " is not positive)");
        L(j, j) = std::sqrt(d);
        for (std::int64_t i = j + 1; i < m; ++i) {
          T s = A(i, j);
          for (std::int64_t p = 0; p < j; ++p) s -= L(i, p) * L(j, p);
          L(i, j) = s / L(j, j);
        }
      }
      return put(L, 0);
    }
    case LinalgKind::lu: {
      std::vector<std::int64_t> piv;
      lu(A, piv);
      put(A, 2);
      std::vector<std::int64_t> perm(static_cast<std::size_t>(m));
      for (std::int64_t r = 0; r < m; ++r) perm[static_cast<std::size_t>(r)] = r;
      for (std::int64_t p = 0; p < k; ++p) {
        const auto to = piv[static_cast<std::size_t>(p)];
        out[p] = static_cast<T>(to);
        std::swap(perm[static_cast<std::size_t>(p)], perm[static_cast<std::size_t>(to)]);
      }
      for (std::int64_t r = 0; r < m; ++r) out[width + r] = static_cast<T>(perm[static_cast<std::size_t>(r)]);
      return;
    }
    case LinalgKind::solve: {
      M B = rhs();
      std::vector<std::int64_t> piv;
      if (lu(A, piv) != 0) {
        refuse("the matrix is singular (an exactly zero pivot in its LU factors)");
      }
      for (std::int64_t c = 0; c < m; ++c) B.row(c).swap(B.row(piv[static_cast<std::size_t>(c)]));
      for (std::int64_t i = 0; i < m; ++i) {  // L y = P b, unit diagonal
        for (std::int64_t p = 0; p < i; ++p) B.row(i) -= A(i, p) * B.row(p);
      }
      for (std::int64_t i = m; i-- > 0;) {  // U x = y
        for (std::int64_t p = i + 1; p < m; ++p) B.row(i) -= A(i, p) * B.row(p);
        B.row(i) /= A(i, i);
      }
      return put(B, 0);
    }
    case LinalgKind::triangular: {
      M B = rhs();
      M T_ = (n.i1 & kTransposeA) ? M(A.transpose()) : A;
      // op(a)'s own triangle: a transposed lower is upper.
      const bool lower = bool(n.i1 & kLower) != bool(n.i1 & kTransposeA);
      const bool unit = n.i1 & kUnit;
      auto row = [&](std::int64_t i) {
        for (std::int64_t p = 0; p < m; ++p) {
          if (p != i && (lower ? p < i : p > i)) B.row(i) -= T_(i, p) * B.row(p);
        }
        if (!unit) B.row(i) /= T_(i, i);
      };
      if (lower) {
        for (std::int64_t i = 0; i < m; ++i) row(i);
      } else {
        for (std::int64_t i = m; i-- > 0;) row(i);
      }
      return put(B, 0);
    }
    case LinalgKind::qr:
    case LinalgKind::svd:
    case LinalgKind::eigh:
      return eigen_decomposition(
          n, A.template cast<double>(),
          [&](const MatrixD& x, std::int64_t row0) {
            for (std::int64_t i = 0; i < x.rows(); ++i) {
              for (std::int64_t j = 0; j < x.cols(); ++j) out[(row0 + i) * width + j] = static_cast<T>(x(i, j));
            }
          },
          [&](std::int64_t at, double v) { out[at] = static_cast<T>(v); });
  }
}

void run_linalg(NodeId id) {
  Graph& g = graph();
  Node& n = g[id];
  const Node& a = g[n.inputs[0]];
  auto as = materialize(a);
  std::shared_ptr<Storage> bs = n.inputs.size() > 1 ? materialize(g[n.inputs[1]]) : nullptr;
  auto s = alloc_for(n);
  const int r = a.shape.ndim();
  const std::int64_t a_size = a.shape[r - 2] * a.shape[r - 1];
  const std::int64_t b_size = bs ? g[n.inputs[1]].shape[r - 2] * g[n.inputs[1]].shape[r - 1] : 0;
  std::int64_t batches = 1, out_size = 1;
  for (int d = 0; d < r - 2; ++d) batches *= a.shape[d];
  for (int d = r - 2; d < n.shape.ndim(); ++d) out_size *= n.shape[d];
  visit_dtype(n.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* out = static_cast<T*>(s->data);
      std::fill(out, out + n.numel(), T(0));
      for (std::int64_t bi = 0; bi < batches; ++bi) {
        linalg_matrix<T>(n, static_cast<const T*>(as->data) + bi * a_size,
                         bs ? static_cast<const T*>(bs->data) + bi * b_size : nullptr, out + bi * out_size);
      }
    } else {
      internal_error("reference linalg: a dtype other than f32/f64");
    }
  });
  finish(id, std::move(s));
}

// The user's function over the inputs as they are laid out (a constant's
// one element is read through zero strides), its results packed in one
// buffer (graph/host_call.hpp).
void run_host_call(NodeId id) {
  Graph& g = graph();
  const Node& n = g[id];
  std::shared_ptr<const HostCallFn> f = find_host_call(n.i0);
  if (!f) internal_error("reference: a host_call node whose function is gone");
  std::vector<HostBuffer> in;
  for (NodeId i : n.inputs) {
    const Node& x = g[i];
    HostBuffer b;
    b.data = static_cast<char*>(x.storage->data) + x.offset * static_cast<std::int64_t>(itemsize(x.dtype));
    b.dtype = x.dtype;
    b.shape = x.shape;
    b.strides = x.strides;
    in.push_back(std::move(b));
  }
  auto s = alloc_for(n);
  aj::run_host_call(*f, n.dtype, n.ints, in, s->data);
  finish(id, std::move(s));
}

// A collective: the same exchange as the host backend's (it is one with the
// other processes, who may run either executor).
void run_collective(NodeId id) {
  Graph& g = graph();
  const Node& n = g[id];
  LibraryCall c;
  c.op = n.op;
  c.dtype = n.dtype;
  c.shape = n.shape.dims();
  c.axis = n.i0;
  c.k = n.i1;
  c.ints = n.ints;
  c.loc = n.loc;
  const void* in = nullptr;
  if (!n.inputs.empty()) {
    const Node& x = g[n.inputs[0]];
    c.inputs.push_back({x.dtype, x.shape.dims(), x.strides, x.offset});
    in = x.storage->data;
  }
  auto s = alloc_for(n);
  comm::run(c, in, s->data);
  finish(id, std::move(s));
}

}  // namespace

void evaluate_node(NodeId id) {
  const Op op = graph()[id].op;
  ++detail::stats_mut().kernels_launched;
  switch (op_category(op)) {
    case OpCategory::Leaf:
      if (op == Op::Constant) return run_constant(id);
      internal_error("evaluate_node: an input leaf without storage");
    case OpCategory::Generator: return run_generator(id);
    case OpCategory::Unary:
    case OpCategory::Binary:
    case OpCategory::Ternary: return run_elementwise(id);
    case OpCategory::Reduce: return run_reduce(id);
    case OpCategory::Scan: return run_scan(id);
    case OpCategory::View: return run_view(id);
    case OpCategory::Remap:
      if (op == Op::Gather) return run_gather(id);
      return run_pad(id);
    case OpCategory::Other:
      if (op == Op::Concat) return run_concat(id);
      if (op == Op::ScatterAdd || op == Op::Scatter) return run_scatter(id);
      if (op == Op::MatMul) return run_matmul(id);
      if (op == Op::Linalg) return run_linalg(id);
      if (op == Op::Conv) return run_conv(id);
      if (op == Op::HostCall) return run_host_call(id);
      if (op == Op::Collective) return run_collective(id);
      return run_sort(id);
  }
}

void evaluate(const std::vector<NodeId>& roots) {
  for (NodeId id : unevaluated_order(roots)) evaluate_node(id);
}

}  // namespace aj::ref
