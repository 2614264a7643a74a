// DType, Shape, Device and error helpers.
#include <string>

#include "arrayjit/dtype.hpp"
#include "arrayjit/error.hpp"

namespace aj {

namespace {

// Promotion's order among the dtypes both operands cast to safely: fewer
// bytes first, then DTypeKind's order (bool, unsigned, signed, float), as
// NumPy ("the smallest size and smallest scalar kind").
constexpr bool smaller(DType x, DType y) {
  if (itemsize(x) != itemsize(y)) return itemsize(x) < itemsize(y);
  return dtype_kind(x) < dtype_kind(y);
}

// The least dtype a and b both cast to safely; kNoDType when there is none,
// kTwoDTypes when two are least (two formats of one size and kind, as f16
// and bf16 are: then a dtype above both is missing from the table).
constexpr int kNoDType = -1, kTwoDTypes = -2;
constexpr int least_common(DType a, DType b) {
  int best = kNoDType;
  bool tie = false;
  for (DType c : kAllDTypes) {
    if (!casts_safely(a, c) || !casts_safely(b, c)) continue;
    if (best == kNoDType || smaller(c, static_cast<DType>(best))) {
      best = static_cast<int>(c);
      tie = false;
    } else if (!smaller(static_cast<DType>(best), c)) {
      tie = true;
    }
  }
  return tie ? kTwoDTypes : best;
}

struct PromotionTable {
  int to[kNumDTypes][kNumDTypes];
};
constexpr PromotionTable make_promotion_table() {
  PromotionTable p{};
  for (DType a : kAllDTypes) {
    for (DType b : kAllDTypes) p.to[static_cast<int>(a)][static_cast<int>(b)] = least_common(a, b);
  }
  return p;
}
constexpr PromotionTable kPromotion = make_promotion_table();

// A new row must leave every pair one answer, and bool the identity.
constexpr bool every_pair_promotes() {
  for (DType a : kAllDTypes) {
    for (DType b : kAllDTypes) {
      if (kPromotion.to[static_cast<int>(a)][static_cast<int>(b)] < 0) return false;
    }
  }
  return true;
}
static_assert(every_pair_promotes(),
              "dtypes.def: two dtypes have no least common dtype (none holds both, or two do: "
              "add the dtype above them, as f32 is above f16 and bf16)");
constexpr bool bool_promotes_to_the_other() {
  for (DType a : kAllDTypes) {
    if (kPromotion.to[static_cast<int>(DType::bool_)][static_cast<int>(a)] != static_cast<int>(a)) return false;
  }
  return true;
}
static_assert(bool_promotes_to_the_other(), "dtypes.def: bool with any dtype must promote to that dtype");

}  // namespace

DType promote_types(DType a, DType b) {
  return static_cast<DType>(kPromotion.to[static_cast<int>(a)][static_cast<int>(b)]);
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

void detail::rethrow_out_of_memory(const OutOfMemory& e, const char* op, const Loc& loc) {
  throw Error(Error::Kind::runtime, std::string("aj::") + op + ": " + e.reason() +
                                        "; arrays made before are unchanged (at " + loc_str(loc) + ")");
}

}  // namespace aj
