// The C API's collectives (arrayjit/arrayjit.h, "several processes"): the
// C++ functions of arrayjit/distributed.hpp, groups named by their numbers
// (0: the world).
#include <string>

#include "arrayjit/arrayjit.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {

namespace {

namespace dist = aj::distributed;

dist::ReduceOp reduce_arg(aj_reduce_op op) {
  if (op < AJ_REDUCE_SUM || op > AJ_REDUCE_PROD) c_error("unknown reduction " + std::to_string(static_cast<int>(op)));
  return static_cast<dist::ReduceOp>(op);
}

dist::Group group_arg(int64_t group) {
  if (group < 0) c_error("group " + std::to_string(group) + " is not a group (a negative number)");
  return dist::Group::from_id(group);
}

}  // namespace

}  // namespace aj::c_api

using namespace aj::c_api;

aj_status aj_distributed_init(int strict, int32_t* rank, int32_t* size) {
  return c_call("aj_distributed_init", [&] {
    const dist::Group w = dist::init(strict != 0);
    if (rank) *rank = w.rank();
    if (size) *size = w.size();
  });
}
aj_status aj_distributed_group_info(int64_t group, int32_t* rank, int32_t* size) {
  return c_call("aj_distributed_group_info", [&] {
    const dist::Group g = group_arg(group);
    if (rank) *rank = g.rank();
    if (size) *size = g.size();
  });
}
aj_status aj_distributed_split(int64_t group, int32_t color, int32_t key, int64_t* out_group) {
  if (out_group) *out_group = -1;
  return c_call("aj_distributed_split", [&] {
    if (!out_group) c_error("null output pointer");
    *out_group = group_arg(group).split(color, key).id();
  });
}
aj_status aj_distributed_set_timeout(double seconds) {
  return c_call("aj_distributed_set_timeout", [&] { dist::set_timeout(seconds); });
}
aj_status aj_distributed_set_overlap(int32_t mode) {
  return c_call("aj_distributed_set_overlap", [&] {
    if (mode < -1 || mode > 1) c_error("mode " + std::to_string(mode) + " is not -1 (automatic), 0 or 1");
    dist::set_overlap(static_cast<dist::Overlap>(mode));
  });
}
aj_status aj_distributed_overlap(int32_t* on) {
  return c_call("aj_distributed_overlap", [&] {
    if (!on) c_error("null output pointer");
    *on = dist::overlap() ? 1 : 0;
  });
}
aj_status aj_distributed_all_reduce(aj_array x, aj_reduce_op op, int64_t group, aj_array* out) {
  return c_make("aj_distributed_all_reduce", out,
                [&] { return dist::all_reduce(arg(x, "x"), reduce_arg(op), group_arg(group)); });
}
aj_status aj_distributed_all_gather(aj_array x, int64_t group, aj_array* out) {
  return c_make("aj_distributed_all_gather", out, [&] { return dist::all_gather(arg(x, "x"), group_arg(group)); });
}
aj_status aj_distributed_reduce_scatter(aj_array x, aj_reduce_op op, int64_t group, aj_array* out) {
  return c_make("aj_distributed_reduce_scatter", out,
                [&] { return dist::reduce_scatter(arg(x, "x"), reduce_arg(op), group_arg(group)); });
}
aj_status aj_distributed_broadcast(aj_array x, int32_t root, int64_t group, aj_array* out) {
  return c_make("aj_distributed_broadcast", out,
                [&] { return dist::broadcast(arg(x, "x"), root, group_arg(group)); });
}
aj_status aj_distributed_send(aj_array x, int32_t dst, int64_t group, aj_array* out) {
  return c_make("aj_distributed_send", out, [&] { return dist::send(arg(x, "x"), dst, group_arg(group)); });
}
aj_status aj_distributed_recv(const int64_t* shape, int32_t ndim, aj_dtype dtype, int32_t src, int64_t group,
                              aj_array* out) {
  return c_make("aj_distributed_recv", out, [&] {
    return dist::recv(shape_arg(shape, ndim), dtype_arg(dtype, "dtype"), src, group_arg(group));
  });
}
aj_status aj_distributed_average_gradients(const aj_array* grads, size_t n, int64_t bucket_bytes, int64_t group,
                                           aj_array* outs) {
  return c_make_many("aj_distributed_average_gradients", outs, static_cast<std::int64_t>(n), [&] {
    return dist::average_gradients(arrays_arg(grads, n), bucket_bytes, group_arg(group));
  });
}
