// The public API of arrayjit/jit.hpp: the host JIT's switches and dumps.
#include "arrayjit/jit.hpp"

#include <algorithm>

#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/host_matmul.hpp"
#include "base/cpu_level.hpp"
#include "core/api/trace.hpp"
#include "jit/host_kernel.hpp"
#include "opt/pipeline.hpp"

namespace aj::jit {

bool enabled() { return cpu::jit_enabled(); }
void set_enabled(bool on) { cpu::set_jit_enabled(on); }
int num_threads() { return cpu::num_threads(); }
void set_num_threads(int n) { cpu::set_num_threads(n); }

std::string cache_dir() { return host_cache_dir(); }
void set_cache_dir(const std::string& dir) { set_host_cache_dir(dir); }
void clear_memory_cache() { clear_host_kernels(); }
Tiers tiers() {
  switch (host_tiers()) {
    case HostTiers::automatic: return Tiers::automatic;
    case HostTiers::full: return Tiers::full;
    case HostTiers::quick: return Tiers::quick;
  }
  return Tiers::automatic;
}
void set_tiers(Tiers t) {
  set_host_tiers(t == Tiers::full ? HostTiers::full : t == Tiers::quick ? HostTiers::quick : HostTiers::automatic);
}
void finish_tier_ups() { finish_host_tier_ups(); }
std::string target_description() { return host_target(); }
std::string matmul_library() { return cpu::matmul_library(); }

std::string host_info() {
  const std::string model = cpu::cpu_model().empty() ? "(no brand string)" : cpu::cpu_model();
  // The JIT's target without its full feature list: the features that set
  // the vector width and the math it may use.
  const std::string target = host_target();
  const std::size_t cut = std::min(target.find(", +"), target.find(", -"));
  std::string jit = target.substr(0, cut);
  std::string on;
  for (const char* f : {"avx512f", "avx512bw", "avx512vl", "avx512bf16", "avx512fp16", "avx2", "fma", "avx", "f16c"}) {
    if (cpu::llvm_feature_on(target, f)) on += (on.empty() ? "" : " ") + std::string(f);
  }
  jit += ", features " + (on.empty() ? std::string("SSE only") : on);
  return "cpu: " + model + "\nlevel: " + cpu::level_description() + "\njit: " + jit + "\nmatmul: " + matmul_library() +
         "\n";
}

std::string kernel_ir(const Array& a, bool assembly, Loc loc) {
  trace::Scope scope;
  const NodeId id = trace::id(a, "jit::kernel_ir", loc);
  if (graph()[id].evaluated()) return "";
  std::string out;
  for (const Kernel& k : opt::plan_kernels({id})) out += host_kernel_text(k, assembly);
  return out;
}

}  // namespace aj::jit

namespace aj {
const char* llvm_version() { return jit::llvm_version_string(); }
}  // namespace aj
