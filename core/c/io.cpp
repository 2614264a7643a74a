// The C API's files (arrayjit/arrayjit.h, "files"): the functions of
// arrayjit/io.hpp with C lists of names and arrays in, and the named-arrays
// convention out (arrays and NUL-ended names, sized by a first call).
#include <cstring>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "arrayjit/arrayjit.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {

namespace {

std::string path_arg(const char* path) {
  if (!path) c_error("null path");
  if (!*path) c_error("an empty path");
  return path;
}

std::vector<std::pair<std::string, Array>> named_arg(const char* const* names, const aj_array* arrays, std::size_t n) {
  if (n > 0 && !names) c_error("null names with n " + std::to_string(n));
  const std::vector<Array> xs = arrays_arg(arrays, n);
  std::vector<std::pair<std::string, Array>> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (!names[i]) c_error("names[" + std::to_string(i) + "] is null");
    out.emplace_back(names[i], xs[i]);
  }
  return out;
}

// The named-arrays convention out (arrayjit.h, "files").
aj_status give_named(const char* fn, const std::function<std::map<std::string, Array>()>& load, aj_array* arrays, std::size_t cap,
                     std::size_t* count, char* names, std::size_t names_cap, std::size_t* names_len) {
  if (arrays) {
    for (std::size_t i = 0; i < cap; ++i) arrays[i] = aj_array{0};
  }
  return c_call(fn, [&] {
    if (!count || !names_len) c_error("null count or names_len");
    const std::map<std::string, Array> m = load();
    std::size_t bytes = 0;
    for (const auto& [name, a] : m) bytes += name.size() + 1;
    *count = m.size();
    *names_len = bytes;
    if (!arrays) return;
    if (cap < m.size() || names_cap < bytes) {
      c_error("room for " + std::to_string(cap) + " arrays and " + std::to_string(names_cap) + " name bytes; the file has " +
              std::to_string(m.size()) + " arrays and " + std::to_string(bytes) + " name bytes");
    }
    if (bytes > 0 && !names) c_error("null names with names_cap " + std::to_string(names_cap));
    std::unique_ptr<Reservation[]> slots(new Reservation[m.size()]);
    std::size_t i = 0, at = 0;
    for (const auto& [name, a] : m) {
      std::memcpy(names + at, name.c_str(), name.size() + 1);
      at += name.size() + 1;
      arrays[i] = slots[i].fill(a);
      ++i;
    }
  });
}

}  // namespace

}  // namespace aj::c_api

using namespace aj::c_api;

aj_status aj_save(const char* path, aj_array a) {
  return c_call("aj_save", [&] { aj::save(path_arg(path), arg(a, "a")); });
}
aj_status aj_load(const char* path, aj_array* out) {
  return c_make("aj_load", out, [&] { return aj::load(path_arg(path)); });
}
aj_status aj_savez(const char* path, const char* const* names, const aj_array* arrays, size_t n) {
  return c_call("aj_savez", [&] { aj::savez(path_arg(path), named_arg(names, arrays, n)); });
}
aj_status aj_savez_compressed(const char* path, const char* const* names, const aj_array* arrays, size_t n) {
  return c_call("aj_savez_compressed", [&] { aj::savez_compressed(path_arg(path), named_arg(names, arrays, n)); });
}
aj_status aj_load_npz(const char* path, aj_array* arrays, size_t cap, size_t* count, char* names, size_t names_cap,
                      size_t* names_len) {
  return give_named("aj_load_npz", [&] { return aj::load_npz(path_arg(path)); }, arrays, cap, count, names, names_cap, names_len);
}
aj_status aj_save_safetensors(const char* path, const char* const* names, const aj_array* arrays, size_t n,
                              const char* const* keys, const char* const* values, size_t n_metadata) {
  return c_call("aj_save_safetensors", [&] {
    if (n_metadata > 0 && (!keys || !values)) c_error("null metadata keys or values with n_metadata " + std::to_string(n_metadata));
    std::map<std::string, std::string> meta;
    for (std::size_t i = 0; i < n_metadata; ++i) {
      if (!keys[i] || !values[i]) c_error("metadata entry " + std::to_string(i) + " is null");
      if (!meta.emplace(keys[i], values[i]).second) c_error(std::string("the metadata key '") + keys[i] + "' twice");
    }
    aj::save_safetensors(path_arg(path), named_arg(names, arrays, n), meta);
  });
}
aj_status aj_load_safetensors(const char* path, aj_array* arrays, size_t cap, size_t* count, char* names, size_t names_cap,
                              size_t* names_len) {
  return give_named("aj_load_safetensors", [&] { return aj::load_safetensors(path_arg(path)); }, arrays, cap, count, names,
                    names_cap, names_len);
}
aj_status aj_safetensors_metadata(const char* path, char* buf, size_t cap, size_t* len) {
  return c_call("aj_safetensors_metadata", [&] {
    std::string text;
    for (const auto& [k, v] : aj::safetensors_metadata(path_arg(path))) {
      text += k;
      text.push_back('\0');
      text += v;
      text.push_back('\0');
    }
    give_text(text, buf, cap, len);
  });
}
