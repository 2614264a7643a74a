// CUDA C expressions of the scalar ops, mirroring backends/reference/
// base/semantics.hpp (with the helpers of cuda_prelude.hpp).
#pragma once

#include <string>

#include "arrayjit/dtype.hpp"
#include "base/op.hpp"

namespace aj::cuda {

const char* ctype(DType t);  // "bool", "int", "i64", "float", "double"

// One elementwise op on operands x (and y): sem::unary / binary / compare /
// convert. `t` is the operand dtype (for Cast the source dtype), `to` the result's.
std::string op_expr(Op op, DType t, DType to, const std::string& x, const std::string& y);
// sem::reduce_combine and reduce_identity.
std::string combine_expr(Op op, DType t, const std::string& acc, const std::string& x);
std::string identity_expr(Op op, DType t);
// sem::scan_identity: where a scan's running value starts.
std::string scan_identity_expr(Op op, DType t);

}  // namespace aj::cuda
