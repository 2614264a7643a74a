// Evaluation as the API runs it: the reference interpreter under
// AJ_EXECUTOR=reference, otherwise plan (opt/pipeline.hpp), pick the device
// (exec::plan_device) and run the plan on that device's backend.
#pragma once

#include <string>
#include <vector>

#include "exec/backend.hpp"
#include "graph/graph.hpp"
#include "opt/pipeline.hpp"

namespace aj::detail {

void evaluate(const std::vector<NodeId>& roots);

// aj::compile's hook into evaluation on this thread (core/compile/compile.cpp):
// the next evaluation reports its plan (graph lock held, before it runs) to
// `observer`, once.
struct EvalObserver {
  virtual ~EvalObserver() = default;
  virtual void planned(const opt::Plan& p, Device device) = 0;
};
void set_eval_observer(EvalObserver* observer);

// The backend of a device (throws aj::Error for a GPU that is unavailable).
exec::Backend& backend_for(Device d);

// True once any device buffer exists or a DeviceScope is active on this
// thread: before that, device checks cost nothing.
bool any_device_storage();

// Writes `text` to `path` and, where Graphviz's dot is installed, the .svg
// and .png beside it (path without its .dot, plus the extension); returns the
// files written (none when `path` cannot be written).
std::vector<std::string> write_dot_files(const std::string& text, const std::string& path);

}  // namespace aj::detail
