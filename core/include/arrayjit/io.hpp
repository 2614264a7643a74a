// Saving and loading arrays: NumPy's .npy and .npz, and safetensors.
//
//   aj::save("w.npy", w);                    Array w = aj::load("w.npy");
//   aj::savez("ckpt.npz", {{"w", w}, {"b", b}});   auto m = aj::load_npz("ckpt.npz");
//   aj::save_safetensors("m.safetensors", {{"w", w}});  auto t = aj::load_safetensors("m.safetensors");
//
// Files are little-endian and row-major; a .npy written by NumPy in Fortran
// order or big-endian is read right (transposed / byte-swapped). Types:
// bool, i32, i64, f16, f32, f64 in all three formats, bf16 in safetensors
// (NumPy has no bf16). Reading a type arrayjit has no dtype for (uint8, int16,
// complex, objects ...) is an error naming it. .npz members are stored
// uncompressed by savez; load_npz reads stored and deflated (savez_compressed)
// members. Every error (missing file, bad magic, truncated data, a header
// that does not parse) is an aj::Error naming the file; nothing is created
// or changed by a failed load, and a failed save leaves no partial file
// behind (it writes a temporary and renames it into place).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "arrayjit/array.hpp"

namespace aj {

// One array as .npy (format 1.0, or 2.0 for a header over 64 KiB).
void save(const std::string& path, const Array& a, Loc loc = Loc::current());
Array load(const std::string& path, Loc loc = Loc::current());

// Named arrays as .npz (a zip of NAME.npy members, in the order given).
void savez(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays,
           Loc loc = Loc::current());
std::map<std::string, Array> load_npz(const std::string& path, Loc loc = Loc::current());

// Named arrays as safetensors (a JSON header, then the data), with optional
// string metadata (the "__metadata__" entry).
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays,
                      const std::map<std::string, std::string>& metadata = {}, Loc loc = Loc::current());
std::map<std::string, Array> load_safetensors(const std::string& path, Loc loc = Loc::current());
// The metadata of a safetensors file (empty when it has none).
std::map<std::string, std::string> safetensors_metadata(const std::string& path, Loc loc = Loc::current());

}  // namespace aj
