// Op::Linalg on the host (graph/library.hpp says what each routine takes and
// returns): LAPACK from the OpenBLAS the matmul uses (backends/cpu/blas.hpp),
// so the same kernels for the CPU's level run. Each matrix of a batch is read
// from its strided operand into a column-major work matrix (LAPACK writes
// over its input, and the operands are kept), the routine runs, and its
// result is written row-major into the planned buffer. A batch of several
// matrices is split over the host pool, each routine single-threaded; one
// matrix runs the routine on the pool's thread count.
//
// Errors a matrix's values cause (singular in solve, not positive definite
// in cholesky, no convergence in svd/eigh) are a user Error naming the
// routine, the batch element and the caller's line (LibraryCall::loc),
// thrown after every matrix is done; the result buffer is then not a value.
#pragma once

#include <vector>

#include "graph/library.hpp"

namespace aj::cpu {

void run_linalg(const LibraryCall& call, const std::vector<const void*>& inputs, void* out);

}  // namespace aj::cpu
