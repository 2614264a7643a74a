// Sorting networks in AVX-512 registers for the host sort's lines of
// moderate length (host_sort.cpp): a bitonic network, 16 lanes of 4-byte
// elements or 8 of 8-byte ones, its compare-exchanges the minimum/maximum
// instructions and its exchanges within a register lane permutes, so a line
// of 1,024 elements is sorted with no branch on the data. NumPy (its
// x86-simd-sort) uses the same idea; the network here is the plain one,
// written for this library.
//
// The host sort's order (stable; NaN last; -0.0 equal to +0.0) is kept by
// what is sorted: the values themselves where equal values are equal bits
// (integers; floats without NaN or -0.0), so that which of two equal ones
// comes first cannot be seen; else (key << 32 | position) words, whose
// integer order is the stable order. The caller pads to network_size(n)
// with a value that sorts last (the largest; all-ones words, above every
// real word since a real position is below 2^32 - 1) and reads the first n.
//
// On a CPU without AVX-512 (or a level capped below it by AJ_CPU_LEVEL) there
// is no network: network_lanes() is 0 and the callers keep their other sorts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aj::cpu {

// The number of keys of `key_bytes` (4 or 8) in one vector register of the
// network at this CPU's level: 16 or 8 with AVX-512, 0 where there is none.
std::size_t network_lanes(std::size_t key_bytes);

// The padded length the network sorts for n keys: the power of two at or
// above n, at least one register.
std::size_t network_size(std::size_t n, std::size_t key_bytes);

// Sorts a[0, size) ascending in E's order (E one of u32, i32, f32, u64,
// i64, f64; floats without NaN); size is network_size(n, sizeof(E)) (a power
// of two, a multiple of the lanes). Only where network_lanes(sizeof(E)) is
// not 0. Equal elements may change places: the callers send elements whose
// equal ones are equal bits, or (key, position) words.
template <class E>
void network_sort(E* a, std::size_t size);

// Copies a line of n elements `stride` apart into a and pads it to `size`
// with the largest value (+inf for floats); false where the line holds a NaN
// or a -0.0 (then it cannot be sorted as it is; a is left unspecified).
template <class E>
bool network_load(const E* x, std::int64_t stride, std::size_t n, E* a, std::size_t size);

}  // namespace aj::cpu
