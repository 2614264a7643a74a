// DType, Shape, Device and error helpers.
#include <string>

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"

namespace aj {

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const DTypeInfo &x = dtype_info(a), &y = dtype_info(b);
  if (x.category == DTypeCategory::Bool) return b;
  if (y.category == DTypeCategory::Bool) return a;
  // An integer meets a float: f64, as NumPy (an i32 or i64 fits no narrower float).
  if (x.category != y.category) return DType::f64;
  if (x.rank != y.rank) return x.rank > y.rank ? a : b;
  // Two formats of one rank (f16, bf16): the category's type of the next rank.
  for (DType t : kAllDTypes) {
    if (dtype_info(t).category == x.category && dtype_info(t).rank == x.rank + 1) return t;
  }
  internal_error(std::string("promote_types: nothing above ") + dtype_name(a) + " and " + dtype_name(b));
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (auto d : dims_) n *= d;
  return n;
}

std::string Shape::str() const {
  std::string s = "[";
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

std::string Device::str() const {
  switch (kind) {
    case Kind::cpu: return "cpu";
    case Kind::cuda: return "cuda:" + std::to_string(index);
  }
  return "device kind " + std::to_string(static_cast<int>(kind)) + ":" + std::to_string(index);
}

std::string loc_str(const Loc& loc) {
  std::string f = loc.file_name();
  auto slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  return f + ":" + std::to_string(loc.line());
}

void user_error(const char* op, const std::string& msg, const Loc& loc) {
  throw Error(Error::Kind::user, std::string("aj::") + op + ": " + msg + " (at " + loc_str(loc) + ")");
}

void internal_error(const std::string& msg) {
  throw Error(Error::Kind::internal,
              "aj internal error (a bug in arrayjit, please report it): " + msg);
}

void runtime_error(const std::string& msg) { throw Error(Error::Kind::runtime, msg); }

void detail::out_of_memory(const char* op, const Loc& loc) {
  // Unwinding has already given back what the op took: every array made
  // before it is unchanged and usable (the graph holds nothing half-made).
  throw Error(Error::Kind::runtime, std::string("aj::") + op +
                                        ": out of memory (the system refused an allocation); arrays "
                                        "made before are unchanged (at " + loc_str(loc) + ")");
}

}  // namespace aj
