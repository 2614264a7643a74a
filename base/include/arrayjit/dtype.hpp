// DType, Shape, Device: the small value types every other header uses.
// The dtypes and their facts come from arrayjit/dtypes.def.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "arrayjit/dtypes.def"
#include "arrayjit/half.hpp"

namespace aj {

// Element types, one per row of arrayjit/dtypes.def. Promotion follows NumPy
// for array-array pairs (promote_types) and treats C++ scalars as "weak"
// (see docs/semantics.md).
enum class DType : std::uint8_t {
#define AJ_DTYPE_ENUM(e, name, bytes, cpp, cuda, kind, digits, fmt) e,
  AJ_DTYPES(AJ_DTYPE_ENUM)
#undef AJ_DTYPE_ENUM
};

// What kind of values a dtype holds (dtypes.def's Kind column). Code that
// treats kinds differently switches over it with no `default:`, so a new
// kind is a compile error wherever it needs a decision (-Werror=switch); a
// new dtype of a known kind needs none.
enum class DTypeKind : std::uint8_t { Bool, Unsigned, Signed, Float };

struct DTypeInfo {
  const char* id;        // the enumerator, "bool_" (names generated code uses)
  const char* name;      // "bool", "i32", ...
  std::size_t itemsize;  // bytes per element (bool is one byte)
  DTypeKind kind;
  int digits;            // numeric_limits<T>::digits: value bits of an integer, significand bits of a float
  const char* cuda_type; // what generated CUDA C stores
  const char* format;    // PEP 3118 buffer format ("" where there is none)
};

inline constexpr DTypeInfo kDTypeInfo[] = {
#define AJ_DTYPE_INFO(e, name, bytes, cpp, cuda, kind, digits, fmt) {#e, name, bytes, DTypeKind::kind, digits, cuda, fmt},
    AJ_DTYPES(AJ_DTYPE_INFO)
#undef AJ_DTYPE_INFO
};
inline constexpr int kNumDTypes = sizeof(kDTypeInfo) / sizeof(kDTypeInfo[0]);
inline constexpr DType kAllDTypes[] = {
#define AJ_DTYPE_LIST(e, name, bytes, cpp, cuda, kind, digits, fmt) DType::e,
    AJ_DTYPES(AJ_DTYPE_LIST)
#undef AJ_DTYPE_LIST
};

constexpr const DTypeInfo& dtype_info(DType t) { return kDTypeInfo[static_cast<int>(t)]; }
constexpr const char* dtype_name(DType t) { return dtype_info(t).name; }
constexpr std::size_t itemsize(DType t) { return dtype_info(t).itemsize; }
constexpr DTypeKind dtype_kind(DType t) { return dtype_info(t).kind; }
constexpr bool is_float(DType t) { return dtype_kind(t) == DTypeKind::Float; }
// Signed or unsigned; where the two differ, switch over dtype_kind.
constexpr bool is_integer(DType t) {
  return dtype_kind(t) == DTypeKind::Signed || dtype_kind(t) == DTypeKind::Unsigned;
}
// f16 and bf16: stored as 16 bits, computed in f32.
constexpr bool is_half(DType t) { return is_float(t) && dtype_info(t).itemsize == 2; }

// ---- which dtype holds which: casting and promotion ----------------------------------------
// How values of one kind fit into another (kCastRule[from kind][to kind],
// the rule of each cell):
enum class CastRule : std::uint8_t {
  never,   // some value has no equal there (-1 in unsigned, 0.5 in an integer)
  always,  // bool's 0 and 1 are in every kind
  digits,  // when the target has at least as many digits (u8 fits i16, not i8)
  floats,  // digits, and at least as many exponent bits (8 * bytes - digits): f16 and
           // bf16 do not fit each other, both fit f32
};
inline constexpr CastRule kCastRule[4][4] = {
    //   to: Bool              Unsigned          Signed            Float               from:
    {CastRule::always, CastRule::always, CastRule::always, CastRule::always},  // Bool
    {CastRule::never,  CastRule::digits, CastRule::digits, CastRule::digits},  // Unsigned
    {CastRule::never,  CastRule::never,  CastRule::digits, CastRule::digits},  // Signed
    {CastRule::never,  CastRule::never,  CastRule::never,  CastRule::floats},  // Float
};
// Every value of `from` is a value of `to` (i32 -> f64, u8 -> i16, f16 -> f32).
constexpr bool casts_exactly(DType from, DType to) {
  const DTypeInfo &f = dtype_info(from), &t = dtype_info(to);
  switch (kCastRule[static_cast<int>(f.kind)][static_cast<int>(t.kind)]) {
    case CastRule::never: return false;
    case CastRule::always: return true;
    case CastRule::digits: return t.digits >= f.digits;
    case CastRule::floats:
      return t.digits >= f.digits &&
             8 * static_cast<int>(t.itemsize) - t.digits >= 8 * static_cast<int>(f.itemsize) - f.digits;
  }
  return false;
}
// NumPy's safe casts (np.can_cast(from, to, "safe")): the exact ones, and
// NumPy's one exception: a 64-bit integer to a float of 8 bytes or more
// (i64 -> f64, which holds 53 of its bits), so that every integer meets
// every float somewhere.
constexpr bool casts_safely(DType from, DType to) {
  return casts_exactly(from, to) || (is_integer(from) && itemsize(from) == 8 && is_float(to) && itemsize(to) >= 8);
}
// NumPy's promotion of two array dtypes (np.promote_types): the dtype both
// cast to safely with the fewest bytes, then the first kind in DTypeKind's
// order: bool with anything the other, u8 with i8 i16, u8 with f32 f32, i32
// with f32 f64 (no float of 4 bytes holds an i32), i64 with f16 f64, f16 with
// bf16 f32. A lookup in a table computed from the dtype table at compile
// time (base/types.cpp, which checks that every pair has one answer).
DType promote_types(DType a, DType b);

template <class T> struct dtype_of_t;
#define AJ_DTYPE_OF(e, name, bytes, cpp, cuda, kind, digits, fmt) \
  template <> struct dtype_of_t<cpp> { static constexpr DType value = DType::e; };
AJ_DTYPES(AJ_DTYPE_OF)
#undef AJ_DTYPE_OF
template <class T> inline constexpr DType dtype_of = dtype_of_t<T>::value;

// Row-major extents. Element counts are checked for int64 overflow where
// shapes are made by ops (trace time), not here.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  int ndim() const { return static_cast<int>(dims_.size()); }
  std::int64_t numel() const;  // product of extents (1 for rank 0)
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) { return dims_[static_cast<std::size_t>(i)]; }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }
  std::string str() const;  // "[3, 4]"

 private:
  std::vector<std::int64_t> dims_;
};

// Where an array's buffer lives. Code that decides on a kind asks one of the
// two questions below or switches on `kind` with no `default:`, never tests
// `kind == ...`: a new Kind is then a compile error (the library builds with
// -Werror=switch) at each place that must answer for it (docs/architecture.md,
// "A backend", lists them), and none sends it down the host's path unasked.
struct Device {
  enum class Kind : std::uint8_t { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;

  static Device cpu() { return {Kind::cpu, 0}; }
  static Device cuda(int index = 0) { return {Kind::cuda, index}; }
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu", "cuda:0"

  // The host itself: the host backend's memory, what Backend::to_host returns
  // and Backend::from_host copies from. A host array is an input of any
  // device (staged), a result there needs no copy back, and the printed form
  // names no device. Every other kind is reached through its backend.
  constexpr bool is_host() const {
    switch (kind) {
      case Kind::cpu: return true;
      case Kind::cuda: return false;
    }
    return false;
  }
  // Memory the host reads through its pointer as it is, with nothing to
  // copy and no stream to wait for: read-outs (to_vector, copy_to, printing,
  // the C read-out, Eigen) use it directly, and read any other memory
  // through a host copy (Backend::to_host). A kind that is not the host
  // backend's but that the host reads directly (coherent unified memory,
  // say) answers false in is_host and true here.
  constexpr bool host_addressable() const {
    switch (kind) {
      case Kind::cpu: return true;
      case Kind::cuda: return false;
    }
    return false;
  }
};

}  // namespace aj
