// Running out of memory inside LLVM. LLVM is not exception-safe: a
// std::bad_alloc thrown through its frames leaves its objects half-made, and
// the unwinding itself crashes (an optimizer's analysis manager destroyed
// mid-update). So no allocation may fail while LLVM works. A guard brackets
// every stretch of LLVM work (building IR, optimizing, emitting, linking,
// dropping code): when it starts, a reserve of kReserveBytes is held (taken
// now if it is not; if that fails, std::bad_alloc is thrown here, before LLVM
// ran, and the caller reports out of memory as for any op); while a guard is
// alive, a new_handler gives the reserve back to the system on the first
// allocation that fails, which is then retried. The reserve is taken again by
// the next guard. One reserve for the process, shared by the threads that
// compile at once; a new_handler installed by the program is called after the
// reserve is spent, and restored when the last guard ends.
#pragma once

#include <cstddef>
#include <new>

namespace aj::jit {

class LlvmMemoryGuard {
 public:
  static constexpr std::size_t kReserveBytes = std::size_t{64} << 20;
  LlvmMemoryGuard();  // throws std::bad_alloc when the reserve cannot be taken
  // Never throws: without a reserve, LLVM works as it would unguarded (for
  // freeing code, which must not fail for want of memory it will give back).
  explicit LlvmMemoryGuard(std::nothrow_t);
  ~LlvmMemoryGuard();
  LlvmMemoryGuard(const LlvmMemoryGuard&) = delete;
  LlvmMemoryGuard& operator=(const LlvmMemoryGuard&) = delete;
};

}  // namespace aj::jit
