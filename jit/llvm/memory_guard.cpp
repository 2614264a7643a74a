#include "jit/llvm/memory_guard.hpp"

#include <atomic>
#include <mutex>
#include <new>

namespace aj::jit {

namespace {

struct Reserve {
  std::mutex mu;
  int guards = 0;                        // alive now (mu)
  std::new_handler before = nullptr;     // the program's, while ours is installed (mu)
  std::atomic<void*> block{nullptr};     // the reserve, when held
};
Reserve& reserve() {
  static auto* r = new Reserve;  // never destroyed: a guard may outlive statics
  return *r;
}

// The new_handler while a guard is alive: the reserve back to the system (the
// failed allocation is retried), then the program's handler, then failure.
void give_reserve_back() {
  Reserve& r = reserve();
  if (void* p = r.block.exchange(nullptr)) {
    ::operator delete(p);
    return;
  }
  if (std::new_handler h = r.before) return h();
  throw std::bad_alloc();
}

}  // namespace

namespace {
void start_guard(bool must_reserve) {
  Reserve& r = reserve();
  std::lock_guard lock(r.mu);
  if (!r.block.load()) {
    // Not under our handler yet (or under it with nothing to give): a
    // failure here is a plain bad_alloc, thrown before LLVM runs.
    try {
      r.block.store(::operator new(LlvmMemoryGuard::kReserveBytes));
    } catch (const std::bad_alloc&) {
      if (must_reserve) throw;
    }
  }
  if (r.guards++ == 0) r.before = std::set_new_handler(give_reserve_back);
}
}  // namespace

LlvmMemoryGuard::LlvmMemoryGuard() { start_guard(true); }
LlvmMemoryGuard::LlvmMemoryGuard(std::nothrow_t) { start_guard(false); }

LlvmMemoryGuard::~LlvmMemoryGuard() {
  Reserve& r = reserve();
  std::lock_guard lock(r.mu);
  if (--r.guards == 0) {
    std::set_new_handler(r.before);
    r.before = nullptr;
  }
}

}  // namespace aj::jit
