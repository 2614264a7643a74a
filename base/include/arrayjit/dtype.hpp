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
#define AJ_DTYPE_ENUM(e, name, bytes, cpp, cuda, cat, rank, fmt) e,
  AJ_DTYPES(AJ_DTYPE_ENUM)
#undef AJ_DTYPE_ENUM
};

enum class DTypeCategory : std::uint8_t { Bool, Int, Float };

struct DTypeInfo {
  const char* id;        // the enumerator, "bool_" (names generated code uses)
  const char* name;      // "bool", "i32", ...
  std::size_t itemsize;  // bytes per element (bool is one byte)
  DTypeCategory category;
  int rank;              // promotion order within the category
  const char* cuda_type; // what generated CUDA C stores
  const char* format;    // PEP 3118 buffer format ("" where there is none)
};

inline constexpr DTypeInfo kDTypeInfo[] = {
#define AJ_DTYPE_INFO(e, name, bytes, cpp, cuda, cat, rank, fmt) {#e, name, bytes, DTypeCategory::cat, rank, cuda, fmt},
    AJ_DTYPES(AJ_DTYPE_INFO)
#undef AJ_DTYPE_INFO
};
inline constexpr int kNumDTypes = sizeof(kDTypeInfo) / sizeof(kDTypeInfo[0]);
inline constexpr DType kAllDTypes[] = {
#define AJ_DTYPE_LIST(e, name, bytes, cpp, cuda, cat, rank, fmt) DType::e,
    AJ_DTYPES(AJ_DTYPE_LIST)
#undef AJ_DTYPE_LIST
};

constexpr const DTypeInfo& dtype_info(DType t) { return kDTypeInfo[static_cast<int>(t)]; }
constexpr const char* dtype_name(DType t) { return dtype_info(t).name; }
constexpr std::size_t itemsize(DType t) { return dtype_info(t).itemsize; }
constexpr bool is_float(DType t) { return dtype_info(t).category == DTypeCategory::Float; }
constexpr bool is_integer(DType t) { return dtype_info(t).category == DTypeCategory::Int; }
// f16 and bf16: stored as 16 bits, computed in f32.
constexpr bool is_half(DType t) { return is_float(t) && dtype_info(t).itemsize == 2; }
// NumPy's promotion of two array dtypes: within a category the higher rank
// (f16 with bf16: f32); bool with anything: the other; an integer with a
// float: f64 (NumPy's choice for i32 and i64, which no narrower float holds).
DType promote_types(DType a, DType b);

template <class T> struct dtype_of_t;
#define AJ_DTYPE_OF(e, name, bytes, cpp, cuda, cat, rank, fmt) \
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
