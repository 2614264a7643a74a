// Storage: memory that holds array elements, on some device. Freed (returned
// to its allocator through `release`) when the last shared_ptr drops.
// Borrowed storage belongs to the caller: never freed, never written, unless
// the caller lent it (aj::lend): then a donation may write it in place.
#pragma once

#include <cstddef>

#include "arrayjit/dtype.hpp"

namespace aj {

struct Storage {
  void* data = nullptr;
  std::size_t bytes = 0;
  Device device = Device::cpu();
  bool borrowed = false;  // caller's memory: never freed, never written ...
  bool lent = false;      // ... but for this: memory the caller lets arrayjit overwrite (aj::lend)
  void (*release)(Storage&) = nullptr;
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  // No kernel output may be written into it (borrowed and not lent): every
  // donation and in-place decision asks this.
  bool read_only() const { return borrowed && !lent; }
  ~Storage() {
    if (release) release(*this);
  }
};

}  // namespace aj
