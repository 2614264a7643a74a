// The LLVM the library was built against (aj::llvm_version()).
#include <llvm/Config/llvm-config.h>

#include "jit/host_kernel.hpp"

namespace aj::jit {
const char* llvm_version_string() { return LLVM_VERSION_STRING; }
}  // namespace aj::jit
