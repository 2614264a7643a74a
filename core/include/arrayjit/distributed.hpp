// Several processes computing together: collectives as lazy ops, over MPI
// (docs/distributed.md). Launch the program with `mpirun -np N prog`; each
// process is a rank of the world group.
//
//   auto world = aj::distributed::init();          // a group of 1 without mpirun
//   Array g = aj::distributed::all_reduce(grad, aj::distributed::ReduceOp::mean);
//   w = w - lr * g;                                // fuses with the mean's division
//
// Collectives are nodes of the graph like any op: they run when their result
// is evaluated, as a step of the plan ordered with the kernels around it,
// their buffers planned like any step's, and inside aj::compile every replay
// runs them. Rules:
//  - Every rank of the group must evaluate the same collectives in the same
//    order with the same kinds, dtypes and shapes (the programs are the same
//    program, as with MPI). Each step first checks that the ranks agree: when
//    they do not, every rank throws the same aj::Error, naming the op, the
//    line it was traced at and what each rank asked for.
//  - A rank that waits for one whose program ended throws an aj::Error at
//    once saying so; one that waits longer than timeout() for the others
//    (one died, or runs other collectives) throws one at the timeout. MPI
//    cannot be used after that in the process.
//  - Results are computed on the host; arrays on a CUDA device are an error
//    (NCCL is not wired yet).
//  - In a group of one process (no launcher, or a split of one), every
//    collective is its input (all_gather of a rank-0 array: shape [1]) and
//    no step runs.
//  - Collectives are never merged: two all_reduce calls on one array are
//    two exchanges.
//  - Calls from several threads of a process are run one at a time, in the
//    order they reach the communication thread: issue a group's collectives
//    from one thread (as with MPI).
#pragma once

#include <cstdint>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj::distributed {

// How all_reduce and reduce_scatter combine the ranks' elements. mean is
// the sum divided by the group's size (floating-point dtypes only); on bool
// arrays sum and max are or, prod and min are and. max and min of floats:
// NaN wins, as in aj::maximum.
enum class ReduceOp { sum, mean, max, min, prod };

// A set of processes that run collectives together.
class Group {
 public:
  Group() = default;  // the world: every process of the launch
  int rank() const;   // this process's rank in the group, 0 .. size() - 1
  int size() const;
  // The ranks of this group with the same color, as a new group, ranked by
  // key (ties: by rank here; key < 0: rank here). Collective over this
  // group: every rank calls it. A negative color: this process joins no
  // group (the result is invalid(); using it is an error).
  Group split(int color, int key = -1) const;
  bool valid() const { return id_ >= 0; }
  std::int64_t id() const { return id_; }  // the library's number for it (0: the world)
  static Group from_id(std::int64_t id);   // inverse of id() (an unknown id: an error at use)

 private:
  std::int64_t id_ = 0;
};

// Starts MPI once, on the library's communication thread (later calls
// return the world at once). A process not started by an MPI launcher (or a
// library built without MPI) is a group of one; strict = true makes that an
// error instead. MPI is finalized when the process exits.
Group init(bool strict = false);
// Was MPI started (init in a launched process)?
bool is_initialized();
// Was the library built with MPI support?
bool is_available();
Group world();
int rank();  // world().rank()
int size();  // world().size()

// Seconds a collective waits for the other ranks before it throws (default
// 300; the environment's AJ_DISTRIBUTED_TIMEOUT, if set, replaces that
// default). Positive.
void set_timeout(double seconds);
double timeout();

// Does an exchange start as soon as its operand is made and run on the
// communication thread while the steps that do not read it go on
// (docs/distributed.md, "Overlap")? on, off, or automatic (the default): the
// environment's AJ_DISTRIBUTED_OVERLAP (0 or 1) if set, else on when this
// machine has at least two hardware threads per rank running on it (over
// shared memory an exchange is CPU work: with a core per rank or fewer it
// only competes with the kernels). Results are the same either way.
enum class Overlap { off = 0, on = 1, automatic = -1 };
void set_overlap(Overlap mode);
bool overlap();  // what it is now

// The elementwise reduction of x over the group's ranks; x's shape and dtype.
// Derivative: all_reduce(sum) of the cotangent for sum, (mean) for mean; max,
// min and prod have none (an error).
Array all_reduce(const Array& x, ReduceOp op = ReduceOp::sum, const Group& group = Group(),
                 Loc loc = Loc::current());
// Every rank's x, concatenated along axis 0 in rank order: [size * n, ...]
// (a rank-0 x gives [size]). Derivative: reduce_scatter(sum).
Array all_gather(const Array& x, const Group& group = Group(), Loc loc = Loc::current());
// The reduction of x over the ranks, split along axis 0 into size() blocks,
// rank r getting block r: x [size * m, ...] -> [m, ...] (axis 0 must divide).
// Derivative of sum: all_gather of the cotangent (mean: divided by size).
Array reduce_scatter(const Array& x, ReduceOp op = ReduceOp::sum, const Group& group = Group(),
                     Loc loc = Loc::current());
// The root's x on every rank (every rank passes an array of the same shape
// and dtype; only the root's values are read). Derivative: the sum of the
// ranks' cotangents on the root, zero elsewhere.
Array broadcast(const Array& x, int root = 0, const Group& group = Group(), Loc loc = Loc::current());
// Sends x to rank `dst` when the result (x's values) is evaluated: evaluate
// it (aj::eval) or use it. The receiver calls recv with x's shape and dtype.
// No derivative.
Array send(const Array& x, int dst, const Group& group = Group(), Loc loc = Loc::current());
// What rank `src` sent, of this shape and dtype. No derivative.
Array recv(const Shape& shape, DType dtype, int src, const Group& group = Group(), Loc loc = Loc::current());
Array recv_like(const Array& like, int src, const Group& group = Group(), Loc loc = Loc::current());

// Data-parallel training: the mean of each gradient over the group's ranks
// (each rank's gradient of its share of the batch becomes the whole batch's),
// exchanged in buckets, as PyTorch's DDP and MLX's average_gradients do.
// Gradients of one dtype are packed, the last first (a backward pass makes
// them in that order), into flat buckets of at most bucket_bytes (a larger
// gradient is a bucket by itself); each bucket is one all_reduce(mean).
// Lazy like every collective: in the step's plan each bucket's exchange
// starts as soon as its gradients are computed and runs while the rest of
// the backward pass does, the gradients' kernels write into the bucket
// directly, and the 1/size scaling fuses into the kernels that read the
// result (the optimizer's update). In a compiled step the buckets' buffers
// are planned like any other: no allocation per step after the first call.
// Results: grads' shapes and dtypes, in grads' order. In a group of one: grads.
// bucket_bytes: positive.
std::vector<Array> average_gradients(const std::vector<Array>& grads, std::int64_t bucket_bytes = 4 << 20,
                                     const Group& group = Group(), Loc loc = Loc::current());

}  // namespace aj::distributed
