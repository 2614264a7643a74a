// The C API's handle table (arrayjit/arrayjit.h, "Handles"), in the spirit of
// HPy's handles: an aj_array or aj_function is a 64-bit id, (generation << 32)
// | slot, never a pointer into arrayjit.
//
// Invariants:
//  - A slot holds at most one live handle; its generation is bumped when that
//    handle is released, so every copy of the released id stops matching.
//    Generations start at 1 and skip 0, so the id 0 is never live (the null
//    handle).
//  - Freed slots are reused oldest first (a FIFO), which spreads generation
//    bumps over all free slots: a stale id aliases a live one only after 2^32
//    reuses of its slot.
//  - A slot owns exactly what its handle keeps alive (one aj::Array reference,
//    or one reference to a function); releasing the handle drops it at once,
//    so a buffer goes back to the pool in that call, never in a later sweep.
//  - One mutex guards the table. Lookups copy the slot's content out under it,
//    and whatever a release drops is destroyed after the lock is let go: a
//    release callback that runs then may call the C API again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "arrayjit/array.hpp"
#include "arrayjit/arrayjit.h"
#include "arrayjit/error.hpp"

namespace aj::c_api {

// An error with its own C status (c_call returns it as is).
struct StatusError : Error {
  StatusError(aj_status s, const std::string& what) : Error(Kind::user, what), status(s) {}
  aj_status status;
};

// A bad handle (null, released, stale, made up, wrong kind): AJ_ERROR_HANDLE.
struct HandleError : StatusError {
  explicit HandleError(const std::string& what) : StatusError(AJ_ERROR_HANDLE, what) {}
};

// What an aj_array handle stands for: an array, which may be a weak scalar
// (arrayjit.h, aj_scalar_f64): `array` is then its rank-0 f64/i64/bool form,
// used where an array is needed, and `scalar` its value for elementwise ops.
struct ArrayRef {
  Array array;
  bool weak = false;
  Scalar scalar;

  // The elementwise operand this handle is: the array, or the weak scalar.
  Operand operand() const;
};

class Function;  // core/c/function.cpp

// A slot taken for a handle about to be made: taking it is what may fail
// (out of memory), so the array is made after it and handing it over cannot
// fail (an import's release callback must not run for a failed call). An
// unfilled reservation gives its slot back.
class Reservation {
 public:
  Reservation();
  ~Reservation();
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  aj_array fill(ArrayRef a) noexcept;
  aj_array fill(Array a) noexcept { return fill(ArrayRef{std::move(a), false, {}}); }

 private:
  std::uint32_t index_;
  bool filled_ = false;
};

inline aj_array new_array(ArrayRef a) { return Reservation().fill(std::move(a)); }
inline aj_array new_array(Array a) { return Reservation().fill(std::move(a)); }
// A copy of what `h` stands for; throws HandleError naming `what` (e.g.
// "argument x") when h is not a live aj_array.
ArrayRef get_array(aj_array h, const char* what);
// Release `h`; throws HandleError when it is not live.
void release_array(aj_array h);

aj_function new_function(std::shared_ptr<Function> f);
std::shared_ptr<Function> get_function(aj_function h, const char* what);
void release_function(aj_function h);

std::size_t live_handles();

// Handles made on this thread while a recorder is installed are listed in it
// (a traced function's callback: those it does not return are released when
// it returns). Installing returns the previous recorder, to put back.
std::vector<aj_array>* record_new_arrays(std::vector<aj_array>* recorder);
// Whether `h` is a live aj_array now (no throw).
bool is_live(aj_array h);

}  // namespace aj::c_api
