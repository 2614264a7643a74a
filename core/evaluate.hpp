// Evaluation as the API runs it: the reference interpreter under
// AJ_EXECUTOR=reference, otherwise plan (opt/pipeline.hpp), pick the device
// (exec::plan_device) and run the plan on that device's backend.
#pragma once

#include <string>
#include <vector>

#include "exec/backend.hpp"
#include "opt/pipeline.hpp"
#include "graph/graph.hpp"

namespace aj::detail {

void evaluate(const std::vector<NodeId>& roots);

// aj::compile's hooks into evaluation on this thread (core/compile.cpp).
// While a compiled function is traced, any evaluation is an error naming it
// (the function read a value a replay would not read again); the evaluation
// of its results reports its plan (graph lock held, before it runs) to
// `observer`.
struct EvalObserver {
  virtual ~EvalObserver() = default;
  virtual void planned(const opt::Plan& p, Device device) = 0;
};
void set_eval_observer(EvalObserver* observer);
void set_tracing_compiled(const char* where);  // null: not tracing
const char* tracing_compiled();                // the function being traced on this thread, or null

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
