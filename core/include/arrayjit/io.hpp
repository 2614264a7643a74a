// Saving and loading arrays: NumPy's .npy and .npz, and safetensors.
//
//   aj::save("w.npy", w);                    Array w = aj::load("w.npy");
//   aj::savez("ckpt.npz", {{"w", w}, {"b", b}});   auto m = aj::load_npz("ckpt.npz");
//   aj::save_safetensors("m.safetensors", {{"w", w}});  auto t = aj::load_safetensors("m.safetensors");
//
// Loading maps the file into memory (mmap, read-only) and returns arrays
// that borrow it: nothing is read or copied until a value is needed, and the
// mapping lives as long as any array (or view of one) uses it. Data that
// cannot be borrowed as it lies is copied once: big-endian .npy data
// (byte-swapped), elements not aligned to their size (a .npz written by
// another tool may place them anywhere), bool bytes other than 0 and 1, and
// deflated .npz members (inflated once into memory the arrays then borrow).
// A borrowed array is never written in place (its first update makes a new
// buffer). Keep a loaded file as it is while arrays use it: truncating it
// underneath them is SIGBUS, as with any mapping (aj::save over the same path
// is safe: it writes a new file and renames it into place).
//
// Saving evaluates the arrays (together) and writes their buffers as they
// lie, without a copy, when they are row-major (or column-major: a .npy in
// Fortran order); other views are gathered into one contiguous copy first.
//
// Files are little-endian; .npy headers of versions 1.0, 2.0 and 3.0 are
// read, Fortran order and big-endian included; .npz archives stored or
// deflated, Zip64 included (written when a member or the archive reaches 4
// GiB). Types: bool, i32, i64, f16, f32, f64 in all three formats, bf16 in
// safetensors (NumPy has no bf16). Reading a type arrayjit has no dtype for
// (uint8, int16, complex, objects ...) is an error naming it. Every error
// (missing file, bad magic, truncated data, a header that does not parse or
// lies about sizes, safetensors offsets past the end, overlapping or leaving
// gaps, a shape whose byte size overflows) is an aj::Error naming the file and
// what is wrong; nothing is read outside the file, and nothing is created or
// changed by a failed load. A failed save leaves no partial file behind (it
// writes a temporary beside the path and renames it into place).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// One array as .npy (format 1.0, or 2.0 for a header over 64 KiB).
void save(const std::string& path, const Array& a, Loc loc = Loc::current());
Array load(const std::string& path, Loc loc = Loc::current());

// Named arrays as .npz (a zip of NAME.npy members, in the order given):
// stored (savez) or deflated with zlib (savez_compressed), as NumPy's
// functions of those names write them.
void savez(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays,
           Loc loc = Loc::current());
void savez_compressed(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays,
                      Loc loc = Loc::current());
// Every member of an .npz, by name (".npy" dropped). Stored members are read
// once for their CRC-32 (checked) and then borrowed from the mapping.
std::map<std::string, Array> load_npz(const std::string& path, Loc loc = Loc::current());

// Named arrays as safetensors (a JSON header, then the data, packed in the
// order given), with optional string metadata (the "__metadata__" entry).
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays,
                      const std::map<std::string, std::string>& metadata = {}, Loc loc = Loc::current());
std::map<std::string, Array> load_safetensors(const std::string& path, Loc loc = Loc::current());
// The metadata of a safetensors file (empty when it has none).
std::map<std::string, std::string> safetensors_metadata(const std::string& path, Loc loc = Loc::current());

namespace detail {
// The size at which .npz writing switches to Zip64 fields (4 GiB - 1; tests
// lower it to exercise Zip64 on small files). Returns the previous value.
std::uint64_t set_zip64_limit(std::uint64_t bytes);
}  // namespace detail

}  // namespace aj
