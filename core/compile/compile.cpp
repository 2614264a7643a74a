// aj::compile (arrayjit/compile.hpp): signatures, the programs kept per
// signature, tracing a call and replaying one.
//
// A call's signature is every array argument's dtype, shape, strides,
// offset, device and donation, and every scalar's kind and value (bits). A
// program (exec/program.hpp) is kept per signature; a call with a kept
// signature is replayed: its arguments' buffers are bound to the program's
// argument values and the steps run. For a scalar that reaches kernels
// unchanged, a program is also kept per signature with that scalar left
// out: the second trace with another value shows which kernel scalars follow
// the argument (exec::Program's scalar bindings), and later values replay.
//
// Extents (docs/extent-replays.md): per signature with the extents left out
// (0 and 1 stay in), the first trace's template is kept (compile/extents.hpp);
// a trace at other extents checks it, and from then on a call at new extents
// makes the template's nodes at its extents and evaluates them: no tracing.
// That evaluation's plan is the kept plan of the same structure with its
// numbers made again from the new shapes (the plan cache: opt/materialize.hpp),
// no planning. The program is kept under the call's full signature (at most
// kMaxPrograms, the least recently used dropped first).
#include "arrayjit/compile.hpp"

#include <bit>
#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/allocation_limit.hpp"
#include "base/log.hpp"
#include "base/stats.hpp"
#include "core/api/annotations.hpp"
#include "core/api/evaluate.hpp"
#include "core/api/observer.hpp"
#include "core/api/trace.hpp"
#include "core/compile/extents.hpp"
#include "exec/program.hpp"
#include "graph/dump.hpp"
#include "graph/host_call.hpp"
#include "opt/passes/assign_buffers.hpp"
#include "opt/plan_cache.hpp"

namespace aj::detail {

namespace {

using Key = std::vector<std::uint64_t>;

struct KeyHash {
  std::size_t operator()(const Key& k) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ull ^ k.size();
    for (std::uint64_t w : k) h = (h ^ w) * 0x100000001b3ull + (h >> 29);
    return static_cast<std::size_t>(h);
  }
};

// A kernel scalar that is a scalar argument's value (converted to the
// kernel scalar's dtype): replays with another value write it there.
struct ScalarBinding {
  int step = 0, scalar = 0;  // program step, index in its kernel's scalars
  int arg = 0;               // the call argument
};

struct Entry {
  std::shared_ptr<const exec::Program> program;
  std::vector<ScalarBinding> bindings;  // empty for an exact-scalar entry
  // Scalar arguments the program holds at one value (under the signature
  // without scalar values): (call argument, value). `1 - beta1^t` rounds to
  // 1 from some step on and `m / c1` is then simplified to `m`.
  std::vector<std::pair<int, Scalar>> pinned;
};

// Kept programs by signature, with the last one found: calls in a loop with
// one signature compare one key instead of hashing it and probing.
// At most `capacity` of them: putting one more drops the one found least
// recently (a loop over a few hundred batch sizes keeps them all; a function
// called at ever new extents keeps its latest).
class Programs {
 public:
  explicit Programs(std::size_t capacity) : capacity_(capacity) {}
  std::shared_ptr<const Entry> find(const Key& k) {
    if (last_ && k == last_key_) return last_;
    auto it = map_.find(k);
    if (it == map_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.second);  // now the most recent
    last_key_ = k;
    return last_ = it->second.first;
  }
  void put(const Key& k, std::shared_ptr<const Entry> e) {
    if (auto it = map_.find(k); it != map_.end()) {
      it->second.first = std::move(e);
      order_.splice(order_.begin(), order_, it->second.second);
      last_.reset();
      return;
    }
    if (map_.size() >= capacity_) {
      map_.erase(order_.back());
      order_.pop_back();
      ++evicted_;
    }
    order_.push_front(k);
    map_.emplace(k, std::make_pair(std::move(e), order_.begin()));
    last_.reset();
  }
  std::size_t size() const { return map_.size(); }
  std::uint64_t evicted() const { return evicted_; }

 private:
  std::size_t capacity_;
  std::list<Key> order_;  // most recently found first
  std::unordered_map<Key, std::pair<std::shared_ptr<const Entry>, std::list<Key>::iterator>, KeyHash> map_;
  Key last_key_;
  std::shared_ptr<const Entry> last_;
  std::uint64_t evicted_ = 0;
};

std::uint64_t bits(double d) { return std::bit_cast<std::uint64_t>(d); }

// Whether two kernel scalars are the same, bit for bit.
bool same_kernel_scalar(const KScalar& a, const KScalar& b) {
  return a.dtype == b.dtype && a.i == b.i && std::bit_cast<std::uint64_t>(a.f) == std::bit_cast<std::uint64_t>(b.f);
}

// A C++ scalar argument as a kernel scalar of dtype t (as tracing converts it).
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

// The nodes of array arguments, read under their graph's lock: one scope
// for each run of arguments of one graph (usually all of them).
class ArgNodes {
 public:
  const Node& operator()(const CallArg& a) {
    Graph& g = *a.array->graph_of();
    if (&g != locked_) {
      in_.reset();
      in_.emplace(g);
      locked_ = &g;
    }
    return g[a.array->node_id()];
  }

 private:
  Graph* locked_ = nullptr;
  std::optional<GraphScope> in_;
};

// A window: an array argument that is a view into a larger host buffer (a
// minibatch sliced from a dataset), not donated, with nonnegative strides.
// Programs see it as a buffer of its own (offset 0, the bytes it spans), so
// a loop over windows at other offsets replays one program. The bytes it
// spans, or 0 when the argument is not a window.
std::size_t window_bytes(const CallArg& a, const Node& n) {
  if (a.is_scalar || a.donated || !n.evaluated() || !n.storage->device.is_host() || n.numel() == 0) return 0;
  std::int64_t last = 0;
  for (int d = 0; d < n.shape.ndim(); ++d) {
    const std::int64_t st = n.strides[static_cast<std::size_t>(d)];
    if (st < 0) return 0;
    last += (n.shape[d] - 1) * st;
  }
  const std::size_t bytes = static_cast<std::size_t>(last + 1) * itemsize(n.dtype);
  return n.offset != 0 || n.storage->bytes != bytes ? bytes : 0;
}

// The window's memory as a buffer of its own (borrowed: never written or
// freed through it), holding the buffer it is a view of.
std::shared_ptr<Storage> window_storage(const Node& n, std::size_t bytes) {
  struct Window {
    Storage storage;
    std::shared_ptr<Storage> of;
  };
  auto w = std::make_shared<Window>();
  w->storage.data = static_cast<char*>(n.storage->data) + n.offset * static_cast<std::int64_t>(itemsize(n.dtype));
  w->storage.bytes = bytes;
  w->storage.device = n.storage->device;
  w->storage.borrowed = true;
  w->of = n.storage;
  return std::shared_ptr<Storage>(w, &w->storage);
}

}  // namespace

class CompiledCore {
 public:
  explicit CompiledCore(std::string where, std::optional<Loc> loc = std::nullopt, CompileOptions options = {})
      : where_(std::move(where)), loc_(loc), options_(std::move(options)),
        contract_(options_.max_allocations >= 0 || !options_.in_place.empty()) {}

  std::vector<Array> call(std::vector<CallArg>& args, const std::function<std::vector<Array>()>& trace);
  const std::string& where() const { return where_; }  // aj::compile's file:line
  CompiledCounts counts() const {
    std::lock_guard lock(mu_);
    CompiledCounts c = counts_;
    c.programs = exact_.size() + scalar_free_.size();
    c.evicted = exact_.evicted() + scalar_free_.evicted();
    return c;
  }
  std::string extents_note() const {
    std::lock_guard lock(mu_);
    if (scalars_note_.empty()) return extents_note_;
    return extents_note_.empty() ? scalars_note_ : extents_note_ + "; " + scalars_note_;
  }
  std::string plan_note() const {
    std::lock_guard lock(mu_);
    return plan_note_;
  }

 private:
  // The signature into `k`; `with_scalars` false leaves scalar values out
  // (kinds stay). Windows are written as buffers of their own (offset 0, the
  // bytes they span) unless `as_is`; `*shifted` (when given): whether a
  // window is at an offset other than 0.
  void signature(const std::vector<CallArg>& args, bool with_scalars, Key& k, bool as_is = false,
                 bool* shifted = nullptr) const;
  // The signature without extents (but which are 0 or 1) and layouts into `k`.
  void extent_free_signature(const std::vector<CallArg>& args, Key& k) const;
  // `counted`: in stats().compiled_replays.
  // `as_is`: the program reads windows at their offsets (kept by a trace).
  std::vector<Array> replay(const Entry& e, std::vector<CallArg>& args, bool counted = true, bool as_is = false);
  // What the extent-free signature `generic` has kept.
  struct Generic {
    std::shared_ptr<const extents::Template> first;    // the first trace's, not yet checked
    std::shared_ptr<const extents::Template> trusted;  // checked by a second trace
    bool refused = false;                              // this function cannot be generalized
  };
  std::vector<Array> trace_call(std::vector<CallArg>& args, const std::function<std::vector<Array>()>& trace,
                                const Key& exact, const Key& scalar_free, const Key& generic,
                                std::shared_ptr<const extents::Template> first,
                                std::shared_ptr<const extents::Template> trusted);
  // The template made at this call's extents and planned; false when its
  // guards fail here.
  // `scalar_free`: where the program is kept for any values of the scalar
  // arguments that reach its kernels as they are (empty: nowhere).
  bool run_template(const extents::Template& t, std::vector<CallArg>& args, const Key& exact, const Key& scalar_free,
                    std::vector<Array>* out, bool quiet);
  // Evaluates `local` (the results, arrays of this thread's graph) catching
  // the plan; the program it makes, prepared, or null.
  // `sources` (when given): each step's kernel scalar sources (nodes of
  // this evaluation's graph), which the program itself does not keep.
  std::shared_ptr<const exec::Program> evaluate_and_capture(const std::vector<NodeId>& arg_nodes, bool all_local,
                                                            const std::vector<Array>& local,
                                                            std::vector<std::vector<ScalarSource>>* sources = nullptr);
  void keep(const Key& exact, std::shared_ptr<const exec::Program> prog);  // mu_ held

  // Throws when options_.in_place names no array argument of this call.
  void check_positions(const std::vector<CallArg>& args) const;
  // Throws when this replay would break options_.in_place (before it runs:
  // nothing is taken). `values`: the arguments' buffers, bound.
  void check_in_place(const exec::Program& p, const std::vector<CallArg>& args, const exec::VectorValues& values) const;

  std::string where_;
  std::optional<Loc> loc_;  // aj::compile's, where there is one: errors evaluating arguments name it
  CompileOptions options_;
  bool contract_ = false;  // options_ ask for anything
  mutable std::mutex mu_;
  Programs exact_{kMaxPrograms};
  // Per signature without scalar values: the last program traced (to learn
  // bindings from the next trace), and an entry once bindings are known.
  std::unordered_map<Key, std::shared_ptr<const exec::Program>, KeyHash> last_trace_;
  std::unordered_map<Key, std::vector<Scalar>, KeyHash> last_scalars_;
  Programs scalar_free_{kMaxScalarFree};
  std::unordered_map<Key, Generic, KeyHash> generic_;
  std::string extents_note_;  // why calls at new extents trace, when they do
  std::string plan_note_;     // why the last call at new extents that was planned was not renumbered
  std::string scalars_note_;  // why calls with new scalar values trace, when they do
  CompiledCounts counts_;
  // Programs kept per compiled function, by exact signature and without
  // scalar values: enough for a loop over every batch size from 16 to 256.
  static constexpr std::size_t kMaxPrograms = 512, kMaxScalarFree = 512;
};

void CompiledCore::signature(const std::vector<CallArg>& args, bool with_scalars, Key& k, bool as_is,
                             bool* shifted) const {
  k.clear();
  if (shifted) *shifted = false;
  k.push_back(args.size());
  ArgNodes node_of;
  for (const CallArg& a : args) {
    if (a.is_scalar) {
      k.push_back(0x5ca1a0 + static_cast<std::uint64_t>(a.scalar.kind));
      if (with_scalars || a.structural) {
        k.push_back(static_cast<std::uint64_t>(a.scalar.i) ^ bits(a.scalar.f) ^ a.scalar.above_int64);
      }
      continue;
    }
    const Node& n = node_of(a);
    k.push_back(0xa77a7 + (static_cast<std::uint64_t>(n.dtype) << 8) + (a.donated ? 1u << 16 : 0u));
    k.push_back(static_cast<std::uint64_t>(n.storage->device.kind) << 32 | static_cast<std::uint32_t>(n.storage->device.index));
    k.push_back(static_cast<std::uint64_t>(n.shape.ndim()));
    for (auto d : n.shape) k.push_back(static_cast<std::uint64_t>(d));
    for (auto st : n.strides) k.push_back(static_cast<std::uint64_t>(st));
    const std::size_t window = as_is ? 0 : window_bytes(a, n);
    if (window) {
      if (shifted && n.offset != 0) *shifted = true;
      k.push_back(0);
      k.push_back(window);
      k.push_back(2u | n.storage->borrowed);
      continue;
    }
    k.push_back(static_cast<std::uint64_t>(n.offset));
    k.push_back(n.storage->bytes);
    k.push_back(n.storage->read_only() | static_cast<std::uint64_t>(n.storage->lent) << 1);
  }
}

void CompiledCore::extent_free_signature(const std::vector<CallArg>& args, Key& k) const {
  k.clear();
  k.push_back(args.size() | 0xe7e7ull << 32);
  ArgNodes node_of;
  for (const CallArg& a : args) {
    if (a.is_scalar) {  // values out: kernel constants that follow them are fitted
      k.push_back(0x5ca1a0 + static_cast<std::uint64_t>(a.scalar.kind));
      if (a.structural) k.push_back(static_cast<std::uint64_t>(a.scalar.i) ^ bits(a.scalar.f) ^ a.scalar.above_int64);
      continue;
    }
    const Node& n = node_of(a);  // its layout is left out too: the template is planned for it
    k.push_back(0xa77a7 + (static_cast<std::uint64_t>(n.dtype) << 8) + (a.donated ? 1u << 16 : 0u));
    k.push_back(static_cast<std::uint64_t>(n.storage->device.kind) << 32 | static_cast<std::uint32_t>(n.storage->device.index));
    k.push_back(static_cast<std::uint64_t>(n.shape.ndim()));
    for (auto d : n.shape) k.push_back(d <= 1 ? static_cast<std::uint64_t>(d) : 2u);
    k.push_back(n.storage->read_only() | static_cast<std::uint64_t>(n.storage->lent) << 1);
  }
}

// Donated handles are given up once the function's nodes exist (a vector
// passed as an rvalue keeps its elements: the function took the vector).
// Whether one handle holds node `id` and no node reads it (graph lock held).
static bool only_held(NodeId id) { return graph().ext_count(id) == 1 && graph()[id].uses == 0; }

static void give_up_donated(std::vector<CallArg>& args) {
  for (CallArg& a : args) {
    if (!a.donated || a.is_scalar || a.element) continue;
    if (a.array->valid()) Array given_up = std::move(*a.array);
    if (a.give_up) a.give_up(a.give_up_context, a.give_up_index);
  }
}

// The scalar arguments an extent-free signature leaves out, in order.
static std::vector<Scalar> changeable_scalars(const std::vector<CallArg>& args) {
  std::vector<Scalar> s;
  for (const CallArg& a : args) {
    if (a.is_scalar && !a.structural) s.push_back(a.scalar);
  }
  return s;
}

// Runs a kept program on this call's arguments; the results are new arrays
// of this thread's graph.
std::vector<Array> CompiledCore::replay(const Entry& e, std::vector<CallArg>& args, bool counted, bool as_is) {
  const exec::Program& p = *e.program;
  // This thread's buffers, their memory reused (a replay allocates no
  // vectors but its results'); emptied however the replay ends, so no
  // storage stays referenced from here.
  thread_local exec::VectorValues values;
  thread_local std::vector<exec::ScalarOverride> overrides;
  struct Empty {
    ~Empty() { values.storage.clear(), overrides.clear(); }
  } empty_after;
  values.storage.assign(static_cast<std::size_t>(p.values), nullptr);
  std::size_t next = 0;  // program values 0 .. args-1 are the array arguments, in order
  {
    ArgNodes node_of;
    for (const CallArg& a : args) {
      if (a.is_scalar) continue;
      const Node& n = node_of(a);
      const std::size_t window = as_is ? 0 : window_bytes(a, n);
      values.storage[next++] = window ? window_storage(n, window) : n.storage;
    }
  }
  if (!options_.in_place.empty()) check_in_place(p, args, values);
  for (CallArg& a : args) {
    if (!a.donated || a.is_scalar) continue;
    Array given_up = std::move(*a.array);  // its buffer may now be ours alone
    if (a.give_up) a.give_up(a.give_up_context, a.give_up_index);
  }
  // This call's scalar values (bindings are sorted by step).
  overrides.reserve(e.bindings.size());
  for (const ScalarBinding& b : e.bindings) {
    const KScalar& slot = p.steps[static_cast<std::size_t>(b.step)].kernel.scalars[static_cast<std::size_t>(b.scalar)];
    overrides.push_back({b.step, b.scalar, as_kernel_scalar(args[static_cast<std::size_t>(b.arg)].scalar, slot.dtype)});
  }
  if (options_.max_allocations >= 0) {
    // Buffers from the system are counted, and the one over the limit refused.
    struct Limit final : AllocationLimit {
      const CompiledCore& core;
      const exec::Program& program;
      std::int64_t left;
      AllocationLimit* outer;
      Limit(const CompiledCore& c, const exec::Program& p, std::int64_t n) : core(c), program(p), left(n), outer(allocation_limit()) {
        allocation_limit() = this;
      }
      ~Limit() override { allocation_limit() = outer; }
      void before(std::size_t bytes) override {
        if (left-- > 0) return;
        const int k = exec::current_step();
        const std::string where = k >= 0 && static_cast<std::size_t>(k) < program.step_where.size()
                                      ? "step " + std::to_string(k) + ", the " + program.step_where[static_cast<std::size_t>(k)]
                                      : "a step";
        throw Error(Error::Kind::user,
                    "aj::compile: a call of the function compiled at " + core.where_ + " would take a buffer of " +
                        std::to_string(bytes) + " bytes from the system at " + where + ", over its max_allocations = " +
                        std::to_string(core.options_.max_allocations) +
                        " (the pool held no free buffer of that size: an array from an earlier call still holds one, "
                        "or a result is not written in place; aj::explain on the function's results shows its plan); "
                        "the call stopped there (at " + core.where_ + ")");
      }
    } limit(*this, p, options_.max_allocations);
    exec::run_program(p, backend_for(p.device), values, overrides);
  } else {
    exec::run_program(p, backend_for(p.device), values, overrides);
  }
  if (counted) ++stats_mut().compiled_replays;
  trace::Scope scope;
  std::vector<Array> out;
  out.reserve(p.results.size());
  for (std::size_t r = 0; r < p.results.size(); ++r) {
    std::shared_ptr<Storage>& v = values.storage[static_cast<std::size_t>(p.results[r])];
    out.push_back(Array::from_node(graph().add_leaf(p.result_dtypes[r], p.result_shapes[r], v,
                                                    p.result_layouts[r].strides, p.result_layouts[r].offset)));
  }
  return out;
}

void CompiledCore::check_positions(const std::vector<CallArg>& args) const {
  int positions = 0;
  for (const CallArg& a : args) positions = std::max(positions, a.position + 1);
  for (int want : options_.in_place) {
    if (want >= positions) {
      throw Error(Error::Kind::user, "aj::compile: in_place names argument " + std::to_string(want) + "; the function compiled at " +
                                         where_ + " was called with " + std::to_string(positions) + " (at " + where_ + ")");
    }
    for (const CallArg& a : args) {
      if (a.position == want && a.is_scalar && !a.structural) {
        throw Error(Error::Kind::user, "aj::compile: in_place names argument " + std::to_string(want) + ", a scalar (at " + where_ + ")");
      }
    }
  }
}

void CompiledCore::check_in_place(const exec::Program& p, const std::vector<CallArg>& args,
                                  const exec::VectorValues& values) const {
  for (int want : options_.in_place) {
    int value = 0;  // the program value of each array argument, in order
    ArgNodes node_of;
    for (const CallArg& a : args) {
      if (a.is_scalar) continue;
      const int v = value++;
      if (a.position != want) continue;
      const Node& n = node_of(a);
      // (An array a compiled call returned has no line of its own.)
      const std::string made = n.loc.line() ? ", made at " + loc_str(n.loc) : std::string(", a result of a compiled call");
      const std::string what = "argument " + std::to_string(want) + " (" + describe(n.dtype, n.shape) + made + ")";
      auto broken = [&](const std::string& why) {
        throw Error(Error::Kind::user, "aj::compile: in_place: " + what + " would not be written in place: " + why +
                                           "; nothing was run and no argument taken (the function compiled at " + where_ + ")");
      };
      if (!a.donated) broken("it is not donated (pass it as std::move(x) or aj::donate(x))");
      const std::shared_ptr<Storage>& s = values.storage[static_cast<std::size_t>(v)];
      if (s->read_only()) broken(n.storage->read_only() ? "it is borrowed memory (never written): aj::lend lends memory for writing" : "it is a view into a larger buffer");
      // Held by the argument's node and by this replay's values; the node by the caller's handle only.
      // (The C API's caller handle is one more, released when the call takes it.)
      const std::uint32_t own = a.give_up ? 2 : 1;
      if (a.array->graph_of()->ext_count(a.array->node_id()) > own) {
        broken("another handle to it is still alive (drop it, or move it into the call)");
      }
      if (n.uses > 0) broken("a lazy array made from it still reads it (evaluate or drop that array first)");
      if (s.use_count() > 2) broken("its buffer is shared with another array (a view of it, or a copy of its handle)");
      const std::string& why = static_cast<std::size_t>(v) < p.not_in_place.size() ? p.not_in_place[static_cast<std::size_t>(v)]
                                                                                    : std::string();
      if (!why.empty()) broken(why);
    }
  }
}

namespace {

// "matmul at f.cpp:12": node `id`'s op and the user's line.
std::string op_at(NodeId id) {
  const Node& n = graph()[id];
  return std::string(op_name(n.op)) + " at " + loc_str(n.loc);
}

// Why the planner did not write `out` (a step's output) in place of `input`.
std::string refusal_text(const NotInPlace& r, NodeId out) {
  using W = NotInPlace::Why;
  const Graph& g = graph();
  const std::string by = "the " + op_at(out);
  switch (r.why) {
    case W::taken: return "its buffer went to " + op_at(r.other) + ", which is no result";
    case W::other_index: return by + " reads it at another index or layout than it writes (a transposed, shifted or broadcast read)";
    case W::item_size:
      return by + " makes " + std::to_string(itemsize(g[out].dtype)) + "-byte elements from its " +
             std::to_string(itemsize(g[r.input].dtype)) + "-byte ones (a dtype change)";
    case W::sizes_differ: return by + " makes a result of another size (a broadcast or a reduction)";
    case W::borrowed: return "it is borrowed memory (never written)";
    case W::view: return "it is a view: its storage belongs to another array";
    case W::shared: return "its storage is shared with another array";
    case W::held: return "a handle made at " + loc_str(g[r.input].loc) + " still holds it";
    case W::read_outside: return "a node outside the function reads it";
    case W::root: return "it is itself a result of the function";
    case W::later_reader:
      return (r.other == kNoNode ? std::string("a later step") : "the " + op_at(r.other)) + " reads it after " + by;
  }
  return "not in place";
}

// Per bound value of `prog` (made from plan `p`; `value_nodes`: the node of
// each value): why no result takes over its buffer ("" when one does,
// through a chain of steps each writing in place of the one before).
std::vector<std::string> not_in_place_reasons(const opt::Plan& p, const exec::Program& prog,
                                              const std::vector<NodeId>& value_nodes) {
  std::vector<std::string> out(static_cast<std::size_t>(prog.bound));
  const std::vector<NotInPlace> refused = not_in_place(p.schedule, p.buffers);
  auto is_result = [&](int v) { return std::find(prog.results.begin(), prog.results.end(), v) != prog.results.end(); };
  for (int a = 0; a < prog.bound; ++a) {
    int v = a;
    for (bool moved = true; moved && !is_result(v);) {
      moved = false;
      for (const exec::ProgramStep& st : prog.steps) {
        for (std::size_t j = 0; j < st.donors.size() && !moved; ++j) {
          if (st.donors[j] == v && (st.into.size() <= j || st.into[j] < 0)) v = st.outputs[j], moved = true;
        }
        if (moved) break;
      }
    }
    if (is_result(v)) continue;
    const NodeId node = static_cast<std::size_t>(v) < value_nodes.size() ? value_nodes[static_cast<std::size_t>(v)] : kNoNode;
    std::string why;
    if (v != a) why = "its buffer went to the " + (node == kNoNode ? std::string("step") : op_at(node)) + ", and then ";
    // The planner's reasons, the most telling first.
    const NotInPlace* best = nullptr;
    auto rank = [](NotInPlace::Why w) {
      using W = NotInPlace::Why;
      switch (w) {
        case W::other_index: case W::item_size: case W::sizes_differ: return 0;
        case W::borrowed: case W::view: case W::shared: return 1;
        case W::taken: case W::later_reader: case W::root: case W::read_outside: return 2;
        case W::held: return 3;
      }
      return 4;
    };
    for (const NotInPlace& r : refused) {
      if (r.input == node && (!best || rank(r.why) < rank(best->why))) best = &r;
    }
    if (best) {
      const NodeId o = p.schedule.steps[static_cast<std::size_t>(best->step)].outputs[static_cast<std::size_t>(best->output)];
      out[static_cast<std::size_t>(a)] = why + refusal_text(*best, o);
      continue;
    }
    // A kernel reading it wrote its outputs over other inputs' buffers.
    std::string other;
    for (const Donation& d : p.buffers.donations) {
      const Step& st = p.schedule.steps[static_cast<std::size_t>(d.step)];
      if (d.from != node && st.kind == Step::Kind::kernel && std::find(st.inputs.begin(), st.inputs.end(), node) != st.inputs.end()) {
        other = "the kernel reading it (step " + std::to_string(d.step) + ") wrote the " + op_at(d.to) +
                " over the buffer of another input, the " + op_at(d.from);
        break;
      }
    }
    if (!other.empty()) {
      out[static_cast<std::size_t>(a)] = why + other;
      continue;
    }
    // No kernel could have taken it: read by a library step only, or by nothing.
    std::string reader;
    for (const Step& st : p.schedule.steps) {
      if (st.kind != Step::Kind::library) continue;
      const auto& in = graph()[st.node].inputs;
      if (std::find(in.begin(), in.end(), node) != in.end()) {
        reader = op_at(st.node);
        break;
      }
    }
    out[static_cast<std::size_t>(a)] =
        why + (reader.empty() ? std::string("no step of the function writes a result in place of it")
                              : "it is read by the library step " + reader + ", which writes a new buffer");
  }
  return out;
}

// Collects the plan of the results' evaluation into a program.
struct Capture final : EvalObserver {
  const std::vector<NodeId>* args = nullptr;
  const std::vector<NodeId>* results = nullptr;
  std::unique_ptr<exec::Program> program;
  std::vector<std::vector<ScalarSource>>* sources = nullptr;  // when given: each step's, taken out
  bool contract = false;  // CompileOptions: what a broken contract names is kept
  void planned(const opt::Plan& p, Device device) override {
    std::vector<NodeId> value_nodes;
    program = opt::make_program(p, *args, *results, device, /*capture_leaves=*/true, contract ? &value_nodes : nullptr);
    if (!program) return;
    // The host callbacks it runs (graph/host_call.hpp), held now: the nodes
    // holding them are swept when this evaluation ends, and a callback made
    // inside the traced function (the C API's, Python's) has no other owner.
    for (const exec::ProgramStep& st : program->steps) {
      if (st.call.op == Op::HostCall) program->kept.push_back(host_function(st.call.host));
    }
    if (contract) {
      program->not_in_place = not_in_place_reasons(p, *program, value_nodes);
      for (const exec::ProgramStep& st : program->steps) {
        const int v = st.outputs.empty() ? -1 : st.outputs[0];
        const NodeId n = v >= 0 && static_cast<std::size_t>(v) < value_nodes.size() ? value_nodes[static_cast<std::size_t>(v)] : kNoNode;
        program->step_where.push_back(n == kNoNode ? std::string("a step") : op_at(n));
      }
    }
    // Its scalars' sources name nodes of the trace's graph: a replay takes
    // its scalar arguments through its bindings instead.
    if (sources) sources->clear();
    for (opt::ProgramStep& st : program->steps) {
      if (sources) sources->push_back(std::move(st.scalar_sources));
      st.scalar_sources.clear();
    }
  }
};

// Clears the thread's evaluation hook however the evaluation ends.
struct HookGuard {
  ~HookGuard() { set_eval_observer(nullptr); }
};

// What aj::compile hears while its function is traced (core/api/observer.hpp):
// extents the function read in C++ (it may have branched on them), the
// constants the library made from extents, and evaluations, which it refuses
// (a replay would not read the values again).
class TraceWatch final : public trace::Observer {
 public:
  explicit TraceWatch(const std::string& where) : where_(where) {}
  void shape_read() override { ++reads; }
  void extent_constant(NodeId id) override { extent_constants.push_back(id); }
  // Held until the template is captured: an op whose result the function
  // drops is part of the template too (a call at new extents must fail
  // where the function would), and would be freed by then.
  void made(NodeId id) override { made_arrays.push_back(Array::from_node(id)); }
  void slice(NodeId id, const std::vector<Slice>& given) override { slices.emplace_back(id, given); }
  void evaluating(const std::vector<NodeId>&, const Loc&) override {
    throw Error(Error::Kind::user,
                "aj::compile: the function compiled at " + where_ +
                    " evaluated an array it made while being traced (eval, item, to_vector, printing): a "
                    "compiled function may not read values, since its replays would not read them again; "
                    "return the array instead, or do not compile this function");
  }
  std::uint64_t reads = 0;
  std::vector<NodeId> extent_constants;
  std::vector<Array> made_arrays;
  extents::SliceSpecs slices;

 private:
  const std::string& where_;
};

// Kernel scalars that differ between two programs of one structure, each
// tied to the one scalar argument whose new value it equals; false when a
// difference is not an argument's value (the function computed with it) or
// the programs differ in structure.
bool learn_bindings(const exec::Program& before, const exec::Program& after, const std::vector<Scalar>& old_args,
                    const std::vector<CallArg>& args, std::vector<ScalarBinding>* out) {
  if (before.steps.size() != after.steps.size() || before.values != after.values) return false;
  for (std::size_t k = 0; k < after.steps.size(); ++k) {
    const exec::ProgramStep &x = before.steps[k], &y = after.steps[k];
    if (x.kind != y.kind || x.inputs != y.inputs || x.outputs != y.outputs) return false;
    if (x.kind != exec::ProgramStep::Kind::kernel) continue;
    if (x.kernel.scalars.size() != y.kernel.scalars.size() || x.kernel.instrs.size() != y.kernel.instrs.size()) {
      return false;
    }
    for (std::size_t i = 0; i < y.kernel.scalars.size(); ++i) {
      const KScalar &a = x.kernel.scalars[i], &b = y.kernel.scalars[i];
      if (same_kernel_scalar(a, b)) continue;
      int found = -1;
      for (std::size_t j = 0; j < args.size(); ++j) {
        if (!args[j].is_scalar || args[j].structural) continue;
        if (same_kernel_scalar(as_kernel_scalar(args[j].scalar, b.dtype), b) &&
            same_kernel_scalar(as_kernel_scalar(old_args[j], a.dtype), a)) {
          if (found >= 0) return false;  // two arguments would fit: ambiguous
          found = static_cast<int>(j);
        }
      }
      if (found < 0) return false;
      out->push_back({static_cast<int>(k), static_cast<int>(i), found});
    }
  }
  return true;
}

}  // namespace

std::shared_ptr<const exec::Program> CompiledCore::evaluate_and_capture(const std::vector<NodeId>& arg_nodes,
                                                                       bool all_local,
                                                                       const std::vector<Array>& local,
                                                                       std::vector<std::vector<ScalarSource>>* sources) {
  std::vector<NodeId> result_nodes;
  for (const Array& r : local) result_nodes.push_back(r.node_id());
  // Arguments of another graph than this thread's (or not among the plan's
  // leaves) simply leave the program unmade: those calls are traced.
  Capture capture;
  capture.args = &arg_nodes;
  capture.results = &result_nodes;
  capture.sources = sources;
  capture.contract = contract_;
  std::vector<NodeId> roots;
  for (NodeId r : result_nodes) {
    if (!graph()[r].evaluated()) roots.push_back(r);
  }
  {
    HookGuard guard;
    if (all_local) set_eval_observer(&capture);
    if (!roots.empty()) {
      ++stats_mut().evals;
      evaluate(roots);
    } else if (all_local) {
      // Nothing to run: the results are arguments or captured arrays.
      capture.planned(opt::Plan{}, Device::cpu());
    }
  }
  if (!capture.program) return nullptr;
  exec::prepare_program(*capture.program, backend_for(capture.program->device));
  return std::move(capture.program);
}

void CompiledCore::keep(const Key& exact, std::shared_ptr<const exec::Program> prog) {
  if (last_trace_.size() >= kMaxScalarFree) {  // (what bindings are learnt from)
    last_trace_.clear();
    last_scalars_.clear();
  }
  exact_.put(exact, std::make_shared<const Entry>(Entry{std::move(prog), {}, {}}));
}

// The bindings of the kernel scalars of `prog` that are scalar arguments,
// from what instantiate made (`made`: node, scalar argument or -2 for a node
// computed from one, -1). False when a kernel scalar comes from a node
// computed from a scalar argument or from a node instantiate did not make
// (a value the planner folded): its value would not follow the argument.
// `pinned`: the scalar arguments that reach no kernel as they are.
bool bind_scalars(const exec::Program& prog, const std::vector<std::vector<ScalarSource>>& sources,
                  const std::vector<std::pair<NodeId, int>>& made, const std::vector<CallArg>& args,
                  std::vector<ScalarBinding>* out, std::vector<std::pair<int, Scalar>>* pinned) {
  std::unordered_map<NodeId, int> of;
  for (const auto& [id, k] : made) {
    auto [it, fresh] = of.emplace(id, k);
    if (!fresh && it->second != k) it->second = -2;  // one node, two roles
  }
  std::vector<int> arg_of;  // scalar argument -> call argument
  for (std::size_t j = 0; j < args.size(); ++j) {
    if (args[j].is_scalar && !args[j].structural) arg_of.push_back(static_cast<int>(j));
  }
  for (std::size_t k = 0; k < prog.steps.size(); ++k) {
    const exec::ProgramStep& st = prog.steps[k];
    if (st.kind != exec::ProgramStep::Kind::kernel) continue;
    if (k >= sources.size()) return false;
    for (std::size_t j = 0; j < sources[k].size(); ++j) {
      const ScalarSource& src = sources[k][j];
      if (src.field == ScalarSource::fixed) continue;
      auto it = of.find(src.node);
      if (it == of.end() || it->second == -2) return false;
      if (it->second < 0) continue;
      if (src.field != ScalarSource::constant) return false;
      out->push_back({static_cast<int>(k), static_cast<int>(j), arg_of[static_cast<std::size_t>(it->second)]});
    }
  }
  // A scalar argument that reaches no kernel as it is (a flag the function
  // branched on, a value the planner simplified with) keeps its value.
  for (int a : arg_of) {
    if (std::none_of(out->begin(), out->end(), [a](const ScalarBinding& b) { return b.arg == a; })) {
      pinned->emplace_back(a, args[static_cast<std::size_t>(a)].scalar);
    }
  }
  return true;
}

bool CompiledCore::run_template(const extents::Template& t, std::vector<CallArg>& args, const Key& exact,
                                const Key& scalar_free, std::vector<Array>* out, bool quiet) {
  for (const CallArg& a : args) {
    if (!a.is_scalar && a.array->graph_of() != &graph()) return false;
  }
  trace::Scope scope;
  // Windows as leaves of their own buffers (the program is kept for every
  // offset of them).
  std::vector<NodeId> arg_nodes;
  std::vector<Array> windows;
  for (const CallArg& a : args) {
    if (a.is_scalar) continue;
    const Node& n = graph()[a.array->node_id()];
    const std::size_t window = window_bytes(a, n);
    if (!window) {
      arg_nodes.push_back(a.array->node_id());
      continue;
    }
    windows.push_back(Array::from_node(graph().add_leaf(n.dtype, n.shape, window_storage(n, window), n.strides, 0)));
    arg_nodes.push_back(windows.back().node_id());
  }
  std::vector<Array> local;
  std::string why;
  std::vector<std::pair<NodeId, int>> made;
  if (!extents::instantiate(t, arg_nodes, changeable_scalars(args), &local, &why, &made)) {
    if (!quiet) {
      std::lock_guard lock(mu_);
      extents_note_ = "traced again at new extents: " + why;
    }
    return false;
  }
  // A donated argument the template does not read is freed when given up:
  // its id is forgotten (evaluation may make a node of that id).
  {
    std::size_t k = 0;
    for (const CallArg& a : args) {
      if (a.is_scalar) continue;
      if (a.donated && !a.element && only_held(arg_nodes[k])) arg_nodes[k] = kNoNode;
      ++k;
    }
  }
  give_up_donated(args);  // as after a trace
  ++stats_mut().compiled_new_extents;
  const std::uint64_t built = stats_mut().plans_built.get();
  std::vector<std::vector<ScalarSource>> sources;
  std::shared_ptr<const exec::Program> prog = evaluate_and_capture(arg_nodes, true, local, &sources);
  // Its plan: a kept one (at these numbers, or its numbers made again), or
  // planned anew.
  const bool unplanned = stats_mut().plans_built.get() == built;
  if (unplanned) ++stats_mut().compiled_unplanned;
  // The kernel scalars that are scalar arguments: the program replays at
  // any values of them (under the signature without scalar values).
  std::vector<ScalarBinding> bindings;
  std::vector<std::pair<int, Scalar>> pinned;
  const bool bound =
      prog && !scalar_free.empty() && bind_scalars(*prog, sources, made, args, &bindings, &pinned) && !bindings.empty();
  {
    std::lock_guard lock(mu_);
    if (prog) keep(exact, prog);
    if (bound) {
      scalar_free_.put(scalar_free, std::make_shared<const Entry>(Entry{prog, std::move(bindings), std::move(pinned)}));
    }
    ++counts_.new_extents;
    counts_.unplanned += unplanned;
    if (!unplanned) {
      const std::string why = plan_cache::last_refusal();
      plan_note_ = why.empty() ? "no plan of this structure was kept (the plan cache was off, full or cleared)"
                               : "the kept plan does not hold at these extents: " + why;
    }
  }
  *out = std::move(local);
  return true;
}

std::vector<Array> CompiledCore::trace_call(std::vector<CallArg>& args, const std::function<std::vector<Array>()>& trace,
                                            const Key& exact, const Key& scalar_free, const Key& generic,
                                            std::shared_ptr<const extents::Template> first,
                                            std::shared_ptr<const extents::Template> trusted) {
  // What the program needs of the arguments is read now: once the function
  // has run, a vector argument passed as an rvalue is gone.
  // The arguments are held until the template is captured: a function that
  // drops a donated argument would free its node, and the id could name a
  // node the function makes next.
  std::vector<NodeId> arg_nodes;
  std::vector<Array> held;
  bool all_local = true;
  for (const CallArg& a : args) {
    if (a.is_scalar) continue;
    arg_nodes.push_back(a.array->node_id());
    held.push_back(*a.array);
    all_local &= a.array->graph_of() == &graph();
  }
  std::vector<Array> results;
  TraceWatch watch(where_);
  {
    trace::Observing observing(watch);
    results = trace();
  }
  // Donated handles are given up now. The elements of a vector passed as an
  // rvalue are not touched: the function took the vector (its elements are
  // gone with it, or are the function's to keep).
  give_up_donated(args);
  ++stats_mut().compiled_traces;
  // The results as arrays of this thread's graph, evaluated with the plan caught.
  trace::Scope scope;
  std::vector<Array> local;
  std::vector<NodeId> result_nodes;
  for (const Array& r : results) {
    local.push_back(trace::local(r, "compile", Loc::current()));
    result_nodes.push_back(local.back().node_id());
  }
  // The template of this trace, and what it says of the one kept before.
  {
    std::string why;
    std::shared_ptr<extents::Template> mine;
    if (!all_local) why = "arguments of another thread's graph";
    else if (watch.reads) why = "the function read an extent in C++ (shape() or size()) while traced";
    else {
      std::vector<NodeId> made;
      for (const Array& a : watch.made_arrays) made.push_back(a.node_id());
      mine = extents::capture(arg_nodes, changeable_scalars(args), result_nodes, made, watch.extent_constants, watch.slices, &why);
    }
    // (Held, the dropped ops would be kept alive and stored by the plan, and
    // the arguments could not be donated.)
    watch.made_arrays.clear();
    // The results are evaluated next: the custom derivative rules they reach
    // are spent, and so are those of outputs just freed (the loss grad
    // dropped); what those hold (a custom function's arguments) must not
    // count as handles when the arguments' fate is read below.
    trace::drop_annotations(result_nodes);
    for (std::size_t k = 0; k < held.size(); ++k) {
      if (held[k].graph_of() == &graph() && only_held(arg_nodes[k])) arg_nodes[k] = kNoNode;  // freed now
    }
    held.clear();
    std::shared_ptr<extents::Template> checked;
    if (mine && first && !extents::extents_differ(*first, *mine)) first.reset();  // nothing new to learn
    if (mine && first) {
      checked = extents::copy(*first);
      if (!extents::validate(*checked, *mine, &why)) checked.reset();
    }
    // The kept template refused this call: if only for a scalar its two
    // traces shared, this trace may show that the scalar is followed.
    std::shared_ptr<extents::Template> widened;
    if (mine && trusted && !first) {
      std::string unused;
      widened = extents::copy(*trusted);
      if (!extents::widen(*widened, *mine, &unused)) widened.reset();
    }
    std::lock_guard lock(mu_);
    Generic& gen = generic_[generic];
    if (widened) {
      if (gen.trusted == trusted) {
        gen.trusted = std::move(widened);
        // (The note said why this call was traced: it no longer holds.)
        extents_note_ = "a scalar argument the kept trace held fixed is followed since a call with another "
                        "value traced the same graph";
      }
    } else if (!mine || (first && !checked)) {
      // (A trace at the first's extents, first reset above, changes nothing.)
      gen.refused = true;
      gen.first.reset();
      extents_note_ = "calls at new extents are traced: " + why;
    } else if (checked) {
      gen.trusted = std::move(checked);
      gen.first.reset();
    } else if (!gen.first && !gen.trusted && !gen.refused) {
      gen.first = std::move(mine);
    }
  }
  std::shared_ptr<const exec::Program> prog = evaluate_and_capture(arg_nodes, all_local, local);
  if (prog) {
    std::vector<Scalar> scalars;
    for (const CallArg& a : args) scalars.push_back(a.scalar);
    std::lock_guard lock(mu_);
    keep(exact, prog);
    if (scalar_free.empty()) return local;  // (a program of windows at their offsets)
    // Learn which kernel scalars follow scalar arguments from the trace before.
    auto last = last_trace_.find(scalar_free);
    if (last != last_trace_.end() && exact != scalar_free) {
      std::vector<ScalarBinding> bindings;
      if (learn_bindings(*last->second, *prog, last_scalars_[scalar_free], args, &bindings) && !bindings.empty()) {
        scalar_free_.put(scalar_free, std::make_shared<const Entry>(Entry{prog, std::move(bindings), {}}));
      } else if (scalars_note_.empty()) {
        // Said once: every call with new scalar values will be traced.
        scalars_note_ = "calls with new values of the scalar arguments are traced: a kernel constant changed "
                        "between two traces that is none of the scalar arguments as they are (the function "
                        "computes with them, as lr * (1 + t) or 1 - beta1^t in C++: take them as aj::Array "
                        "parameters, which are passed as weak arrays (aj::scalar) whose arithmetic replays, or "
                        "pass the computed value as the argument)";
        log("compile", "aj::compile at " + where_ + ": " + scalars_note_);
      }
    }
    last_trace_[scalar_free] = prog;
    last_scalars_[scalar_free] = std::move(scalars);
  }
  return local;
}

std::vector<Array> CompiledCore::call(std::vector<CallArg>& args, const std::function<std::vector<Array>()>& trace) {
  // Inside another compiled function's trace, or while grad/vjp/jvp trace
  // their function, the ops are recorded inline (a replay here would run now
  // and its results would be taken as constants).
  if (trace::observed()) return trace();
  if (!options_.in_place.empty()) check_positions(args);
  // Arguments are evaluated first (together: one plan): a program starts
  // from buffers.
  std::vector<Array> pending;
  {
    ArgNodes node_of;
    for (CallArg& a : args) {
      if (a.is_scalar) continue;
      if (!a.array->valid()) {
        throw Error(Error::Kind::user, "aj::compile: an empty Array handle (default-constructed or moved-from) "
                                       "passed to the function compiled at " + where_);
      }
      if (!node_of(a).evaluated()) pending.push_back(*a.array);
    }
  }
  if (!pending.empty()) loc_ ? aj::eval(pending, *loc_) : aj::eval(pending);
  // The keys are built in this thread's buffers (a replay allocates none).
  thread_local Key exact, scalar_free;
  bool has_scalars = false;
  for (const CallArg& a : args) has_scalars |= a.is_scalar && !a.structural;
  // The signatures are read outside mu_ (they lock the arguments' graph,
  // which trace_call holds while it takes mu_); a hit takes mu_ once.
  std::shared_ptr<const Entry> hit;
  if (has_scalars) {
    // Scalars whose kernel slots are known replay whatever their values.
    signature(args, false, scalar_free);
    std::lock_guard lock(mu_);
    hit = scalar_free_.find(scalar_free);
    if (hit) {
      for (const auto& [a, v] : hit->pinned) {
        if (!extents::same_scalar(args[static_cast<std::size_t>(a)].scalar, v)) hit = nullptr;
        if (!hit) break;
      }
    }
    if (hit) ++counts_.replays;
  }
  bool shifted = false;
  if (!hit) {
    signature(args, true, exact, false, &shifted);
    std::lock_guard lock(mu_);
    hit = exact_.find(exact);
    if (hit) ++counts_.replays;
  }
  // A trace's program reads windows at the offsets it was traced at: kept
  // under their offsets (a function whose calls are all traced replays its
  // second epoch over the same batches).
  thread_local Key as_is;
  bool hit_as_is = false;
  if (!hit && shifted) {
    signature(args, true, as_is, true);
    std::lock_guard lock(mu_);
    hit = exact_.find(as_is);
    if (hit) ++counts_.replays, hit_as_is = true;
  }
  if (hit) return replay(*hit, args, true, hit_as_is);
  // Copies: the function being traced may call compiled functions itself.
  const Key exact_key = exact, scalar_free_key = has_scalars ? scalar_free : exact;
  const Key traced_key = shifted ? as_is : exact;
  // New extents: the kept trace, made again at these extents, once checked.
  Key generic;
  extent_free_signature(args, generic);
  std::shared_ptr<const extents::Template> trusted, first;
  {
    std::lock_guard lock(mu_);
    auto it = generic_.find(generic);
    if (it != generic_.end()) trusted = it->second.trusted, first = it->second.first;
  }
  // (A template not yet checked serves calls at its own extents, arguments
  // of another layout: a minibatch view at another offset.)
  if (trusted || first) {
    const extents::Template& t = trusted ? *trusted : *first;
    std::vector<Array> out;
    if (run_template(t, args, exact_key, has_scalars ? scalar_free_key : Key{}, &out, !trusted)) return out;
  }
  {
    std::lock_guard lock(mu_);
    ++counts_.traces;
  }
  return trace_call(args, trace, traced_key, shifted ? Key{} : scalar_free_key, generic, std::move(first), std::move(trusted));
}

std::shared_ptr<CompiledCore> make_compiled_core(Loc where, CompileOptions options) {
  for (int a : options.in_place) {
    if (a < 0) user_error("compile", "in_place names argument " + std::to_string(a) + " (positions start at 0)", where);
  }
  if (options.max_allocations < -1) {
    user_error("compile", "max_allocations " + std::to_string(options.max_allocations) + " (-1 for no limit)", where);
  }
  return std::make_shared<CompiledCore>(loc_str(where), where, std::move(options));
}
std::shared_ptr<CompiledCore> make_compiled_core(std::string name, CompileOptions options) {
  return std::make_shared<CompiledCore>(std::move(name), std::nullopt, std::move(options));
}

namespace {
// What the failed call made is unwound; the kept programs are as before.
// The line is aj::compile's: a call has no location of its own.
[[noreturn]] void compiled_out_of_memory(const CompiledCore& core, const std::string& reason) {
  throw Error(Error::Kind::runtime, "aj::compile: " + reason + " calling the function compiled at " + core.where() +
                                        "; arrays made before are unchanged (at " + core.where() + ")");
}
}  // namespace

void compiled_out_of_memory(const CompiledCore& core) {
  compiled_out_of_memory(core, "out of memory (the system refused an allocation)");
}

std::vector<Array> compiled_call(CompiledCore& core, std::vector<CallArg>& args,
                                 const std::function<std::vector<Array>()>& trace) {
  try {
    return core.call(args, trace);
  } catch (const std::bad_alloc&) {
    compiled_out_of_memory(core);
  } catch (const OutOfMemory& e) {
    compiled_out_of_memory(core, e.reason());
  }
}

CompiledCounts compiled_counts(const CompiledCore& core) { return core.counts(); }
std::string compiled_extents_note(const CompiledCore& core) { return core.extents_note(); }
std::string compiled_plan_note(const CompiledCore& core) { return core.plan_note(); }

}  // namespace aj::detail
