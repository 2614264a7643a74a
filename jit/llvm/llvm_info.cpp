// The LLVM the library was built against. The host JIT (a later stage) lives
// beside this file; linking LLVM from the start keeps the build's shape fixed.
#include <llvm/Config/llvm-config.h>

#include "arrayjit/arrayjit.hpp"

namespace aj {
const char* llvm_version() { return LLVM_VERSION_STRING; }
}  // namespace aj
