// CUDA C expressions of the scalar ops: calls of base/semantics.hpp's own
// functions, which the prelude holds (cuda_prelude.hpp), with constant ops.
// Nothing here depends on which op it is: a new op in ops.def needs no code.
#pragma once

#include <string>

#include "arrayjit/dtype.hpp"
#include "base/op.hpp"

namespace aj::cuda {

// What memory of dtype t holds in CUDA C: "bool", "int", "i64", "float",
// "double", "__half", "__nv_bfloat16" (arrayjit/dtypes.def).
const char* ctype(DType t);
// What a value of dtype t is computed as: ctype, but aj::f16 / aj::bf16 for
// the half dtypes (whose arithmetic runs in f32 after a cast).
std::string value_type(DType t);

// One elementwise op on operands x (and y): sem::unary / binary / compare /
// convert. `t` is the operand dtype (for Cast the source dtype), `to` the result's.
std::string op_expr(Op op, DType t, DType to, const std::string& x, const std::string& y);
// sem::reduce_combine and reduce_identity.
std::string combine_expr(Op op, DType t, const std::string& acc, const std::string& x);
std::string identity_expr(Op op, DType t);
// sem::convert<to>(x).
std::string convert_expr(DType to, const std::string& x);
// sem::scan_combine: a scan's running value advanced by x.
std::string scan_combine_expr(Op op, DType t, const std::string& acc, const std::string& x);
// sem::scan_identity: where a scan's running value starts.
std::string scan_identity_expr(Op op, DType t);

}  // namespace aj::cuda
