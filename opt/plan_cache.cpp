#include "opt/plan_cache.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "base/log.hpp"
#include "base/stats.hpp"
#include "opt/materialize.hpp"

namespace aj::plan_cache {

namespace {

constexpr std::uint32_t kPending = 0xffffffffu;
constexpr std::size_t kScanDistinct = 16;
enum Tag : std::uint64_t { kLeaf = 0x1eaf, kNode = 0x40de, kRoots = 0x2007, kNumber = 0xc1a55ull << 40 };

std::uint64_t bits(double d) { return std::bit_cast<std::uint64_t>(d); }

// A stored plan: node ids replaced by walk positions.
struct Entry {
  std::vector<std::uint64_t> words;
  std::vector<std::int64_t> numbers;  // the graph's numbers the plan was made for
  Schedule schedule;
  BufferPlan buffers;
  std::vector<std::uint8_t> epilogues;
  std::shared_ptr<const opt::Program> program;  // scalar sources by walk position
  std::vector<NodeId> value_pos;                 // per program value
  bool renumbered = false;                       // made by materialize (Plan::renumbered)
};

// Switched on or off for every graph; clear() bumps the epoch, and each
// graph's cache empties itself when it next sees a new epoch.
std::atomic<bool> g_enabled = [] {
  const char* e = std::getenv("AJ_PLAN_CACHE");
  return !(e && std::string(e) == "0");
}();
std::atomic<std::uint64_t> g_clear_epoch{0};

// One graph's cache (graph/graph.hpp's per-graph attachment: threads never
// share one), with the walk marks of make_key, indexed by node id and
// reused across calls: stamp == epoch means "seen in this walk".
struct Cache final : GraphAttachment {
  std::unordered_map<std::size_t, std::vector<Entry>> map;
  std::size_t entries = 0;
  Counters counters;
  std::string refusal;  // why the last kept plan was not used at new numbers
  std::uint64_t clear_epoch = 0;
  std::vector<std::uint32_t> stamp, pos;
  std::uint32_t epoch = 0;
  std::vector<std::pair<NodeId, std::uint32_t>> stack;
  Key scratch;  // reused: its vectors keep their capacity
  std::vector<std::int64_t> distinct;  // make_key: the numbers other than 0 and 1 met, by class
  std::unordered_map<std::int64_t, std::size_t> class_of;  // the same, once there are many

  void drop_plans() {
    map.clear();
    entries = 0;
  }
};
constexpr int kSlot = 0;  // this file's attachment slot

// The current graph's cache (the caller holds the graph lock).
Cache& cache() {
  auto& slot = graph().attachment(kSlot);
  if (!slot) slot = std::make_unique<Cache>();
  Cache& c = static_cast<Cache&>(*slot);
  const std::uint64_t e = g_clear_epoch.load(std::memory_order_acquire);
  if (c.clear_epoch != e) {
    c.drop_plans();
    c.clear_epoch = e;
  }
  return c;
}

// Copies `in` into `out` with every node id passed through f (kNoNode stays).
// f returns kNoNode for an id it cannot map; then this returns false.
template <class F>
bool translate(const Schedule& in, const BufferPlan& bin, Schedule* out, BufferPlan* bout, F&& f, bool whole = true) {
  bool ok = true;
  auto map = [&](NodeId id) {
    if (id == kNoNode) return kNoNode;
    NodeId r = f(id);
    ok &= r != kNoNode;
    return r;
  };
  auto map_all = [&](std::vector<NodeId>& v) {
    for (NodeId& id : v) id = map(id);
  };
  out->roots = in.roots;
  map_all(out->roots);
  out->order = in.order;
  map_all(out->order);
  out->materialized = in.materialized;
  for (Materialization& m : out->materialized) {
    m.node = map(m.node);
    m.by = map(m.by);
  }
  if (!whole) {  // what an evaluation reads besides the program
    out->steps.clear();
    out->layouts.clear();
    out->step_of.clear();
    return ok;
  }
  out->steps.resize(in.steps.size());
  for (std::size_t k = 0; k < in.steps.size(); ++k) {
    const Step& from = in.steps[k];
    Step& st = out->steps[k];
    st.kind = from.kind;
    st.node = map(from.node);
    st.kernel = from.kernel;
    st.inputs = from.inputs;
    map_all(st.inputs);
    st.outputs = from.outputs;
    map_all(st.outputs);
    st.computed = from.computed;
    map_all(st.computed);
    st.touched = from.touched;
    map_all(st.touched);
    st.space = from.space;
    st.axes = from.axes;
    st.space_of = map(from.space_of);
    st.copy = from.copy;
    st.into = from.into;
    map_all(st.into);
    st.scalar_sources = from.scalar_sources;
    for (ScalarSource& src : st.scalar_sources) src.node = map(src.node);
  }
  out->layouts.clear();
  out->layouts.reserve(in.layouts.size());
  for (const auto& [id, l] : in.layouts) out->layouts.emplace(map(id), l);
  out->step_of.clear();
  out->step_of.reserve(in.step_of.size());
  for (const auto& [id, k] : in.step_of) out->step_of.emplace(map(id), k);
  bout->slot_bytes = bin.slot_bytes;
  bout->bytes_used = bin.bytes_used;
  bout->lower_bound = bin.lower_bound;
  bout->values = bin.values;
  for (BufferValue& v : bout->values) {
    v.node = map(v.node);
    v.donor = map(v.donor);
  }
  bout->donations = bin.donations;
  for (Donation& d : bout->donations) {
    d.from = map(d.from);
    d.to = map(d.to);
  }
  return ok;
}

}  // namespace

const Key& make_key(const std::vector<NodeId>& roots, const std::vector<NodeId>& order) {
  Graph& g = graph();
  Cache& m = cache();
  Key& k = m.scratch;
  k.words.clear();
  k.nodes.clear();
  k.hash = 0;
  if (m.stamp.size() < g.capacity()) {
    m.stamp.resize(g.capacity(), 0);
    m.pos.resize(g.capacity(), 0);
  }
  if (++m.epoch == 0) {  // wrapped: forget every old stamp
    std::fill(m.stamp.begin(), m.stamp.end(), 0);
    m.epoch = 1;
  }
  auto& w = k.words;
  k.numbers.clear();
  m.distinct.clear();
  const TemporaryRule looks_temporary(roots);
  // A number: 0 and 1 as they are (they decide broadcasting, layouts and
  // size-1 axes); any other by its class, the values equal to it in this
  // walk (fuse's and lower's decisions compare numbers for equality).
  auto put_number = [&](std::int64_t v) {
    if (v == 0 || v == 1) {
      w.push_back(static_cast<std::uint64_t>(v));
      return;
    }
    std::size_t c = 0;
    if (m.distinct.size() < kScanDistinct) {  // few: a scan is faster than hashing
      while (c < m.distinct.size() && m.distinct[c] != v) ++c;
      if (c == m.distinct.size()) m.distinct.push_back(v);
      if (m.distinct.size() == kScanDistinct) {
        m.class_of.clear();
        for (std::size_t i = 0; i < m.distinct.size(); ++i) m.class_of.emplace(m.distinct[i], i);
      }
    } else {
      c = m.class_of.emplace(v, m.distinct.size()).first->second;
      if (c == m.distinct.size()) m.distinct.push_back(v);
    }
    w.push_back(kNumber | c);
    k.numbers.push_back(v);
  };
  auto put_shape = [&](const Shape& s) {
    w.push_back(static_cast<std::uint64_t>(s.ndim()));
    for (auto d : s) put_number(d);
  };
  auto leaf_pos = [&](NodeId id) -> std::uint32_t {
    if (m.stamp[id] == m.epoch) return m.pos[id];
    const Node& n = g[id];
    m.stamp[id] = m.epoch;
    m.pos[id] = static_cast<std::uint32_t>(k.nodes.size());
    k.nodes.push_back(id);
    w.push_back(kLeaf);
    w.push_back(static_cast<std::uint64_t>(n.dtype));
    put_shape(n.shape);
    w.push_back(n.strides.size());
    for (auto s : n.strides) put_number(s);
    put_number(n.offset);
    w.push_back(static_cast<std::uint64_t>(n.storage->device.kind) << 32 |
                static_cast<std::uint32_t>(n.storage->device.index));
    put_number(static_cast<std::int64_t>(n.storage->bytes));
    w.push_back(static_cast<std::uint64_t>(n.storage->read_only()) << 2 | static_cast<std::uint64_t>(n.storage->lent) << 1 |
                (g.ext_count(id) > 0));
    w.push_back(n.uses);
    return m.pos[id];
  };
  auto emit = [&](NodeId id) {
    const Node& n = g[id];
    for (NodeId in : n.inputs) {
      if (g[in].evaluated()) leaf_pos(in);
    }
    if (n.after != kNoNode && g[n.after].evaluated()) leaf_pos(n.after);
    // A constant's value and a generator's payload reach the plan only as
    // kernel scalars, which a hit takes from this graph (lookup's overrides):
    // they are not part of the key, so a changed learning rate hits. What
    // simplify did with a value (x * 1 is x) shows in the structure.
    const bool scalars_only = n.op == Op::Constant || is_generator(n.op);
    const std::uint64_t payload[4] = {scalars_only ? 0 : static_cast<std::uint64_t>(n.i0),
                                      static_cast<std::uint64_t>(n.i1), scalars_only ? 0 : bits(n.f0),
                                      scalars_only ? 0 : bits(n.f1)};
    std::uint64_t nonzero = 0;  // which payload words follow (most are 0)
    for (int f = 0; f < 4; ++f) nonzero |= static_cast<std::uint64_t>(payload[f] != 0) << f;
    // Counts first, so the words say where each list ends: equal words are
    // equal graphs.
    w.push_back(kNode | static_cast<std::uint64_t>(n.op) << 16 | static_cast<std::uint64_t>(n.dtype) << 24 |
                nonzero << 32 | static_cast<std::uint64_t>(n.after != kNoNode) << 36 |
                static_cast<std::uint64_t>(n.shape.ndim()) << 40);
    w.push_back(n.ints.size() | static_cast<std::uint64_t>(n.inputs.size()) << 32);
    for (auto d : n.shape) put_number(d);
    for (int f = 0; f < 4; ++f) {
      if (payload[f]) w.push_back(payload[f]);
    }
    // A slice's and a pad's starts and steps are numbers; other lists
    // (axes, permutations) are structure.
    const bool numbers = n.op == Op::Slice || n.op == Op::Pad;
    for (auto v : n.ints) {
      if (numbers) put_number(v);
      else w.push_back(static_cast<std::uint64_t>(v));
    }
    for (std::size_t i = 0; i < n.inputs.size(); i += 2) {  // positions are 32 bits: two a word
      const std::uint64_t second = i + 1 < n.inputs.size() ? m.pos[n.inputs[i + 1]] : 0;
      w.push_back(m.pos[n.inputs[i]] | second << 32);
    }
    // An ordering-only input orders the steps: part of the structure.
    if (n.after != kNoNode) w.push_back(m.pos[n.after]);  // (flagged in the first word)
    // Handles decide donation and which values are stored (fuse.hpp).
    const bool handle = g.ext_count(id) > 0;
    const bool temporary = handle && looks_temporary(id);
    w.push_back(static_cast<std::uint64_t>(n.uses) << 2 | static_cast<std::uint64_t>(temporary) << 1 | handle);
    m.pos[id] = static_cast<std::uint32_t>(k.nodes.size());
    k.nodes.push_back(id);
  };
  for (NodeId r : roots) {
    if (g[r].evaluated()) {  // not expected here: do not cache
      k.words.clear();
      k.nodes.clear();
      return k;
    }
  }
  // Inputs first, each input in order, each node once (unevaluated_order).
  for (NodeId id : order) {
    m.stamp[id] = m.epoch;
    emit(id);
  }
  auto& stack = m.stack;
  stack.clear();
  for (NodeId r : roots) {
    if (m.stamp[r] == m.epoch) continue;
    m.stamp[r] = m.epoch;
    m.pos[r] = kPending;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      const NodeId id = stack.back().first;
      const Node& n = g[id];
      const std::uint32_t next = stack.back().second;
      if (next < walk_inputs(n)) {
        ++stack.back().second;
        NodeId in = walk_input(n, next);
        if (!g[in].evaluated() && m.stamp[in] != m.epoch) {
          m.stamp[in] = m.epoch;
          m.pos[in] = kPending;
          stack.push_back({in, 0});
        }
      } else {
        emit(id);
        stack.pop_back();
      }
    }
  }
  w.push_back(kRoots);
  w.push_back(roots.size());
  for (NodeId r : roots) w.push_back(m.pos[r]);
  // Four independent multiply-add lanes (one multiply chain would be latency
  // bound), mixed at the end; the lookup compares every word anyway, the
  // hash only picks the bucket.
  std::uint64_t h[4] = {0xcbf29ce484222325ull, 0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull};
  std::size_t i = 0;
  for (; i + 4 <= w.size(); i += 4) {
    for (int l = 0; l < 4; ++l) h[l] = (h[l] + w[i + static_cast<std::size_t>(l)]) * 0x9e3779b97f4a7c15ull;
  }
  for (; i < w.size(); ++i) h[0] = (h[0] + w[i]) * 0x9e3779b97f4a7c15ull;
  auto fmix = [](std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
  };
  k.hash = static_cast<std::size_t>(fmix(h[0]) ^ fmix(h[1] + 1) * 3 ^ fmix(h[2] + 2) * 5 ^ fmix(h[3] + 3) * 7 ^ w.size());
  return k;
}

bool lookup(const Key& key, opt::Plan* p, bool whole) {
  Cache& c = cache();
  if (!enabled() || key.words.empty()) return false;
  auto it = c.map.find(key.hash);
  const Entry* kept = nullptr;  // the latest plan of this structure at other numbers
  if (it != c.map.end()) {
    for (const Entry& e : it->second) {
      if (e.words != key.words) continue;
      if (e.numbers != key.numbers) {
        kept = &e;
        continue;
      }
      auto node = [&](NodeId pos) { return pos < key.nodes.size() ? key.nodes[pos] : kNoNode; };
      const bool ok = translate(e.schedule, e.buffers, &p->schedule, &p->buffers, node, whole);
      if (!ok) internal_error("plan_cache: a stored plan names a position its key does not have");
      if (whole) {  // the schedule's kernels take this graph's scalars (explain, aj::compile)
        for (Step& st : p->schedule.steps) {
          for (std::size_t i = 0; i < st.scalar_sources.size(); ++i) {
            st.kernel.scalars[i] = scalar_value(st.scalar_sources[i], st.kernel.scalars[i]);
          }
        }
      }
      p->epilogues = e.epilogues;
      p->renumbered = e.renumbered;
      p->program = e.program;
      p->value_nodes.resize(e.value_pos.size());
      for (std::size_t v = 0; v < e.value_pos.size(); ++v) p->value_nodes[v] = node(e.value_pos[v]);
      // This graph's kernel scalars, where they differ from the program's.
      p->scalars.clear();
      for (std::size_t k = 0; k < e.program->steps.size(); ++k) {
        const opt::ProgramStep& st = e.program->steps[k];
        for (std::size_t i = 0; i < st.scalar_sources.size(); ++i) {
          ScalarSource src = st.scalar_sources[i];
          if (src.node == kNoNode || src.field == ScalarSource::fixed) continue;
          src.node = node(src.node);
          const KScalar& was = st.kernel.scalars[i];
          const KScalar now = scalar_value(src, was);
          if (now.i != was.i || bits(now.f) != bits(was.f)) {
            p->scalars.push_back({static_cast<int>(k), static_cast<int>(i), now});
          }
        }
      }
      ++c.counters.hits;
      return true;
    }
  }
  if (kept) {
    // The same structure at other numbers: fuse's decisions kept, the numbers
    // made again from this graph (opt/materialize.hpp), and kept too.
    opt::Plan was;
    auto node = [&](NodeId pos) { return pos < key.nodes.size() ? key.nodes[pos] : kNoNode; };
    if (!translate(kept->schedule, kept->buffers, &was.schedule, &was.buffers, node, true)) {
      internal_error("plan_cache: a stored plan names a position its key does not have");
    }
    std::string why;
    if (opt::materialize(was, p, &why)) {
      ++c.counters.hits;
      ++c.counters.renumbered;
      ++detail::stats_mut().plans_renumbered;
      p->renumbered = true;
      if (detail::log_any() && detail::log_enabled("passes")) {
        detail::log("passes", "plan cache: the same structure at other numbers (fuse skipped, numbers made again)");
      }
      insert(key, p);
      return true;
    }
    c.refusal = why;
    if (detail::log_any() && detail::log_enabled("passes")) {
      detail::log("passes", "plan cache: a kept plan of this structure is not used at these numbers: " + why);
    }
  }
  ++c.counters.misses;
  return false;
}

void insert(const Key& key, opt::Plan* p) {
  Cache& c = cache();
  if (!enabled() || key.words.empty()) return;
  std::unordered_map<NodeId, NodeId> pos;
  pos.reserve(key.nodes.size());
  for (std::size_t i = 0; i < key.nodes.size(); ++i) pos.emplace(key.nodes[i], static_cast<NodeId>(i));
  auto position = [&](NodeId id) {
    auto it = pos.find(id);
    return it == pos.end() ? kNoNode : it->second;
  };
  Entry e;
  bool ok = translate(p->schedule, p->buffers, &e.schedule, &e.buffers, position);
  auto program = std::make_shared<opt::Program>(*p->program);
  for (opt::ProgramStep& st : program->steps) {
    for (ScalarSource& src : st.scalar_sources) {
      if (src.node != kNoNode) ok &= (src.node = position(src.node)) != kNoNode;
    }
    if (st.kind == opt::ProgramStep::Kind::kernel) st.prepared = std::make_shared<PreparedCell>();
  }
  for (NodeId id : p->value_nodes) {
    e.value_pos.push_back(position(id));
    ok &= e.value_pos.back() != kNoNode;
  }
  if (!ok) return;  // the plan reaches outside the walk: not cached
  if (c.entries >= kMaxEntries) c.drop_plans();
  std::vector<Entry>& bucket = c.map[key.hash];
  // A few plans of one structure at other numbers are kept (a loop at two
  // batch sizes); the oldest goes first.
  int same = 0;
  for (const Entry& x : bucket) same += x.words == key.words;
  if (same >= static_cast<int>(kMaxVariants)) {
    for (auto it = bucket.begin(); it != bucket.end(); ++it) {
      if (it->words != key.words) continue;
      bucket.erase(it);
      --c.entries;
      break;
    }
  }
  e.words = key.words;
  e.numbers = key.numbers;
  e.epilogues = p->epilogues;
  e.renumbered = p->renumbered;
  e.program = program;
  p->program = std::move(program);
  bucket.push_back(std::move(e));
  ++c.entries;
}

std::string plan_difference(const Schedule& a, const BufferPlan& ab, const Schedule& b, const BufferPlan& bb) {
  if (a.roots != b.roots) return "roots";
  if (a.order != b.order) return "order";
  if (a.steps.size() != b.steps.size()) return "step count";
  if (a.layouts != b.layouts) return "layouts";
  if (a.step_of != b.step_of) return "step_of";
  if (a.materialized != b.materialized) {
    if (a.materialized.size() != b.materialized.size()) return "materialized count";
    for (std::size_t i = 0; i < a.materialized.size(); ++i) {
      const Materialization &x = a.materialized[i], &y = b.materialized[i];
      if (x == y) continue;
      // A broadcast's count is explain's figure, the evaluations fuse met at
      // the request it refused; a renumbered plan gives the most points of
      // one load instead (opt/materialize.cpp). The decision is the same.
      if (x.node == y.node && x.why == y.why && x.by == y.by && x.why == Materialization::Why::broadcast) continue;
      // Several maps: `by` and `count` say where fuse's walk found the second
      // map and how many it had met (explain's figures); a renumbered plan
      // keeps the walk of the numbers it was made at, which can meet the
      // node first from another reader at these. The decision is the same.
      if (x.node == y.node && x.why == y.why && x.why == Materialization::Why::several_maps) continue;
      return "materialized " + std::to_string(i) + ": %" + std::to_string(x.node) + " why " +
             std::to_string(static_cast<int>(x.why)) + " by %" + std::to_string(x.by) + " count " + std::to_string(x.count) +
             ", from scratch %" + std::to_string(y.node) + " why " + std::to_string(static_cast<int>(y.why)) + " by %" +
             std::to_string(y.by) + " count " + std::to_string(y.count);
    }
  }
  for (std::size_t k = 0; k < a.steps.size(); ++k) {
    const Step &x = a.steps[k], &y = b.steps[k];
    const std::string at = "step " + std::to_string(k) + ": ";
    if (x.kind != y.kind || x.node != y.node) return at + "kind or node";
    if (x.inputs != y.inputs || x.outputs != y.outputs) return at + "inputs or outputs";
    if (x.computed != y.computed || x.touched != y.touched) return at + "computed or touched";
    if (x.space != y.space || x.axes != y.axes || x.space_of != y.space_of) return at + "space";
    if (x.copy != y.copy || x.into != y.into) return at + "copy or into";
    if (x.scalar_sources != y.scalar_sources) return at + "scalar sources";
    if (!same_kernel(x.kernel, y.kernel, /*numbers=*/true)) return at + "kernel";
  }
  if (ab.values.size() != bb.values.size() || ab.donations.size() != bb.donations.size() ||
      ab.slot_bytes != bb.slot_bytes || ab.bytes_used != bb.bytes_used || ab.lower_bound != bb.lower_bound) {
    return "buffer plan";
  }
  for (std::size_t i = 0; i < ab.values.size(); ++i) {
    const BufferValue &x = ab.values[i], &y = bb.values[i];
    if (x.node != y.node || x.bytes != y.bytes || x.def != y.def || x.last != y.last || x.slot != y.slot ||
        x.donor != y.donor) {
      return "buffer value " + std::to_string(i);
    }
  }
  for (std::size_t i = 0; i < ab.donations.size(); ++i) {
    const Donation &x = ab.donations[i], &y = bb.donations[i];
    if (x.step != y.step || x.output != y.output || x.from != y.from || x.to != y.to) return "donations";
  }
  return "";
}

bool same_plan(const Schedule& a, const BufferPlan& ab, const Schedule& b, const BufferPlan& bb) {
  return plan_difference(a, ab, b, bb).empty();
}

Counters counters() {
  Counters r = cache().counters;
  r.entries = cache().entries;
  return r;
}

std::string last_refusal() { return cache().refusal; }

void clear() { g_clear_epoch.fetch_add(1, std::memory_order_acq_rel); }

void reset_counters() { cache().counters = {}; }

void set_enabled(bool on) {
  g_enabled.store(on, std::memory_order_release);
  if (!on) clear();
}

bool enabled() { return g_enabled.load(std::memory_order_acquire); }

}  // namespace aj::plan_cache
