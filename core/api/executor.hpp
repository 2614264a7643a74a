// Which execution path eval() takes. The reference interpreter is the oracle;
// the optimized path (opt/pipeline + exec/execute) is what users get. Tests switch between
// them to compare results (tests/test_differential.cpp).
#pragma once

namespace aj::detail {

enum class Executor { reference, optimized };

Executor executor();
void set_executor(Executor e);

// Sets the executor for a scope and restores the previous one after.
class ExecutorScope {
 public:
  explicit ExecutorScope(Executor e) : saved_(executor()) { set_executor(e); }
  ~ExecutorScope() { set_executor(saved_); }
  ExecutorScope(const ExecutorScope&) = delete;
  ExecutorScope& operator=(const ExecutorScope&) = delete;

 private:
  Executor saved_;
};

}  // namespace aj::detail
