// DType, Shape, Device and error helpers.
#include <string>

#include "arrayjit/array.hpp"
#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"

namespace aj {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::bool_: return "bool";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
  }
  return "?";
}

std::size_t itemsize(DType t) {
  switch (t) {
    case DType::bool_: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::f32: return 4;
    case DType::f64: return 8;
  }
  return 0;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::bool_) return b;
  if (b == DType::bool_) return a;
  if (is_integer(a) && is_integer(b)) return DType::i64;  // i32 with i64
  if (is_float(a) && is_float(b)) return DType::f64;      // f32 with f64
  // An integer meets a float: NumPy gives f64 (an i32 or i64 does not fit f32 exactly).
  return DType::f64;
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
  return kind == Kind::cpu ? std::string("cpu") : "cuda:" + std::to_string(index);
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
