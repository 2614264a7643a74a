// Eager evaluation's side of the executor (see execute.hpp).
#include "exec/execute.hpp"

#include <string>

namespace aj::exec {

namespace {
constinit thread_local std::optional<Device> t_scope;
}  // namespace

Device plan_device(const opt::Plan& p) {
  const Graph& g = graph();
  std::optional<Device> found;
  // The evaluated arrays the program reads are its bound values.
  for (int v = 0; v < p.program->bound; ++v) {
    const Node& n = g[p.value_nodes[static_cast<std::size_t>(v)]];
    if (!n.evaluated()) continue;
    const Device d = n.storage->device;
    if (d.is_host()) continue;
    if (found && *found != d) {
      runtime_error("aj: one evaluation reads arrays on " + found->str() + " and " + d.str() +
                    "; move them to one device with .to(...)");
    }
    found = d;
  }
  if (t_scope && !t_scope->is_host()) {
    if (found && *found != *t_scope) {
      runtime_error("aj: an evaluation under DeviceScope(" + t_scope->str() + ") reads arrays on " + found->str());
    }
    return *t_scope;
  }
  return found.value_or(Device::cpu());
}

void execute(const opt::Plan& p, Backend& target) {
  GraphValues values{&p.value_nodes};
  run_program(*p.program, target, values, p.scalars);
}

std::optional<Device> scope_device() { return t_scope; }
void set_scope_device(std::optional<Device> d) { t_scope = d; }

}  // namespace aj::exec
