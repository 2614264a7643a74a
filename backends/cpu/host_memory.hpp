// Host buffers. Every buffer an array holds on the CPU comes from here, so the
// counters in aj::stats() see every allocation. (The caching allocator of the
// optimizer issue replaces the body of host_alloc; callers stay as they are.)
#pragma once

#include <cstddef>
#include <memory>

#include "graph/graph.hpp"

namespace aj::cpu {

inline constexpr std::size_t kAlignment = 64;

// A new buffer of `bytes` bytes, 64-byte aligned. Throws aj::Error (runtime)
// when the system has no memory left.
std::shared_ptr<Storage> host_alloc(std::size_t bytes);
// Caller memory, never freed or written by arrayjit.
std::shared_ptr<Storage> host_borrow(void* ptr, std::size_t bytes);

}  // namespace aj::cpu
