// Eigen <-> arrayjit without copies. Optional: include it only where Eigen is
// available (arrayjit itself does not make Eigen a dependency of its users).
//
//   Eigen::MatrixXf m = ...;
//   aj::Array a = aj::from_eigen(m);              // borrows m (and keeps its strides)
//   aj::Array b = aj::from_eigen(m.block(1, 2, 3, 4));
//   aj::ArrayData d = (a * 2).data();             // evaluated, row-major
//   auto r = aj::to_eigen_row_major<float>(d);    // Eigen::Map over d's buffer
//
// from_eigen borrows like aj::borrow: the caller keeps the Eigen object alive
// and unchanged while arrays use it; arrayjit never writes it. A map from
// to_eigen* is read-only and valid while the ArrayData it was made from lives.
#pragma once

#include <Eigen/Core>
#include <string>

#include "arrayjit/array.hpp"

namespace aj {

// A borrowed array over any Eigen object with direct access to its
// coefficients (Matrix, Array, Map, Block, Ref): vectors become 1-d, the
// rest rows x cols with the object's own inner and outer strides.
template <class Derived>
Array from_eigen(const Eigen::DenseBase<Derived>& m, Loc loc = Loc::current()) {
  static_assert(int(Derived::Flags) & Eigen::DirectAccessBit,
                "aj::from_eigen needs an Eigen object with direct access (evaluate the expression first)");
  using T = typename Derived::Scalar;
  const Derived& d = m.derived();
  const std::int64_t inner = d.innerStride(), outer = d.outerStride();
  if constexpr (Derived::IsVectorAtCompileTime) {
    return borrow<const T>(d.data(), Shape{d.size()}, {inner}, loc);
  } else if constexpr (Derived::IsRowMajor) {
    return borrow<const T>(d.data(), Shape{d.rows(), d.cols()}, {outer, inner}, loc);
  } else {
    return borrow<const T>(d.data(), Shape{d.rows(), d.cols()}, {inner, outer}, loc);
  }
}

template <class T>
using EigenMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>,
                            Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
template <class T>
using EigenRowMajorMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                                    Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;

namespace eigen_detail {
// rows, cols and their strides (elements) of a 1-d (a column) or 2-d host array.
template <class T>
void check(const ArrayData& d, const char* op, std::int64_t* rows, std::int64_t* cols, std::int64_t* rs,
           std::int64_t* cs) {
  auto fail = [&](const std::string& why) {
    throw Error(Error::Kind::user, std::string("aj::") + op + ": " + why);
  };
  if (dtype_of<T> != d.dtype) fail(std::string("the array is ") + dtype_name(d.dtype) + ", not " + dtype_name(dtype_of<T>));
  if (!d.device.host_addressable()) fail("the array is on " + d.device.str() + "; Eigen reads host memory");
  if (d.shape.ndim() == 1) {
    *rows = d.shape[0], *cols = 1, *rs = d.strides[0], *cs = d.shape[0] * d.strides[0];
  } else if (d.shape.ndim() == 2) {
    *rows = d.shape[0], *cols = d.shape[1], *rs = d.strides[0], *cs = d.strides[1];
  } else {
    fail("an Eigen matrix is 1-d or 2-d, the array has shape " + d.shape.str());
  }
  if (*rs < 0 || *cs < 0) fail("Eigen maps need non-negative strides (a reversed slice): copy it first");
}
}  // namespace eigen_detail

// Column-major map (inner stride = the row stride): Eigen's fast paths when
// the array is column-major (e.g. a transpose of an arrayjit result).
template <class T>
EigenMap<T> to_eigen(const ArrayData& d) {
  std::int64_t rows, cols, rs, cs;
  eigen_detail::check<T>(d, "to_eigen", &rows, &cols, &rs, &cs);
  return EigenMap<T>(static_cast<const T*>(d.ptr), rows, cols, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(cs, rs));
}

// Row-major map (inner stride = the column stride): Eigen's fast paths for
// arrayjit's own results, which are row-major.
template <class T>
EigenRowMajorMap<T> to_eigen_row_major(const ArrayData& d) {
  std::int64_t rows, cols, rs, cs;
  eigen_detail::check<T>(d, "to_eigen_row_major", &rows, &cols, &rs, &cs);
  return EigenRowMajorMap<T>(static_cast<const T*>(d.ptr), rows, cols,
                             Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(rs, cs));
}

}  // namespace aj
