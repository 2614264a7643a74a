// arrayjit: a lazy array DSL with a graph optimizer and a JIT.
// The one header users include.
#pragma once

#include "arrayjit/array.hpp"
#include "arrayjit/autodiff.hpp"
#include "arrayjit/compile.hpp"
#include "arrayjit/conv.hpp"
#include "arrayjit/cuda.hpp"
#include "arrayjit/distributed.hpp"
#include "arrayjit/dtype.hpp"
#include "arrayjit/einsum.hpp"
#include "arrayjit/error.hpp"
#include "arrayjit/explain.hpp"
#include "arrayjit/indexing.hpp"
#include "arrayjit/interrupt.hpp"
#include "arrayjit/host_callback.hpp"
#include "arrayjit/io.hpp"
#include "arrayjit/jit.hpp"
#include "arrayjit/linalg.hpp"
#include "arrayjit/memory.hpp"
#include "arrayjit/nn.hpp"
#include "arrayjit/print.hpp"
#include "arrayjit/profile.hpp"
#include "arrayjit/random.hpp"
#include "arrayjit/scan_sort.hpp"
#include "arrayjit/search.hpp"
#include "arrayjit/shape_functions.hpp"
#include "arrayjit/statistics.hpp"
#include "arrayjit/stats.hpp"

namespace aj {
// Library version, and the LLVM it was built against ("19.1.7").
const char* version();
const char* llvm_version();
}  // namespace aj
