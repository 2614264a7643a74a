// Programs: plans without the graph (see program.hpp).
#include "exec/program.hpp"

#include <unordered_map>

#include "base/stats.hpp"
#include "exec/execute.hpp"

namespace aj::exec {

namespace {
// From this many result elements a matmul runs its epilogue blockwise.
constexpr std::int64_t kEpilogueMinElements = 1 << 14;
}  // namespace

std::unique_ptr<Program> make_program(const opt::Plan& p, const std::vector<NodeId>& args,
                                      const std::vector<NodeId>& results, Device device) {
  const Graph& g = graph();
  const Schedule& s = p.schedule;
  auto prog = std::make_unique<Program>();
  prog->args = static_cast<int>(args.size());
  prog->device = device;
  std::unordered_map<NodeId, int> value;
  for (std::size_t k = 0; k < args.size(); ++k) value.emplace(args[k], static_cast<int>(k));

  // Evaluated arrays the steps (or the results) read that are not
  // arguments: held by the program, as they are now.
  int next = prog->args;
  auto capture = [&](NodeId id) {
    if (id == kNoNode || value.count(id) || !g[id].evaluated()) return;
    const Node& n = g[id];
    prog->captured.push_back({n.storage});
    value.emplace(id, next++);
  };
  for (const Step& st : s.steps) {
    if (st.kind == Step::Kind::kernel) {
      for (NodeId in : st.inputs) capture(in);
    } else {
      for (NodeId in : g[st.node].inputs) capture(in);
    }
  }
  for (NodeId r : results) capture(r);

  std::unordered_map<int, Layout> made_layout;  // the layout each step gives its output values
  auto made = [&](NodeId id) {
    const int v = next++;
    value[id] = v;
    return v;
  };
  auto value_of = [&](NodeId id) -> int {
    if (id == kNoNode) return -1;
    auto it = value.find(id);
    return it == value.end() ? -2 : it->second;
  };
  auto bytes_of = [&](NodeId id) {
    return static_cast<std::size_t>(g[id].numel()) * itemsize(g[id].dtype);
  };
  auto layout_of = [&](NodeId id) -> Layout {
    const Node& n = g[id];
    if (n.evaluated()) return {n.strides, n.offset};
    return s.layouts.at(id);
  };

  for (std::size_t k = 0; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    ProgramStep ps;
    switch (st.kind) {
      case Step::Kind::kernel: {
        ps.kind = ProgramStep::Kind::kernel;
        ps.kernel = st.kernel;
        for (std::size_t e = 0; e < st.inputs.size(); ++e) {
          const int v = st.kernel.inputs[e].index_only ? -1 : value_of(st.inputs[e]);
          if (v == -2) return nullptr;
          ps.inputs.push_back(v);
        }
        for (NodeId o : st.outputs) {
          ps.bytes.push_back(bytes_of(o));
          ps.out_strides.push_back(contiguous_strides(g[o].shape));
          ps.outputs.push_back(made(o));
          made_layout[ps.outputs.back()] = Layout{ps.out_strides.back(), 0};
          ps.donors.push_back(-1);
        }
        for (const Donation& d : p.buffers.donations) {
          if (d.step != static_cast<int>(k)) continue;
          const int v = value_of(d.from);
          if (v >= 0) ps.donors[static_cast<std::size_t>(d.output)] = v;
        }
        break;
      }
      case Step::Kind::view: {
        ps.kind = ProgramStep::Kind::view;
        const int in = value_of(g[st.node].inputs[0]);
        if (in < 0) return nullptr;
        ps.inputs.push_back(in);
        const Layout l = s.layouts.at(st.node);
        ps.view_strides = l.strides;
        ps.view_offset = l.offset;
        ps.outputs.push_back(made(st.node));
        made_layout[ps.outputs.back()] = l;
        break;
      }
      case Step::Kind::library: {
        ps.kind = ProgramStep::Kind::library;
        {
          // Its epilogue runs with it when its other inputs exist before it.
          const std::function<bool(NodeId)> ready = [&](NodeId id) { return value.count(id) > 0; };
          // Small results run the two apart: blockwise epilogues cost more
          // than they save below a few cache lines per block.
          ps.then = g[st.node].numel() >= kEpilogueMinElements && is_epilogue(p, k, k + 1, &ready);
        }
        const Node& n = g[st.node];
        std::vector<Layout> layouts;
        for (NodeId in : n.inputs) {
          const int v = value_of(in);
          if (v < 0) return nullptr;
          ps.inputs.push_back(v);
          layouts.push_back(layout_of(in));
        }
        ps.call = library_call(n, layouts);
        ps.bytes.push_back(bytes_of(st.node));
        ps.outputs.push_back(made(st.node));
        made_layout[ps.outputs.back()] = Layout{contiguous_strides(Shape(ps.call.shape)), 0};
        break;
      }
    }
    prog->steps.push_back(std::move(ps));
  }
  prog->values = next;
  for (NodeId r : results) {
    const int v = value_of(r);
    if (v < 0) return nullptr;
    prog->results.push_back(v);
    prog->result_dtypes.push_back(g[r].dtype);
    prog->result_shapes.push_back(g[r].shape);
    prog->result_layouts.push_back(made_layout.count(v) ? made_layout.at(v) : layout_of(r));
  }

  // Let a step's buffers go after their last reader (results and values the
  // program holds stay): later steps of a replay reuse them from the pool.
  std::vector<int> last(static_cast<std::size_t>(next), -1);
  for (std::size_t k = 0; k < prog->steps.size(); ++k) {
    for (int v : prog->steps[k].inputs) {
      if (v >= 0) last[static_cast<std::size_t>(v)] = static_cast<int>(k);
    }
  }
  for (int r : prog->results) last[static_cast<std::size_t>(r)] = -1;
  const int first_made = prog->args + static_cast<int>(prog->captured.size());
  for (int v = first_made; v < next; ++v) {
    const int k = last[static_cast<std::size_t>(v)];
    if (k >= 0) prog->steps[static_cast<std::size_t>(k)].release.push_back(v);
  }
  return prog;
}

void prepare_program(Program& p, Backend& target) {
  for (ProgramStep& st : p.steps) {
    if (st.kind == ProgramStep::Kind::kernel) st.prepared = target.prepare_kernel(st.kernel);
  }
}

void run_program(const Program& p, Backend& target, std::vector<Value>& values,
                 const std::vector<ScalarOverride>& overrides) {
  values.resize(static_cast<std::size_t>(p.values));
  for (std::size_t i = 0; i < p.captured.size(); ++i) values[static_cast<std::size_t>(p.args) + i] = p.captured[i];
  detail::Counters& stats = detail::stats_mut();
  // This thread's work lists, their memory kept between runs: a replay
  // allocates nothing here. (No step calls back into run_program.)
  thread_local std::vector<const Storage*> ins [[gnu::tls_model("initial-exec")]], epilogue_ins [[gnu::tls_model("initial-exec")]];
  thread_local std::vector<const Storage*> out_ptrs [[gnu::tls_model("initial-exec")]];
  thread_local std::vector<std::shared_ptr<Storage>> outs [[gnu::tls_model("initial-exec")]];
  thread_local std::vector<KScalar> scalars [[gnu::tls_model("initial-exec")]];
  struct Empty {  // no buffer stays referenced from here, however the run ends
    ~Empty() { outs.clear(); }
  } empty_after;
  std::size_t next_override = 0;
  for (std::size_t step = 0; step < p.steps.size(); ++step) {
    const ProgramStep& st = p.steps[step];
    // A step's input buffers into `into`.
    auto inputs_of = [&](const ProgramStep& ps, std::vector<const Storage*>& into) {
      into.clear();
      for (int v : ps.inputs) into.push_back(v < 0 ? nullptr : values[static_cast<std::size_t>(v)].storage.get());
    };
    inputs_of(st, ins);
    // A kernel step's outputs: a donor's buffer when nothing but this
    // program holds it, else a new one.
    auto kernel_outputs = [&](const ProgramStep& ks) {
      outs.clear();
      out_ptrs.clear();
      for (std::size_t j = 0; j < ks.outputs.size(); ++j) {
        std::shared_ptr<Storage> s;
        const int d = ks.donors[j];
        if (d >= 0) {
          std::shared_ptr<Storage>& from = values[static_cast<std::size_t>(d)].storage;
          if (from && from.use_count() == 1 && !from->borrowed && from->device == target.device() &&
              from->bytes == ks.bytes[j]) {
            s = from;
            ++stats.inplace_reuses;
          }
        }
        if (!s) s = target.allocate(ks.bytes[j]);
        out_ptrs.push_back(s.get());
        outs.push_back(std::move(s));
      }
    };
    // This call's scalars of kernel step `k` (null: the kernel's own).
    auto bound_scalars = [&](const ProgramStep& ks, std::size_t k) -> const KScalar* {
      if (next_override >= overrides.size() || overrides[next_override].step != static_cast<int>(k)) return nullptr;
      scalars.assign(ks.kernel.scalars.begin(), ks.kernel.scalars.end());
      for (; next_override < overrides.size() && overrides[next_override].step == static_cast<int>(k); ++next_override) {
        scalars[static_cast<std::size_t>(overrides[next_override].scalar)] = overrides[next_override].value;
      }
      return scalars.data();
    };
    auto set_outputs = [&](const ProgramStep& ks) {
      for (std::size_t j = 0; j < ks.outputs.size(); ++j) values[static_cast<std::size_t>(ks.outputs[j])].storage = std::move(outs[j]);
    };
    switch (st.kind) {
      case ProgramStep::Kind::kernel: {
        kernel_outputs(st);
        target.run_prepared(st.prepared.get(), st.kernel, bound_scalars(st, step), ins, out_ptrs);
        ++stats.kernels_launched;
        set_outputs(st);
        break;
      }
      case ProgramStep::Kind::view: {
        Value& v = values[static_cast<std::size_t>(st.outputs[0])];
        v.storage = values[static_cast<std::size_t>(st.inputs[0])].storage;
        break;
      }
      case ProgramStep::Kind::library: {
        auto out = target.allocate(st.bytes[0]);
        if (!st.then) {
          target.run_library(st.call, ins, *out);
          ++stats.kernels_launched;
          values[static_cast<std::size_t>(st.outputs[0])].storage = std::move(out);
          break;
        }
        // With its epilogue, the next step: the kernel runs on each block of
        // the result while it is in cache (Backend::run_library_then).
        values[static_cast<std::size_t>(st.outputs[0])].storage = out;
        const ProgramStep& ep = p.steps[step + 1];
        inputs_of(ep, epilogue_ins);
        kernel_outputs(ep);
        const KScalar* b = bound_scalars(ep, step + 1);
        Kernel bound;
        if (b) {
          bound = ep.kernel;
          std::copy(b, b + bound.scalars.size(), bound.scalars.begin());
        }
        target.run_library_then(st.call, ins, *out, b ? bound : ep.kernel, epilogue_ins, out_ptrs);
        ++stats.kernels_launched;
        set_outputs(ep);
        for (int r : st.release) values[static_cast<std::size_t>(r)] = Value{};
        ++step;  // the epilogue ran
        for (int r : ep.release) values[static_cast<std::size_t>(r)] = Value{};
        continue;
      }
    }
    for (int r : st.release) values[static_cast<std::size_t>(r)] = Value{};
  }
}

}  // namespace aj::exec
