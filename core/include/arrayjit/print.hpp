// Print options, as NumPy's np.set_printoptions, and the NumPy text of an array.
//
//   std::cout << a;               // array([0.1, 2. ], dtype=f32, shape=[2])   (NumPy's repr)
//   aj::array2string(a)           // "[0.1 2. ]"                               (NumPy's print(a))
//
//   aj::PrintOptions o = aj::printoptions();  // change one option, keep the others
//   o.precision = 3;
//   aj::set_printoptions(o);
//
//   { aj::ScopedPrintOptions p({.linewidth = 120}); std::cout << a; }  // as np.printoptions(...)
//
// The options are process-wide, as NumPy's; any thread may print or set them.
// core/api/print.cpp describes the format.
#pragma once

#include <cstdint>
#include <string>

#include "arrayjit/error.hpp"

namespace aj {

class Array;

struct PrintOptions {
  int precision = 8;               // at most this many digits after the point (or after the
                                   // first digit in scientific notation); fewer when the
                                   // shortest text that round-trips is shorter
  std::int64_t threshold = 1000;   // arrays of more elements are summarized with "..."
  int edgeitems = 3;               // items kept at each end of a summarized axis
  int linewidth = 75;              // characters per line before wrapping
  bool suppress = false;           // true: never scientific below 1e8; tiny values print as 0.
};

// Replaces every option; throws an aj::Error on a negative precision, threshold or
// edgeitems, or a linewidth below 1.
void set_printoptions(const PrintOptions& options, Loc loc = Loc::current());
PrintOptions printoptions();

// Sets options for one scope and restores the previous ones when it ends.
class ScopedPrintOptions {
 public:
  explicit ScopedPrintOptions(const PrintOptions& options, Loc loc = Loc::current());
  ~ScopedPrintOptions();
  ScopedPrintOptions(const ScopedPrintOptions&) = delete;
  ScopedPrintOptions& operator=(const ScopedPrintOptions&) = delete;

 private:
  PrintOptions saved_;
};

// The values as np.array2string(a) writes them (what NumPy's print(a) shows);
// evaluates `a`. operator<< (array.hpp) writes NumPy's repr with dtype and shape.
std::string array2string(const Array& a, Loc loc = Loc::current());

}  // namespace aj
