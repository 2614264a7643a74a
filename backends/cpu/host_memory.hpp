// Host buffers. Every buffer an array holds on the CPU comes from here, so the
// counters in aj::stats() see every allocation.
//
// A caching allocator: requests are rounded up to a size class, and a buffer
// whose last reference drops (Storage::release) goes straight back to its
// class's free list, to be handed to the next request of that class (LIFO:
// the most recently freed block, still warm in cache). The public controls
// (trim_memory, set_memory_limit, ...) are in arrayjit/memory.hpp.
//
// Size classes: 64, 128, ..., 4096 bytes (powers of two), then four classes
// per power of two (1, 1.25, 1.5, 1.75 x 2^k), so a block wastes under 25%.
// Every block is at least 64-byte aligned; blocks of 1 MiB and more are
// mmap'ed (page aligned) and unmapped when released.
//
// Freed blocks are poisoned when NDEBUG is not defined or AJ_POISON=1
// (AJ_POISON=0 turns it off): the bytes the last owner could see are filled
// with 0xFF (NaN for floats, -1 for integers), so an array that still points
// at freed memory shows garbage instead of silently changing later. Under
// AddressSanitizer cached blocks are also poisoned for ASan, and the slack
// between a buffer's 64-byte-rounded size and its class size always is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/storage.hpp"

namespace aj::cpu {

inline constexpr std::size_t kAlignment = 64;

// A new buffer of `bytes` bytes, 64-byte aligned, from the cache when it has a
// block of the same size class. Throws aj::Error (runtime) when the system has
// no memory left even after the cache was released; nothing leaks then.
std::shared_ptr<Storage> host_alloc(std::size_t bytes);
// A buffer for `count` elements of `item` bytes. The product is checked here
// (tracing already keeps every array under 2^62 bytes; this is the second
// line): a negative count or one whose byte size would wrap is an aj::Error
// (runtime), never a short buffer.
std::shared_ptr<Storage> host_alloc(std::int64_t count, std::size_t item);
// Caller memory, never freed or written by arrayjit.
std::shared_ptr<Storage> host_borrow(void* ptr, std::size_t bytes);

// The size a request of `bytes` is rounded up to (its class's block size).
std::size_t host_size_class(std::size_t bytes);
// Whether freed blocks are filled with 0xFF (see above).
bool host_poisons_freed_blocks();

// The cache's controls (arrayjit/memory.hpp's trim_memory, set_memory_limit,
// memory_limit, cached_bytes).
void host_trim();
void set_host_cache_limit(std::size_t bytes);
std::size_t host_cache_limit();
std::size_t host_cached_bytes();

}  // namespace aj::cpu
