#include "core/evaluate.hpp"

#include "backends/cpu/host_backend.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_runtime.hpp"
#include "backends/reference/interpreter.hpp"
#include "base/log.hpp"
#include "core/device.hpp"
#include "core/executor.hpp"
#include "exec/execute.hpp"
#include "opt/explain.hpp"

namespace aj::detail {

exec::Backend& backend_for(Device d) {
  return d.kind == Device::Kind::cuda ? cuda::cuda_backend(d.index) : cpu::host_backend();
}

bool any_device_storage() { return cuda::any_device_alloc() || exec::scope_device().has_value(); }

void evaluate(const std::vector<NodeId>& roots) {
  if (executor() == Executor::reference) {
    for (NodeId id : roots) {  // the oracle reads host memory only
      if (any_device_storage() && device_of(id).value_or(Device::cpu()) != Device::cpu()) {
        runtime_error("aj: the reference executor runs on the host only; move arrays with .to(Device::cpu())");
      }
    }
    return ref::evaluate(roots);
  }
  const opt::Plan p = opt::plan(roots);
  if (log_any() && log_enabled("plan")) log("plan", describe_plan(p.schedule, p.buffers));
  exec::execute(p, backend_for(exec::plan_device(p)));
}

}  // namespace aj::detail
