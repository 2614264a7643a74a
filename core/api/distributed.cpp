// arrayjit/distributed.hpp: collectives traced as Op::Collective nodes
// (graph/library.hpp says what each computes); the processes and their MPI
// are backends/cpu/host_comm.hpp's. A group of one resolves every collective
// here, without a node.
#include "arrayjit/distributed.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/host_comm.hpp"
#include "core/api/trace.hpp"
#include "graph/library.hpp"

namespace aj::distributed {

static_assert(static_cast<int>(ReduceOp::sum) == static_cast<int>(ReduceKind::sum) &&
              static_cast<int>(ReduceOp::mean) == static_cast<int>(ReduceKind::mean) &&
              static_cast<int>(ReduceOp::max) == static_cast<int>(ReduceKind::max) &&
              static_cast<int>(ReduceOp::min) == static_cast<int>(ReduceKind::min) &&
              static_cast<int>(ReduceOp::prod) == static_cast<int>(ReduceKind::prod));

namespace {

using trace::describe;

void check_group(const Group& g, const char* op, const Loc& loc) {
  if (!g.valid()) user_error(op, "the group is invalid (this process joined no group at split)", loc);
  if (g.id() != 0 && !comm::running()) {
    user_error(op, "group " + std::to_string(g.id()) + " does not exist in this process", loc);
  }
}

void check_rank(int r, const Group& g, const char* what, const char* op, const Loc& loc) {
  if (r < 0 || r >= g.size()) {
    user_error(op, std::string(what) + " " + std::to_string(r) + " is not a rank of the group (size " +
                       std::to_string(g.size()) + ")", loc);
  }
}

void check_reduce(ReduceOp op, DType t, const char* name, const Loc& loc) {
  if (static_cast<int>(op) < 0 || static_cast<int>(op) > static_cast<int>(ReduceOp::prod)) {
    user_error(name, "an unknown ReduceOp", loc);
  }
  if (op == ReduceOp::mean && !is_float(t)) {
    user_error(name, std::string("mean needs a floating-point array, not ") + dtype_name(t) +
                         " (use sum, or cast first)", loc);
  }
}

// The node: kind, reduction, group, peer over x (or none: recv).
Array node(CollectiveKind kind, ReduceOp op, const Group& g, int peer, const Array* x_in, const Shape& shape,
           DType dtype, const Loc& loc) {
  const char* name = collective_name(kind);
  trace::Scope scope;
  Node n;
  n.op = Op::Collective;
  n.dtype = dtype;
  n.shape = shape;
  trace::check_array_size(n.shape, n.dtype, name, loc);
  n.i0 = static_cast<std::int64_t>(kind);
  n.i1 = static_cast<std::int64_t>(op);
  n.ints = {g.id(), peer};
  if (x_in) {
    const Array& x = trace::local(*x_in, name, loc);
    n.inputs = {x.node_id()};
  }
  return trace::make(std::move(n), loc);
}

// mean is the sum times 1 / size: the node (marked mean, for messages)
// exchanges the sum, and the scaling is an elementwise op that fuses into the
// kernel that reads the result (a gradient's averaging into the update).
Array scaled(const Array& r, ReduceOp op, const Group& g, const Loc& loc) {
  if (op != ReduceOp::mean) return r;
  return Operand(r, loc) * Operand(1.0 / static_cast<double>(g.size()), loc);
}

}  // namespace

int Group::rank() const {
  if (!valid()) runtime_error("aj::distributed::Group::rank: the group is invalid");
  return comm::rank(id_);
}

int Group::size() const {
  if (!valid()) runtime_error("aj::distributed::Group::size: the group is invalid");
  return comm::size(id_);
}

Group Group::split(int color, int key) const {
  if (!valid()) runtime_error("aj::distributed::Group::split: the group is invalid");
  Group g;
  g.id_ = comm::split(id_, color, key < 0 ? rank() : key);
  return g;
}

Group Group::from_id(std::int64_t id) {
  Group g;
  g.id_ = id;
  return g;
}

Group init(bool strict) {
  comm::init(strict);
  return Group();
}

bool is_initialized() { return comm::running(); }
bool is_available() { return comm::built_with_mpi(); }
Group world() { return Group(); }
int rank() { return world().rank(); }
int size() { return world().size(); }
void set_timeout(double seconds) { comm::set_timeout(seconds); }
double timeout() { return comm::timeout(); }
void set_overlap(Overlap mode) { comm::set_overlap(static_cast<int>(mode)); }
bool overlap() { return comm::overlap(); }

Array all_reduce(const Array& x, ReduceOp op, const Group& group, Loc loc) {
  const char* name = "all_reduce";
  const Node& xn = trace::own_node(x, name, loc);
  check_group(group, name, loc);
  check_reduce(op, xn.dtype, name, loc);
  if (group.size() == 1) return x;
  return scaled(node(CollectiveKind::all_reduce, op, group, 0, &x, xn.shape, xn.dtype, loc), op, group, loc);
}

Array all_gather(const Array& x, const Group& group, Loc loc) {
  const char* name = "all_gather";
  const Node& xn = trace::own_node(x, name, loc);
  check_group(group, name, loc);
  const int p = group.size();
  std::vector<std::int64_t> d = xn.shape.dims();
  if (d.empty()) d = {p};
  else d[0] *= p;
  if (p == 1) return xn.shape.ndim() == 0 ? x.reshape(Shape(d), loc) : x;
  return node(CollectiveKind::all_gather, ReduceOp::sum, group, 0, &x, Shape(d), xn.dtype, loc);
}

Array reduce_scatter(const Array& x, ReduceOp op, const Group& group, Loc loc) {
  const char* name = "reduce_scatter";
  const Node& xn = trace::own_node(x, name, loc);
  check_group(group, name, loc);
  check_reduce(op, xn.dtype, name, loc);
  const int p = group.size();
  if (xn.shape.ndim() == 0) user_error(name, "needs an array with an axis 0 to split, got " + describe(x), loc);
  if (xn.shape[0] % p != 0) {
    user_error(name, "axis 0 of " + describe(x) + " does not split into " + std::to_string(p) +
                         " equal blocks (one per rank)", loc);
  }
  if (p == 1) return x;
  std::vector<std::int64_t> d = xn.shape.dims();
  d[0] /= p;
  return scaled(node(CollectiveKind::reduce_scatter, op, group, 0, &x, Shape(d), xn.dtype, loc), op, group,
                loc);
}

Array broadcast(const Array& x, int root, const Group& group, Loc loc) {
  const char* name = "broadcast";
  const Node& xn = trace::own_node(x, name, loc);
  check_group(group, name, loc);
  check_rank(root, group, "root", name, loc);
  if (group.size() == 1) return x;
  return node(CollectiveKind::broadcast, ReduceOp::sum, group, root, &x, xn.shape, xn.dtype, loc);
}

Array send(const Array& x, int dst, const Group& group, Loc loc) {
  const char* name = "send";
  const Node& xn = trace::own_node(x, name, loc);
  check_group(group, name, loc);
  check_rank(dst, group, "destination", name, loc);
  if (dst == group.rank()) user_error(name, "a rank cannot send to itself (rank " + std::to_string(dst) + ")", loc);
  return node(CollectiveKind::send, ReduceOp::sum, group, dst, &x, xn.shape, xn.dtype, loc);
}

Array recv(const Shape& shape, DType dtype, int src, const Group& group, Loc loc) {
  const char* name = "recv";
  check_group(group, name, loc);
  check_rank(src, group, "source", name, loc);
  if (src == group.rank()) user_error(name, "a rank cannot receive from itself (rank " + std::to_string(src) + ")", loc);
  for (std::int64_t e : shape) {
    if (e < 0) user_error(name, "a negative extent in the shape", loc);
  }
  return node(CollectiveKind::recv, ReduceOp::sum, group, src, nullptr, shape, dtype, loc);
}

Array recv_like(const Array& like, int src, const Group& group, Loc loc) {
  const Node& n = trace::own_node(like, "recv_like", loc);
  return recv(n.shape, n.dtype, src, group, loc);
}

std::vector<Array> average_gradients(const std::vector<Array>& grads, std::int64_t bucket_bytes, const Group& group,
                                     Loc loc) {
  const char* name = "average_gradients";
  check_group(group, name, loc);
  if (bucket_bytes <= 0) user_error(name, "bucket_bytes " + std::to_string(bucket_bytes) + " is not positive", loc);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Node& gn = trace::own_node(grads[i], name, loc);
    if (!is_float(gn.dtype)) {
      user_error(name, "gradient " + std::to_string(i) + " is " + dtype_name(gn.dtype) +
                           ", not a floating-point array (the mean of integers is not one)", loc);
    }
  }
  if (group.size() == 1) return grads;
  // Buckets per dtype, filled from the last gradient to the first; a bucket
  // is closed when the next gradient would take it past bucket_bytes.
  struct Bucket {
    DType dtype;
    std::int64_t bytes = 0;
    std::vector<std::size_t> members;
  };
  std::vector<Bucket> buckets;  // in the order they are closed (then the open ones, by creation)
  std::vector<Bucket> open;
  for (std::size_t k = grads.size(); k-- > 0;) {
    const DType t = grads[k].dtype(loc);
    const std::int64_t b = grads[k].size(loc) * static_cast<std::int64_t>(itemsize(t));
    auto it = std::find_if(open.begin(), open.end(), [&](const Bucket& o) { return o.dtype == t; });
    if (it != open.end() && !it->members.empty() && it->bytes + b > bucket_bytes) {
      buckets.push_back(std::move(*it));
      open.erase(it);
      it = open.end();
    }
    if (it == open.end()) it = open.insert(open.end(), Bucket{t, 0, {}});
    it->bytes += b;
    it->members.push_back(k);
  }
  for (Bucket& o : open) buckets.push_back(std::move(o));
  std::vector<Array> out(grads.size());
  for (const Bucket& bucket : buckets) {
    if (bucket.members.size() == 1) {
      const std::size_t k = bucket.members[0];
      out[k] = all_reduce(grads[k], ReduceOp::mean, group, loc);
      continue;
    }
    std::vector<Array> flat;
    for (std::size_t k : bucket.members) flat.push_back(reshape(grads[k], Shape{grads[k].size(loc)}, loc));
    const Array mean = all_reduce(concatenate(flat, 0, loc), ReduceOp::mean, group, loc);
    std::int64_t at = 0;
    for (std::size_t i = 0; i < flat.size(); ++i) {
      const std::size_t k = bucket.members[i];
      const std::int64_t n = flat[i].size(loc);
      out[k] = reshape(slice(mean, 0, at, at + n, 1, loc), grads[k].shape(loc), loc);
      at += n;
    }
  }
  return out;
}

}  // namespace aj::distributed
