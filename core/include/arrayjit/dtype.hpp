// DType, Shape, Device: the small value types every other header uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace aj {

// Element types. Promotion follows NumPy for array-array pairs
// (bool < i32 < i64, f32 < f64; an integer meeting f32 gives f64, as NumPy),
// and treats C++ scalars as "weak" (see docs/semantics.md).
enum class DType : std::uint8_t { bool_, i32, i64, f32, f64 };

inline constexpr int kNumDTypes = 5;

const char* dtype_name(DType t);  // "bool", "i32", ...
std::size_t itemsize(DType t);    // bytes per element (bool is one byte)
constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }
constexpr bool is_integer(DType t) { return t == DType::i32 || t == DType::i64; }
// NumPy's promotion of two array dtypes.
DType promote_types(DType a, DType b);

template <class T> struct dtype_of_t;
template <> struct dtype_of_t<bool> { static constexpr DType value = DType::bool_; };
template <> struct dtype_of_t<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of_t<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of_t<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of_t<double> { static constexpr DType value = DType::f64; };
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

struct Device {
  enum class Kind : std::uint8_t { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;

  static Device cpu() { return {Kind::cpu, 0}; }
  static Device cuda(int index = 0) { return {Kind::cuda, index}; }
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu", "cuda:0"
};

}  // namespace aj
