#include "backends/cpu/host_backend.hpp"

#include <cstring>

#include "backends/cpu/host_comm.hpp"
#include "backends/cpu/host_launch.hpp"
#include "backends/cpu/host_library.hpp"
#include "backends/cpu/host_memory.hpp"
#include "backends/cpu/kernel_interpreter.hpp"

namespace aj::cpu {

namespace {

const void* data_of(const Storage* s) { return s ? s->data : nullptr; }

// A kernel launch's data pointers (null for index streams), in this thread's
// lists: reused, since a launch never starts another on its thread.
struct Pointers {
  std::vector<const void*> ins;
  std::vector<void*> outs;
};
const Pointers& pointers(const std::vector<const Storage*>& inputs, const std::vector<const Storage*>& outputs) {
  thread_local Pointers p;
  p.ins.clear();
  p.outs.clear();
  for (const Storage* s : inputs) p.ins.push_back(data_of(s));
  for (const Storage* s : outputs) p.outs.push_back(s->data);
  return p;
}

class HostBackend final : public exec::Backend {
 public:
  Device device() const override { return Device::cpu(); }

  std::shared_ptr<Storage> allocate(std::size_t bytes) override { return host_alloc(bytes); }

  std::shared_ptr<Storage> from_host(const Storage& host) override { return copy(host); }
  std::shared_ptr<Storage> to_host(const Storage& mine) override { return copy(mine); }

  void run_kernel(const Kernel& k, const std::vector<const Storage*>& inputs,
                  const std::vector<const Storage*>& outputs) override {
    const Pointers& p = pointers(inputs, outputs);
    if (jit_enabled()) run_kernel_compiled(k, p.ins, p.outs);
    else cpu::run_kernel(k, p.ins, p.outs);
  }

  std::shared_ptr<const exec::PreparedKernel> prepare_kernel(const Kernel& k) override {
    return prepare_compiled(k);
  }

  void compile_ahead(const std::vector<AheadKernel>& kernels) override {
    if (jit_enabled()) cpu::compile_ahead(kernels);
  }

  void run_prepared(const exec::PreparedKernel* p, const Kernel& k, const KScalar* scalars,
                    const std::vector<const Storage*>& inputs, const std::vector<const Storage*>& outputs) override {
    if (!p || !jit_enabled()) return Backend::run_prepared(nullptr, k, scalars, inputs, outputs);
    const Pointers& d = pointers(inputs, outputs);
    run_prepared_compiled(*p, scalars, d.ins, d.outs);
  }

  void run_library(const LibraryCall& call, const std::vector<const Storage*>& inputs,
                   const Storage& out) override {
    thread_local std::vector<const void*> ins;  // memory reused: a replay allocates nothing
    ins.clear();
    for (const Storage* s : inputs) ins.push_back(s->data);
    cpu::run_library(call, ins, out.data);
  }

  // A collective's exchange runs on the communication thread while the
  // kernels after it do (backends/cpu/host_comm.hpp); the rest run now.
  std::function<void()> start_library(const LibraryCall& call, const std::vector<const Storage*>& inputs,
                                      const Storage& out) override {
    if (call.op != Op::Collective || !comm::running()) {
      run_library(call, inputs, out);
      return nullptr;
    }
    return comm::start(call, inputs.empty() ? nullptr : inputs[0]->data, out.data);
  }

  void run_library_then(const LibraryCall& call, const std::vector<const Storage*>& inputs, const Storage& out,
                        const Kernel& k, const std::vector<const Storage*>& k_inputs,
                        const std::vector<const Storage*>& k_outputs) override {
    thread_local std::vector<const void*> ins, kins;
    thread_local std::vector<void*> kouts;
    ins.clear(), kins.clear(), kouts.clear();
    for (const Storage* s : inputs) ins.push_back(s->data);
    for (const Storage* s : k_inputs) kins.push_back(data_of(s));
    for (const Storage* s : k_outputs) kouts.push_back(s->data);
    cpu::run_library_then(call, ins, out.data, k, kins, kouts);
  }

  void synchronize() override {}  // host work runs at once

 private:
  static std::shared_ptr<Storage> copy(const Storage& from) {
    auto s = host_alloc(from.bytes);
    if (from.bytes) std::memcpy(s->data, from.data, from.bytes);
    return s;
  }
};

}  // namespace

exec::Backend& host_backend() {
  static HostBackend* b = new HostBackend();  // never destroyed, like the pool
  return *b;
}

}  // namespace aj::cpu
