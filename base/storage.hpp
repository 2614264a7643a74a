// Storage: memory that holds array elements, on some device. Freed (returned
// to its allocator through `release`) when the last shared_ptr drops.
// Borrowed storage belongs to the caller: never freed, never written.
#pragma once

#include <cstddef>

#include "arrayjit/dtype.hpp"

namespace aj {

struct Storage {
  void* data = nullptr;
  std::size_t bytes = 0;
  Device device = Device::cpu();
  bool borrowed = false;  // caller's memory: never freed, never written
  void (*release)(Storage&) = nullptr;
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (release) release(*this);
  }
};

}  // namespace aj
