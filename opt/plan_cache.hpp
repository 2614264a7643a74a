// plan_cache: reuse the plan (Schedule + BufferPlan) of an earlier evaluation
// whose graph had the same structure, so a small call repeated in a loop does
// not run fuse and assign_buffers again.
//
// What it guarantees:
//  - A plan is reused as it is only for a graph that fuse and assign_buffers
//    cannot tell apart from the one it was made for, node ids aside; for a
//    graph of the same structure at other numbers (another batch size, a
//    slice at another start), fuse's decisions are reused and the numbers
//    made again from this graph (opt/materialize.hpp), unless a guard of
//    materialize fails (then it is planned from scratch). The key is the
//    canonical walk (inputs first, from the roots in order) of the graph after
//    simplify: per unevaluated node its op, dtype, shape, payload (but not the
//    values that reach kernels only as run-time scalars: a constant's value,
//    a generator's start, step or random key), inputs by walk position,
//    whether a user handle holds it, whether it looks like a C++ temporary
//    of the evaluated statement (fuse's TemporaryRule: held values are
//    stored, temporaries are not) and its exact reader count (donation and
//    liveness depend on them); per
//    evaluated leaf its dtype, shape, strides, offset, device, storage bytes,
//    read-only and lent flags (Storage::read_only, aj::lend), handle flag and reader count; and the roots by position.
//    simplify itself still runs on every call (it rewrites the user's nodes),
//    so the key describes exactly the graph the passes would see.
//  - A plan is stored with its program (opt/program.hpp), whose kernels are
//    prepared on its first run and stay prepared for every later hit. On a
//    hit the stored walk positions are mapped to this graph's node ids (the
//    program's values to their nodes) and every kernel scalar is read again
//    from the node it came from (ProgramStep::scalar_sources): where it
//    differs from the program's it is passed as a run-time override, so a
//    learning rate that changes every call hits.
//    Value-dependent rewrites (x * 1 is x, integer x + 0 is x, a constant
//    where) are made by simplify before the key is taken: a value of another
//    class gives another structure, so another plan; the run-time donation check (donation_applies) still runs for every
//    donation, so a storage shared since (use_count > 1) is never written.
//  - When verification is on (tests, debug builds) a hit also plans from
//    scratch and throws an internal error unless the two plans are identical
//    (or, for a plan made at other numbers whose partition fuse would choose
//    otherwise here, unless it passes the verifier: opt/materialize.hpp).
//  - Anything unusual is not cached: a pass switched off, a node the walk
//    does not reach named by the plan. Those evaluations plan from scratch.
//  - Bounded: at most kMaxEntries plans (the whole cache is dropped when full;
//    kernels compiled by the JIT are cached separately, by kernel structure).
//    clear() empties it; counters() counts hits and misses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "opt/passes/assign_buffers.hpp"
#include "opt/passes/fuse.hpp"
#include "opt/pipeline.hpp"

namespace aj::plan_cache {

inline constexpr std::size_t kMaxEntries = 256;
inline constexpr std::size_t kMaxVariants = 4;  // plans kept per structure, at different numbers

// The canonical structure of the unevaluated graph reachable from `roots`.
// Its numbers (every extent, every evaluated leaf's strides, offset and
// buffer size, slices' and pads' starts and steps) are not in the words: each
// is written as 0, 1, or the class of numbers equal to it (the first one of
// its value in the walk), so two graphs of one structure whose numbers are
// equal where the other's are have the same words. The values themselves are
// `numbers`, in walk order.
struct Key {
  std::vector<std::uint64_t> words;
  std::size_t hash = 0;
  std::vector<NodeId> nodes;  // walk position -> node id (unevaluated nodes and leaves)
  std::vector<std::int64_t> numbers;
};

// The returned key is valid until the next make_key call (its storage is
// reused, so a cache hit allocates nothing for it). `order`, when not empty:
// unevaluated_order(roots), which is the walk make_key makes (simplify hands
// over the one it walked).
const Key& make_key(const std::vector<NodeId>& roots, const std::vector<NodeId>& order = {});

// The stored plan for `key` into `*p`, with this graph's node ids: its
// program (shared), value nodes and scalar overrides, and of its schedule
// the roots, order and materializations; `whole` true: every field of the
// schedule and buffer plan too (for explaining, checking, or making another
// program of it). False on a miss.
bool lookup(const Key& key, opt::Plan* p, bool whole = true);

// Stores the plan just made for `key` (nothing when it names a node the key
// does not know), and points p->program at the stored program, whose kernel
// steps are prepared on their first run.
void insert(const Key& key, opt::Plan* p);

// The two plans are the same (every field, node ids included); else the
// first field that differs.
bool same_plan(const Schedule& a, const BufferPlan& ab, const Schedule& b, const BufferPlan& bb);
std::string plan_difference(const Schedule& a, const BufferPlan& ab, const Schedule& b, const BufferPlan& bb);

struct Counters {
  std::uint64_t hits = 0, misses = 0, entries = 0;
  std::uint64_t renumbered = 0;  // hits at other numbers (opt/materialize.hpp)
};
// Why the last plan of a known structure was not used at new numbers
// (materialize's guard), empty when none was refused.
std::string last_refusal();
Counters counters();
void clear();  // drops every stored plan; counters stay
void reset_counters();

// Off: every evaluation plans from scratch (AJ_PLAN_CACHE=0 starts it off).
void set_enabled(bool on);
bool enabled();

}  // namespace aj::plan_cache
