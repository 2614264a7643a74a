// Kernel IR: one small, backend-neutral description of a fused loop nest.
//
// Rules (what every backend may rely on):
//  - The iteration space is `shape` (rank R). `reduce_axes` (sorted) lists the
//    axes that are summed/maxed away; the others are the "outer" axes. With no
//    reduce axes every point is independent.
//  - Every stream (input or output) addresses memory as
//    `offset + sum_d strides[d] * p[d]` elements over the full iteration point p.
//    Stride 0 is broadcast; views (transpose, slice, broadcast, reshape) have
//    already been folded into these strides, nothing is copied. Strides of
//    axes with extent 1 are normalized to 0.
//  - Instructions form an SSA list; operand fields name earlier instructions.
//    Phase 0 runs at every iteration point; phase 1 (reduction kernels only)
//    runs once per outer point after the reduced axes were consumed: a
//    `Reduce` instruction is phase 1 and reads a phase-0 operand. Loads and
//    constants used by phase 1 have stride 0 on reduce axes.
//  - A `Scan` instruction (phase 0, reduction kernels only) is a running
//    reduction: at each point its value is its combiner (Sum, Prod) over
//    the operand at every point of the reduce axes up to and including this
//    one, in row-major order, starting from sem::scan_identity at every outer
//    point. Backends walk the reduce axes of one outer point in order for
//    it (never split or reassociated); phase-0 outputs store it per point.
//  - Outputs name the value they store. Phase-0 outputs are written at every
//    point, phase-1 outputs once per outer point. Within one point all loads
//    happen before any store, so an output may share memory with an input that
//    is read at exactly the index the output writes (in-place donation).
//  - Half dtypes (f16, bf16) appear only where values are loaded, stored,
//    made (Const, Index), cast or selected (Where): every other instruction
//    computes in f32 (widen_halves, run at the end of lowering), so emitters
//    convert at those places and never do half arithmetic.
//  - Loads may read off their stream's affine index (gathers, pads; see
//    KOp::Load): `b` adds a data-dependent element offset, `c` masks the
//    load. Lowering guarantees every address a load can touch unmasked lies
//    inside its buffer (gather indices are clamped); a masked-off load
//    touches no memory and gives 0. A stream read with a data-dependent
//    offset is `gathered`: it is never read at exactly the output's index,
//    so it is never taken over in place.
//  - Arg reductions (`Reduce` with op ArgMax/ArgMin, dtype i64) carry a value
//    and an index: `a` is the value (phase 0, any dtype), `b` the candidate
//    index (phase 0, i64) or -1 for the point's position along the reduce
//    axis (a kernel with an arg reduction has exactly one reduce axis). The
//    result is the lowest index among the best values, where a value is
//    better as sem::arg_better says (the first NaN wins; -0 ties +0), so it
//    does not depend on the order points are visited in (sem::arg_take).
//  - Scalars (`scalars`) and extents (`shape`) are run-time arguments and are
//    not part of `structural_hash`: a changing learning rate or a growing size
//    reuses the same compiled kernel. Reduction order over the reduce axes is
//    row-major, as in the reference interpreter.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arrayjit/dtype.hpp"
#include "base/op.hpp"

namespace aj {
namespace detail::prof {
struct Event;
}  // namespace detail::prof


enum class KOp : std::uint8_t {
  Load,    // arg = input index; b (or -1): an i64 value added to the element
           // offset (a gather); c (or -1): a bool mask, false: no memory
           // access, the value is 0 (a pad's out-of-range points)
  Const,   // arg = scalar index
  Unary,   // op(a); also Cast (to dtype, from the dtype of a)
  Binary,  // op(a, b); compare ops give bool
  Where,   // a ? b : c
  Reduce,  // combiner op (Sum, Prod, ReduceMax, ...) over the reduce axes of a;
           // ArgMax/ArgMin: index of the best a (candidate indices from b if >= 0)
  Scan,    // running combiner op (Sum, Prod) of a along the reduce axes (phase 0)
  Index,   // generator op evaluated at the flat index read from index stream `arg`
           // (plus the i64 value b, or -1); payload scalars start at `a`
           // (see kernel_interpreter.cpp)
  Position,  // i64: the element offset of index stream `arg` at this point, an
             // affine function of the iteration point (masks of gathered pads)
  InRange,   // bool: s[a] <= offset of index stream `arg` < s[b] (i64 scalars a, b):
             // a pad's mask. Backends may split a loop where it is constant
             // (jit/llvm/codegen.cpp runs the inside of a pad without masks).
};

// The operands of an instruction that name earlier instructions (-1: none),
// by kind: a, b, c of Unary/Binary/Where/Reduce/Scan; b, c of Load; b of Index;
// none of Const, Position, InRange (whose a, b name scalars).
struct KOperands {
  std::int32_t v[3] = {-1, -1, -1};
  const std::int32_t* begin() const { return v; }
  const std::int32_t* end() const { return v + 3; }
};

struct KInstr {
  KOp kind = KOp::Load;
  Op op = Op::Input;
  DType dtype = DType::f32;  // result dtype
  std::uint8_t phase = 0;
  std::int32_t a = -1, b = -1, c = -1;
  std::int32_t arg = -1;
};

struct KStream {
  DType dtype = DType::f32;
  std::vector<std::int64_t> strides;  // one per iteration axis, elements
  std::int64_t offset = 0;
  bool index_only = false;  // an index stream for a generator: no memory behind it
  bool gathered = false;    // some load adds a data-dependent offset (never in place)
};

KOperands operands(const KInstr& in);

struct KOutput {
  std::int32_t value = -1;
  std::uint8_t phase = 0;
  KStream stream;
};

// A run-time scalar argument: integers and bool in i, floats in f.
struct KScalar {
  DType dtype = DType::f64;
  std::int64_t i = 0;
  double f = 0.0;
};

struct Kernel {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> reduce_axes;
  std::vector<KStream> inputs;
  std::vector<KInstr> instrs;
  std::vector<KOutput> outputs;
  std::vector<KScalar> scalars;

  bool is_reduction() const { return !reduce_axes.empty(); }
  std::int64_t points() const;  // product of the extents
  std::int64_t outer_points() const;  // product of the kept (not reduced) extents
  std::int64_t inner_points() const;  // product of the reduced extents
};

// What code generation specializes a stride on: 0 (broadcast), 1 (unit
// stride) or 2 (any other value, read at run time).
constexpr int stride_kind(std::int64_t stride) { return stride == 0 ? 0 : stride == 1 ? 1 : 2; }

// Whether two kernels are the same: instructions, streams, outputs and
// scalars. `numbers` false leaves out what a plan made again at other
// numbers may change (extents, stride values but not their kinds, offsets,
// scalar values): the same code with other run-time numbers.
bool same_kernel(const Kernel& a, const Kernel& b, bool numbers);

// The same loop nest with fewer axes: extent-1 axes dropped, neighbouring
// axes merged where every stream walks them as one and both are reduced or
// both not; a reduction keeps a (trivial) reduced axis, and the result has at
// least `min_rank` axes. False, and *out untouched, when nothing changes. The
// host launcher collapses before it compiles (min_rank 0), CUDA before it
// renders (min_rank 1: a source never depends on which extents are 1).
bool collapse_axes(const Kernel& k, Kernel* out, std::size_t min_rank = 0);

// Rewrites arithmetic on half dtypes to f32: operands cast up, results of a
// half dtype cast back (one rounding per op, as base/semantics.hpp), half
// reductions accumulated in f32 and cast in phase 1. Kernels without half
// dtypes are left as they are.
void widen_halves(Kernel& k);

// The one kernel key: everything code generation depends on, as bytes
// (compared whole, so two structures never share a compiled kernel): rank,
// reduce axes, each stream's dtype, flags and the kind of every stride (0, 1
// or other), instructions, outputs, scalar dtypes, and `alias` (which output
// shares its input's memory: the host JIT's noalias facts). Never extents,
// stride values or scalar values. `contiguity` adds whether each stream is
// contiguous over the iteration space: the CUDA emitter's wide loads
// specialize on it, the host JIT's code does not (so it leaves it out and
// compiles once for both).
std::string kernel_key(const Kernel& k, const std::vector<int>& alias = {}, bool contiguity = false);

// A 64-bit digest of kernel_key(k, {}, true), for dumps and kernel names.
std::uint64_t structural_hash(const Kernel& k);

// Readable, deterministic text: "v3 = add f64 v1, v2".
std::string dump(const Kernel& k);

// What the profiler (base/profile.hpp) notes of a kernel: the ops it
// computes, in order (loads and constants left out), and its iteration space.
void profile_kernel(detail::prof::Event& e, const Kernel& k);

// What a backend keeps of a kernel it launches many times
// (exec::Backend::prepare_kernel): for a compiled function's program, and
// for a plan the plan cache keeps.
struct PreparedKernel {
  virtual ~PreparedKernel() = default;
};

// A kernel step of a cached plan, prepared once for every hit of the plan
// (opt/plan_cache.hpp makes the cell, the executor fills it on the plan's
// first hit, under the graph's lock).
struct PreparedCell {
  bool done = false;
  Device device;
  std::shared_ptr<const PreparedKernel> kernel;  // null: the backend keeps nothing
};

}  // namespace aj
